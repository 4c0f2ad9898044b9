//! Running callbacks: every package is bound to its resource's config
//! behind the erased [`Callbacks`] (see `erased`); a panic or an error is
//! a [`Failure`].

use crate::error::error_chain;
use crate::package::erased::Callbacks;
use crate::package::options::CallbackInput;
use crate::telemetry::log::FailedCall;
use crate::{package::erased::Package, package::result::CallbackResult, Controller};
use futures::future::{BoxFuture, FutureExt};
use std::panic::AssertUnwindSafe;

/// Which callback the pass calls.
pub(crate) type Pick<T> =
    for<'a> fn(&'a dyn Callbacks, &'a CallbackInput) -> BoxFuture<'a, CallbackResult<T>>;

/// Runs one callback of `callbacks` to completion. Never cancelled by the
/// controller: callbacks own their timeouts. A failure's text comes back
/// with the connection values the pass handed out redacted: this is where
/// every failure text is made, so nothing downstream sees a value.
pub(crate) async fn call<T>(
    callbacks: &dyn Callbacks,
    pick: Pick<T>,
    options: &CallbackInput,
) -> Result<T, Failure> {
    let result = match std::panic::catch_unwind(AssertUnwindSafe(|| pick(callbacks, options))) {
        Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
        Err(payload) => Err(payload),
    };
    let failure = match result {
        Ok(Ok(value)) => return Ok(value),
        Ok(Err(e)) => {
            let rejected =
                crate::package::rejected::find(&*e).map(|r| r.message().as_str().to_string());
            Failure {
                kind: match rejected {
                    Some(_) => FailureKind::Rejected,
                    None => FailureKind::Errored,
                },
                text: Some(error_chain(&*e)),
                for_users: rejected,
            }
        }
        Err(payload) => Failure::panicked(payload),
    };
    let Some(connection) = options.connection() else {
        return Err(failure);
    };
    let redact = |text: Option<String>| text.map(|t| connection.redact(&t));
    Err(Failure {
        text: redact(failure.text),
        for_users: redact(failure.for_users),
        ..failure
    })
}

/// Runs `callbacks`' callback `name` (of `package`), timing it and counting
/// a failure.
pub(crate) async fn run<T: Send + 'static>(
    controller: &Controller,
    package: &Package,
    callbacks: &dyn Callbacks,
    name: &'static str,
    pick: Pick<T>,
    options: &CallbackInput,
) -> Result<T, Failure> {
    let started = tokio::time::Instant::now();
    let result = call(callbacks, pick, options).await;
    let telemetry = &controller.telemetry;
    let controller_label = package.descriptor().qualified_plural();
    telemetry
        .metrics
        .observe_callback(&controller_label, name, started.elapsed());
    if let Err(failure) = &result {
        telemetry.callback_failed(&controller_label, name, failure.kind.as_str());
    }
    result
}

/// How a callback failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailureKind {
    Errored,
    Panicked,
    /// A [`Rejected`](crate::package::Rejected): the user's to fix.
    Rejected,
}

impl FailureKind {
    /// The metric and log label.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FailureKind::Errored => "error",
            FailureKind::Panicked => "panic",
            FailureKind::Rejected => "rejected",
        }
    }
}

/// A callback failed. The author's text is kept only for the operator's log
/// (see `telemetry::log`); `Debug` never shows it, and nothing copies it into
/// status, Events or errors. Only the user-facing message of a rejection
/// may reach an Event.
#[derive(Clone)]
pub(crate) struct Failure {
    pub(crate) kind: FailureKind,
    pub(crate) text: Option<String>,
    /// A rejection's [`UserFacingMessage`](crate::package::UserFacingMessage),
    /// redacted like `text`.
    pub(crate) for_users: Option<String>,
}

impl Failure {
    /// This failure of `callback` for the operator's log, with its attempt
    /// and the time of the next retry.
    pub(crate) fn logged<'a>(
        &'a self,
        callback: &'static str,
        attempt: u64,
        next_retry: &'a str,
    ) -> FailedCall<'a> {
        FailedCall {
            callback,
            failure: self.kind.as_str(),
            text: self.text.as_deref(),
            attempt,
            next_retry,
        }
    }

    fn panicked(payload: Box<dyn std::any::Any + Send>) -> Self {
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned());
        Failure {
            kind: FailureKind::Panicked,
            text,
            for_users: None,
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

/// Runs blocking work (a subprocess, a blocking client) on one of tokio's
/// blocking threads, so it never stalls the controller; a panic in it is a
/// failed attempt, as anywhere in a callback.
///
/// ```
/// # async fn demo() -> blue_kubernetes::CallbackResult<()> {
/// let status = blue_kubernetes::package::blocking(|| Ok(std::process::Command::new("true").status()?)).await?;
/// assert!(status.success());
/// # Ok(()) }
/// ```
pub async fn blocking<T, F>(f: F) -> CallbackResult<T>
where
    F: FnOnce() -> CallbackResult<T> + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result,
        Err(e) => match e.try_into_panic() {
            // Carried on, so the pass reports it as the panic it was.
            Ok(payload) => std::panic::resume_unwind(payload),
            Err(_) => Err("the blocking task was cancelled".into()),
        },
    }
}
