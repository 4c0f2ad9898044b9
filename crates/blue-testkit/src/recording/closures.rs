//! The recording callbacks in the closure form: closures over the
//! [`CallbackInput`] map returning workflow outcome maps, synchronous (on
//! blocking threads) or asynchronous. What keeps that form's contract
//! covered: the options' keys, `blue/exit`, blocking threads.

use super::{Call, Callback, Ended, FakeInfra, Seen, PLANTED_SECRET};
use blue_kubernetes::package::{CallbackError, CallbackInput, WorkflowOutcome};
use blue_kubernetes::{Observation, Package, ResourceSchema};
use blue_kubernetes_client::ResourceDescriptor;
use serde_json::Value;

impl FakeInfra {
    /// The recording package in the closure form, with asynchronous
    /// callbacks.
    pub fn closure_package(&self, descriptor: ResourceDescriptor) -> Package {
        self.closures(descriptor, false, false)
    }

    /// The recording package in the closure form, with synchronous
    /// callbacks (run on blocking threads).
    pub fn sync_package(&self, descriptor: ResourceDescriptor) -> Package {
        self.closures(descriptor, true, false)
    }

    /// A [`stepped_package`](Self::stepped_package) in the closure form,
    /// with synchronous callbacks
    /// ([`Steps::run_blocking`](blue_kubernetes::steps::Steps::run_blocking)).
    pub fn stepped_sync_package(&self, descriptor: ResourceDescriptor) -> Package {
        self.closures(descriptor, true, true)
    }

    fn closures(&self, descriptor: ResourceDescriptor, sync: bool, stepped: bool) -> Package {
        let schema = ResourceSchema::new(descriptor);
        let builder = Package::builder(if stepped { schema.steps() } else { schema });
        let (a, b, c) = (self.clone(), self.clone(), self.clone());
        let (d, e) = (self.clone(), self.clone());
        let builder = if sync {
            builder
                .validate(move |o| a.validate(&Call::closure(o)))
                .identity(move |o| b.identity_of(o.profile(), o.intent().as_str()))
                .observe(move |o| seen(c.observe(&Call::closure(o), stepped)))
                .converge(move |o| {
                    let call = Call::closure(o);
                    outcome(match stepped {
                        true => d.converge_steps_blocking(&call, o.steps()),
                        false => block_on(d.run_effect(Callback::Converge, &call)),
                    })
                })
                .delete(move |o| {
                    let call = Call::closure(o);
                    outcome(match stepped {
                        true => e.delete_steps_blocking(&call, o.steps()),
                        false => block_on(e.run_effect(Callback::Delete, &call)),
                    })
                })
        } else {
            builder
                .validate_async(move |o| {
                    let a = a.clone();
                    async move { a.validate(&Call::closure(&o)) }
                })
                .identity_async(move |o| {
                    let b = b.clone();
                    async move { b.identity_of(o.profile(), o.intent().as_str()) }
                })
                .observe_async(move |o| {
                    let c = c.clone();
                    async move { seen(c.observe(&Call::closure(&o), stepped)) }
                })
                .converge_async(move |o| {
                    let d = d.clone();
                    async move {
                        let call = Call::closure(&o);
                        outcome(match stepped {
                            true => d.converge_steps(&call, o.steps()).await,
                            false => d.run_effect(Callback::Converge, &call).await,
                        })
                    }
                })
                .delete_async(move |o| {
                    let e = e.clone();
                    async move {
                        let call = Call::closure(&o);
                        outcome(match stepped {
                            true => e.delete_steps(&call, o.steps()).await,
                            false => e.run_effect(Callback::Delete, &call).await,
                        })
                    }
                })
        };
        builder.build().expect("all callbacks are set")
    }
}

impl<'a> Call<'a> {
    /// What the closure form reads: the options' keys.
    fn closure(o: &'a CallbackInput) -> Self {
        let metadata = &o.resource()["metadata"];
        Self {
            profile: o.profile(),
            event: o.intent().as_str(),
            uid: metadata["uid"].as_str().unwrap_or_default(),
            generation: metadata["generation"].as_i64().unwrap_or(1),
            desired: super::desired(o),
            invalid: o.get("invalid") == Some(&Value::Bool(true)),
        }
    }
}

/// An observation as the closure form returns it: outputs serialized.
fn seen(seen: Result<Seen<Value>, CallbackError>) -> Result<Observation, CallbackError> {
    let (observed, outputs) = seen?;
    Ok(match outputs {
        Some(outputs) => observed.with_outputs(&outputs),
        None => observed,
    })
}

/// An ended effect as the closure form returns it: a scripted exit under
/// `blue/exit`, with [`PLANTED_SECRET`] in its log.
fn outcome(ended: Result<Ended, CallbackError>) -> Result<WorkflowOutcome, CallbackError> {
    let mut outcome = WorkflowOutcome::new();
    if let Ended::Exit(code) = ended? {
        outcome.insert("blue/exit".into(), code.into());
        outcome.insert("log".into(), PLANTED_SECRET.into());
    }
    Ok(outcome)
}

/// Runs `f` to completion from a synchronous callback's blocking thread.
pub(super) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Handle::current().block_on(f)
}
