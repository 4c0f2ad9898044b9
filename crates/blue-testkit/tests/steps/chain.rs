//! A package whose `converge` is a chain of durable steps `s1..sN` (each
//! handing a token to the next; the last one applies the value) and whose
//! `delete` is `d1`, `d2` (the last one removes it), recording every step
//! it runs, with scripted failures, panics and hooks.

use blue_kubernetes::{CallbackResult, Observation, Package};

use blue_kubernetes::package::{CallbackInput, WorkflowOutcome};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// What each step returns: the next step gets it, recorded or not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Token {
    pub step: u32,
    pub value: i64,
}

/// One step the chain ran.
#[derive(Clone, Debug)]
pub struct Ran {
    pub name: String,
    pub key: String,
    pub run: String,
    pub interrupted: bool,
    /// The token the step before it returned.
    pub previous: Option<Token>,
}

type Hook = Arc<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct State {
    applied: HashMap<String, Value>,
    ran: Vec<Ran>,
    fail: HashMap<String, usize>,
    panic: HashSet<String>,
    hooks: HashMap<String, Hook>,
    errors: Vec<String>,
}

#[derive(Clone)]
pub struct Chain {
    state: Arc<Mutex<State>>,
}

fn value(o: &CallbackInput) -> i64 {
    o.get("value").and_then(Value::as_i64).unwrap_or_default()
}

