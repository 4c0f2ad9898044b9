//! Running callbacks: sync ones on blocking threads, panics as failures.

use crate::{CallbackResult, Options};
use futures::future::{BoxFuture, FutureExt};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

type SyncFn<T> = Arc<dyn Fn(&Options) -> CallbackResult<T> + Send + Sync>;
type AsyncFn<T> = Arc<dyn Fn(Options) -> BoxFuture<'static, CallbackResult<T>> + Send + Sync>;

/// A synchronous or asynchronous callback.
pub(crate) enum Callback<T> {
    Sync(SyncFn<T>),
    Async(AsyncFn<T>),
}

/// A callback failed. Deliberately holds no text: the error or panic payload
/// is dropped where it is caught.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    Errored,
    Panicked,
}

impl<T: Send + 'static> Callback<T> {
    pub(crate) fn sync<F>(f: F) -> Self
    where
        F: Fn(&Options) -> CallbackResult<T> + Send + Sync + 'static,
    {
        Callback::Sync(Arc::new(f))
    }

    pub(crate) fn asynchronous<F, Fut>(f: F) -> Self
    where
        F: Fn(Options) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = CallbackResult<T>> + Send + 'static,
    {
        Callback::Async(Arc::new(move |o| f(o).boxed()))
    }

    /// Runs the callback to completion. Never cancelled by the controller:
    /// callbacks own their timeouts.
    pub(crate) async fn call(&self, options: &Options) -> Result<T, Failure> {
        let result = match self {
            Callback::Sync(f) => {
                let (f, options) = (f.clone(), options.clone());
                // spawn_blocking so a subprocess-running callback never stalls
                // the poller or other workers; a panic surfaces as a JoinError.
                match tokio::task::spawn_blocking(move || f(&options)).await {
                    Ok(r) => r,
                    Err(_) => return Err(Failure::Panicked),
                }
            }
            Callback::Async(f) => {
                let options = options.clone();
                let fut = match std::panic::catch_unwind(AssertUnwindSafe(|| f(options))) {
                    Ok(fut) => fut,
                    Err(_) => return Err(Failure::Panicked),
                };
                match AssertUnwindSafe(fut).catch_unwind().await {
                    Ok(r) => r,
                    Err(_) => return Err(Failure::Panicked),
                }
            }
        };
        result.map_err(|_| Failure::Errored)
    }
}
