//! Running callbacks: every package is an [`Infrastructure`] behind the
//! erased [`Callbacks`]; a panic or an error is a [`Failure`]. The closure
//! form is [`Closures`], an `Infrastructure` over [`Options`]: its
//! synchronous callbacks run on blocking threads (but the pure ones,
//! `validate` and `identity`, inline).

use crate::infrastructure::{blocking, Callbacks};
use crate::{
    CallbackResult, Context, Infrastructure, Observation, Options, Outcome, ResourceSchema,
    ValidationErrors, WorkflowOutcome,
};
use futures::future::{BoxFuture, FutureExt};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

type SyncFn<C, T> = Arc<dyn Fn(&C, &Options) -> CallbackResult<T> + Send + Sync>;
type AsyncFn<C, T> =
    Arc<dyn Fn(Arc<C>, Options) -> BoxFuture<'static, CallbackResult<T>> + Send + Sync>;

/// A synchronous or asynchronous closure of the closure form, given the
/// config `C` (the untyped form ignores it) and the options.
pub(crate) enum Callback<C, T> {
    Sync(SyncFn<C, T>),
    /// Synchronous and pure (no I/O, quick): run inline. Every pass calls
    /// `identity` and `validate`; on a blocking thread each call cost two
    /// thread switches, more than the work itself.
    Pure(SyncFn<C, T>),
    Async(AsyncFn<C, T>),
}

impl<C: Send + Sync + 'static, T: Send + 'static> Callback<C, T> {
    pub(crate) fn sync<F>(f: F) -> Self
    where
        F: Fn(&C, &Options) -> CallbackResult<T> + Send + Sync + 'static,
    {
        Callback::Sync(Arc::new(f))
    }

    pub(crate) fn pure<F>(f: F) -> Self
    where
        F: Fn(&C, &Options) -> CallbackResult<T> + Send + Sync + 'static,
    {
        Callback::Pure(Arc::new(f))
    }

    pub(crate) fn asynchronous<F, Fut>(f: F) -> Self
    where
        F: Fn(Arc<C>, Options) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = CallbackResult<T>> + Send + 'static,
    {
        Callback::Async(Arc::new(move |c, o| f(c, o).boxed()))
    }

    /// The same closure for a typed builder: it keeps reading only the
    /// options.
    pub(crate) fn ignoring_config<D: Send + Sync + 'static>(self) -> Callback<D, T>
    where
        C: Default,
    {
        let config = Arc::new(C::default());
        match self {
            Callback::Sync(f) => Callback::Sync(Arc::new(move |_: &D, o: &Options| f(&config, o))),
            Callback::Pure(f) => Callback::Pure(Arc::new(move |_: &D, o: &Options| f(&config, o))),
            Callback::Async(f) => {
                Callback::Async(Arc::new(move |_: Arc<D>, o: Options| f(config.clone(), o)))
            }
        }
    }

    /// Runs the closure; a panic unwinds to [`call`], which catches it.
    async fn run(&self, cx: &Context<C>) -> CallbackResult<T> {
        match self {
            Callback::Sync(f) => {
                let (f, config, options) = (f.clone(), cx.config_arc(), cx.options().clone());
                // A blocking thread, so a subprocess-running callback never
                // stalls the poller or other workers.
                blocking(move || f(&config, &options)).await
            }
            Callback::Pure(f) => f(cx.config(), cx.options()),
            Callback::Async(f) => f(cx.config_arc(), cx.options().clone()).await,
        }
    }
}

/// The closure form, as an [`Infrastructure`]: `C` is the typed config of
/// a typed builder, `Value` (never decoded) for the untyped one.
pub(crate) struct Closures<C> {
    pub(crate) validate: Option<Callback<C, ValidationErrors>>,
    pub(crate) identity: Callback<C, Vec<Option<String>>>,
    pub(crate) observe: Callback<C, Observation>,
    pub(crate) converge: Callback<C, WorkflowOutcome>,
    pub(crate) delete: Callback<C, WorkflowOutcome>,
}