impl Chain {
    pub fn new() -> Self {
        Self {
            state: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn ran(&self) -> Vec<Ran> {
        self.lock().ran.clone()
    }

    pub fn ran_of(&self, name: &str) -> Vec<Ran> {
        self.ran().into_iter().filter(|r| r.name == name).collect()
    }

    pub fn names(&self) -> Vec<String> {
        self.ran().into_iter().map(|r| r.name).collect()
    }

    pub fn applied(&self, profile: &str) -> Option<Value> {
        self.lock().applied.get(profile).cloned()
    }

    pub fn set_applied(&self, profile: &str, value: Value) {
        self.lock().applied.insert(profile.into(), value);
    }

    /// The infrastructure goes away behind the controller's back.
    pub fn drift(&self, profile: &str) {
        self.lock().applied.remove(profile);
    }

    /// Step `name` fails its next `times` runs (before its effect).
    pub fn fail(&self, name: &str, times: usize) {
        self.lock().fail.insert(name.into(), times);
    }

    pub fn panic_once(&self, name: &str) {
        self.lock().panic.insert(name.into());
    }

    /// `hook` runs inside step `name`, every time it runs.
    pub fn on_step(&self, name: &str, hook: impl Fn() + Send + Sync + 'static) {
        self.lock().hooks.insert(name.into(), Arc::new(hook));
    }

    /// What steps refused to do, in order.
    pub fn errors(&self) -> Vec<String> {
        self.lock().errors.clone()
    }

    fn builder(&self) -> blue_kubernetes::package::PackageBuilder {
        let observe = self.clone();
        Package::builder(crate::common::widgets())
            .identity(|o| Ok(vec![Some(o.profile().into())]))
            .observe(move |o| {
                let held = observe.applied(o.profile());
                let matches = held.as_ref().and_then(Value::as_i64) == Some(value(o));
                Ok(Observation::new(held.is_some(), matches, held.is_some()))
            })
    }

    /// Runs one step's body: recorded, hooked, scripted, then its effect.
    fn body(
        &self,
        step: &blue_kubernetes::steps::Step,
        previous: Option<Token>,
        effect: impl FnOnce(&mut State),
    ) -> CallbackResult<()> {
        let hook = {
            let mut s = self.lock();
            s.ran.push(Ran {
                name: step.name().into(),
                key: step.key().into(),
                run: step.run().into(),
                interrupted: step.interrupted(),
                previous,
            });
            s.hooks.get(step.name()).cloned()
        };
        if let Some(hook) = hook {
            hook();
        }
        let mut s = self.lock();
        if let Some(left) = s.fail.get_mut(step.name()).filter(|n| **n > 0) {
            *left -= 1;
            return Err(format!("{} failed", step.name()).into());
        }
        if s.panic.remove(step.name()) {
            drop(s);
            panic!("{} panicked", step.name());
        }
        effect(&mut s);
        Ok(())
    }

    /// Converge is `s1..sN`, delete `d1, d2`.
    pub fn package(&self, n: usize) -> Package {
        let (converge, delete) = (self.clone(), self.clone());
        self.builder()
            .steps()
            .converge_async(move |o| {
                let chain = converge.clone();
                async move {
                    let steps = o.steps();
                    let mut previous: Option<Token> = None;
                    for i in 1..=n {
                        let (chain, prev) = (chain.clone(), previous.clone());
                        let (profile, value) = (o.profile().to_string(), value(&o));
                        let token = steps
                            .run(&format!("s{i}"), |step| async move {
                                chain.body(&step, prev, |s| {
                                    if i == n {
                                        s.applied.insert(profile, value.into());
                                    }
                                })?;
                                Ok(Token {
                                    step: i as u32,
                                    value,
                                })
                            })
                            .await?;
                        previous = Some(token);
                    }
                    Ok(WorkflowOutcome::new())
                }
            })
            .delete_async(move |o| {
                let chain = delete.clone();
                async move {
                    let steps = o.steps();
                    for name in ["d1", "d2"] {
                        let (chain, profile) = (chain.clone(), o.profile().to_string());
                        steps
                            .run(name, |step| async move {
                                chain.body(&step, None, |s| {
                                    if name == "d2" {
                                        s.applied.remove(&profile);
                                    }
                                })
                            })
                            .await?;
                    }
                    Ok(WorkflowOutcome::new())
                }
            })
            .build()
            .unwrap()
    }

    /// The same effect in one plain `converge`, without steps.
    pub fn plain_package(&self) -> Package {
        let converge = self.clone();
        self.builder()
            .converge(move |o| {
                converge.set_applied(o.profile(), value(o).into());
                Ok(WorkflowOutcome::new())
            })
            .delete(|_| Ok(WorkflowOutcome::new()))
            .build()
            .unwrap()
    }

    /// Steps not declared: `converge` and `observe` try to run one, keep
    /// the error, and go on without.
    pub fn undeclared_package(&self) -> Package {
        let (observe, converge) = (self.clone(), self.clone());
        Package::builder(crate::common::widgets())
            .identity(|o| Ok(vec![Some(o.profile().into())]))
            .observe_async(move |o| {
                let chain = observe.clone();
                async move {
                    if let Err(e) = o.steps().run("look", |_| async { Ok(()) }).await {
                        chain.lock().errors.push(e.to_string());
                    }
                    let held = chain.applied(o.profile());
                    Ok(Observation::new(
                        held.is_some(),
                        held.is_some(),
                        held.is_some(),
                    ))
                }
            })
            .converge_async(move |o| {
                let chain = converge.clone();
                async move {
                    if let Err(e) = o.steps().run("make", |_| async { Ok(()) }).await {
                        chain.lock().errors.push(e.to_string());
                    }
                    chain.set_applied(o.profile(), value(&o).into());
                    Ok(WorkflowOutcome::new())
                }
            })
            .delete(|_| Ok(WorkflowOutcome::new()))
            .build()
            .unwrap()
    }

    /// A converge whose one step is named `name` and returns a result too
    /// large to record when `big`; it swallows the step's error and applies
    /// the value anyway, so only the controller's rule can fail the pass.
    pub fn rule_breaker(&self, name: &'static str, big: bool) -> Package {
        let converge = self.clone();
        self.builder()
            .steps()
            .converge_async(move |o| {
                let chain = converge.clone();
                async move {
                    let result = o
                        .steps()
                        .run(name, |_| async move {
                            Ok(if big { "x".repeat(2048) } else { String::new() })
                        })
                        .await;
                    if let Err(e) = result {
                        chain.lock().errors.push(e.to_string());
                    }
                    chain.set_applied(o.profile(), value(&o).into());
                    Ok(WorkflowOutcome::new())
                }
            })
            .delete(|_| Ok(WorkflowOutcome::new()))
            .build()
            .unwrap()
    }

    /// A converge whose step tries to run a step inside itself, keeps the
    /// error and applies the value.
    pub fn nested_package(&self) -> Package {
        let converge = self.clone();
        self.builder()
            .steps()
            .converge_async(move |o| {
                let chain = converge.clone();
                async move {
                    let steps = o.steps();
                    steps
                        .run("outer", |_| async {
                            if let Err(e) = steps.run("inner", |_| async { Ok(()) }).await {
                                chain.lock().errors.push(e.to_string());
                            }
                            chain.set_applied(o.profile(), value(&o).into());
                            Ok(())
                        })
                        .await?;
                    Ok(WorkflowOutcome::new())
                }
            })
            .delete(|_| Ok(WorkflowOutcome::new()))
            .build()
            .unwrap()
    }
}
