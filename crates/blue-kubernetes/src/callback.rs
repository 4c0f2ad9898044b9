//! Running callbacks: sync ones on blocking threads (but the pure ones,
//! `validate` and `identity`, inline), panics as failures.

use crate::{CallbackResult, Options};
use futures::future::{BoxFuture, FutureExt};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

type SyncFn<T> = Arc<dyn Fn(&Options) -> CallbackResult<T> + Send + Sync>;
type AsyncFn<T> = Arc<dyn Fn(Options) -> BoxFuture<'static, CallbackResult<T>> + Send + Sync>;

/// A synchronous or asynchronous callback.
pub(crate) enum Callback<T> {
    Sync(SyncFn<T>),
    /// Synchronous and pure (no I/O, quick): run inline. Every pass calls
    /// `identity` and `validate`; on a blocking thread each call cost two
    /// thread switches, more than the work itself.
    Pure(SyncFn<T>),
    Async(AsyncFn<T>),
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

impl<T: Send + 'static> Callback<T> {
    pub(crate) fn sync<F>(f: F) -> Self
    where
        F: Fn(&Options) -> CallbackResult<T> + Send + Sync + 'static,
    {
        Callback::Sync(Arc::new(f))
    }

    pub(crate) fn pure<F>(f: F) -> Self
    where
        F: Fn(&Options) -> CallbackResult<T> + Send + Sync + 'static,
    {
        Callback::Pure(Arc::new(f))
    }

    pub(crate) fn asynchronous<F, Fut>(f: F) -> Self
    where
        F: Fn(Options) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = CallbackResult<T>> + Send + 'static,
    {
        Callback::Async(Arc::new(move |o| f(o).boxed()))
    }

    /// Runs the callback to completion. Never cancelled by the controller:
    /// callbacks own their timeouts. A failure's text comes back with the
    /// connection values the pass handed out redacted: this is where every
    /// failure text is made, so nothing downstream sees a value.
    pub(crate) async fn call(&self, options: &Options) -> Result<T, Failure> {
        self.run(options).await.map_err(|mut failure| {
            if let (Some(text), Some(connection)) = (&failure.text, options.connection()) {
                failure.text = Some(connection.redact(text));
            }
            failure
        })
    }

    async fn run(&self, options: &Options) -> Result<T, Failure> {
        let result = match self {
            Callback::Sync(f) => {
                let (f, options) = (f.clone(), options.clone());
                // spawn_blocking so a subprocess-running callback never stalls
                // the poller or other workers; a panic surfaces as a JoinError.
                match tokio::task::spawn_blocking(move || f(&options)).await {
                    Ok(r) => r,
                    Err(e) => {
                        return Err(e.try_into_panic().map_or(
                            Failure {
                                kind: FailureKind::Panicked,
                                text: None,
                            },
                            Failure::panicked,
                        ))
                    }
                }
            }
            Callback::Pure(f) => match std::panic::catch_unwind(AssertUnwindSafe(|| f(options))) {
                Ok(r) => r,
                Err(payload) => return Err(Failure::panicked(payload)),
            },
            Callback::Async(f) => {
                let options = options.clone();
                let fut = match std::panic::catch_unwind(AssertUnwindSafe(|| f(options))) {
                    Ok(fut) => fut,
                    Err(payload) => return Err(Failure::panicked(payload)),
                };
                match AssertUnwindSafe(fut).catch_unwind().await {
                    Ok(r) => r,
                    Err(payload) => return Err(Failure::panicked(payload)),
                }
            }
        };
        result.map_err(|e| Failure {
            kind: FailureKind::Errored,
            text: Some(crate::telemetry::log::error_chain(&*e)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::thread::{self, ThreadId};

    fn run<T: Send + 'static>(callback: &Callback<T>) -> Result<T, Failure> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let options = Options::from_resource(&json!({"metadata": {"name": "a"}}));
        runtime.block_on(callback.call(&options))
    }

    #[test]
    fn pure_callbacks_run_inline_and_others_on_blocking_threads() {
        let here = thread::current().id();
        let current = |_: &Options| Ok(thread::current().id());
        let thread_of = |c: &Callback<ThreadId>| run(c).map_err(|f| f.kind).unwrap();
        assert_eq!(thread_of(&Callback::pure(current)), here);
        assert_ne!(thread_of(&Callback::sync(current)), here);
    }

    #[test]
    fn a_panicking_pure_callback_is_a_failure_with_its_text() {
        let failure = run(&Callback::<()>::pure(|_| panic!("boom"))).unwrap_err();
        assert_eq!(failure.kind, FailureKind::Panicked);
        assert_eq!(failure.text.as_deref(), Some("boom"));
    }
}