#[async_trait::async_trait]
impl<C> Infrastructure for Closures<C>
where
    C: DeserializeOwned + JsonSchema + Send + Sync + 'static,
{
    type Config = C;
    type Outputs = Value;

    fn schema() -> ResourceSchema {
        // The closure form's declaration is its builder's: a package made
        // of closures is built from it, never from this.
        unreachable!("the closure form declares its schema on its builder")
    }

    async fn validate(&self, cx: &Context<C>) -> CallbackResult<ValidationErrors> {
        match &self.validate {
            Some(validate) => validate.run(cx).await,
            None => Ok(ValidationErrors::default()),
        }
    }

    async fn identity(&self, cx: &Context<C>) -> CallbackResult<Vec<Option<String>>> {
        self.identity.run(cx).await
    }

    async fn observe(&self, cx: &Context<C>) -> CallbackResult<Observation> {
        self.observe.run(cx).await
    }

    async fn converge(&self, cx: &Context<C>) -> CallbackResult<Outcome<Value>> {
        self.converge.run(cx).await.map(Outcome::from_map)
    }

    async fn delete(&self, cx: &Context<C>) -> CallbackResult<Outcome<Value>> {
        self.delete.run(cx).await.map(Outcome::from_map)
    }
}

/// Which callback the pass calls.
pub(crate) type Pick<T> =
    for<'a> fn(&'a dyn Callbacks, &'a Options) -> BoxFuture<'a, CallbackResult<T>>;

/// Runs one callback of `callbacks` to completion. Never cancelled by the
/// controller: callbacks own their timeouts. A failure's text comes back
/// with the connection values the pass handed out redacted: this is where
/// every failure text is made, so nothing downstream sees a value.
pub(crate) async fn call<T>(
    callbacks: &dyn Callbacks,
    pick: Pick<T>,
    options: &Options,
) -> Result<T, Failure> {
    let result = match std::panic::catch_unwind(AssertUnwindSafe(|| pick(callbacks, options))) {
        Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
        Err(payload) => Err(payload),
    };
    let failure = match result {
        Ok(Ok(value)) => return Ok(value),
        Ok(Err(e)) => Failure {
            kind: FailureKind::Errored,
            text: Some(crate::telemetry::log::error_chain(&*e)),
        },
        Err(payload) => Failure::panicked(payload),
    };
    Err(match (&failure.text, options.connection()) {
        (Some(text), Some(connection)) => Failure {
            text: Some(connection.redact(text)),
            ..failure
        },
        _ => failure,
    })
}

/// How a callback failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailureKind {
    Errored,
    Panicked,
}

impl FailureKind {
    /// The metric and log label.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FailureKind::Errored => "error",
            FailureKind::Panicked => "panic",
        }
    }
}

/// A callback failed. The author's text is kept only for the operator's log
/// (see `telemetry::log`); `Debug` never shows it, and nothing copies it into
/// status, Events or errors.
#[derive(Clone)]
pub(crate) struct Failure {
    pub(crate) kind: FailureKind,
    pub(crate) text: Option<String>,
}

impl Failure {
    fn panicked(payload: Box<dyn std::any::Any + Send>) -> Self {
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned());
        Failure {
            kind: FailureKind::Panicked,
            text,
        }
    }
}

impl std::fmt::Debug for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Failure")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infrastructure::Erased;
    use serde_json::json;
    use std::thread;

    fn closures(identity: Callback<Value, Vec<Option<String>>>) -> Erased<Closures<Value>> {
        let absent = |_: &Value, _: &Options| Ok(Observation::ABSENT);
        let done = |_: &Value, _: &Options| Ok(WorkflowOutcome::new());
        Erased {
            infrastructure: Closures {
                validate: None,
                identity,
                observe: Callback::pure(absent),
                converge: Callback::pure(done),
                delete: Callback::pure(done),
            },
            decode: |_| Ok(Value::Null),
        }
    }

    fn run(identity: Callback<Value, Vec<Option<String>>>) -> Result<Vec<Option<String>>, Failure> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let options = Options::from_resource(&json!({"metadata": {"name": "a"}}));
        let erased = closures(identity);
        runtime.block_on(call(&erased, |c, o| c.identity(o), &options))
    }

    #[test]
    fn pure_callbacks_run_inline_and_others_on_blocking_threads() {
        let here = format!("{:?}", thread::current().id());
        let current = |_: &Value, _: &Options| -> CallbackResult<Vec<Option<String>>> {
            Ok(vec![Some(format!("{:?}", thread::current().id()))])
        };
        let thread_of = |c| run(c).map_err(|f| f.kind).unwrap()[0].clone().unwrap();
        assert_eq!(thread_of(Callback::pure(current)), here);
        assert_ne!(thread_of(Callback::sync(current)), here);
    }

    #[test]
    fn a_panicking_callback_is_a_failure_with_its_text() {
        for callback in [
            Callback::pure(|_: &Value, _: &Options| panic!("boom")),
            Callback::sync(|_: &Value, _: &Options| panic!("boom")),
        ] {
            let failure = run(callback).unwrap_err();
            assert_eq!(failure.kind, FailureKind::Panicked);
            assert_eq!(failure.text.as_deref(), Some("boom"));
        }
    }
}
