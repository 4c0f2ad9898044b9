//! What a finished pass leaves behind in the runtime: the failure log and
//! the write backoff (counters and metrics stay with the work loop).

use super::failure_log::Failure;
use super::key::Key;
use super::Shared;
use crate::reconcile::Report;
use crate::Error;
use serde_json::Value;

/// How a pass ended: a report, an error, or a panic.
pub(super) type PassResult = Result<Result<Report, Error>, Box<dyn std::any::Any + Send>>;

/// The log subject of a resource: `plural.group ns/name`.
pub(super) fn subject(shared: &Shared, key: &Key) -> String {
    let descriptor = shared.controller.config.packages[key.package()].descriptor();
    format!(
        "{} {}/{}",
        descriptor.qualified_plural(),
        key.namespace(),
        key.name()
    )
}

/// Records `result` of a pass over `listed`; returns the backoff delay
/// when the pass failed.
pub(super) fn record(
    shared: &Shared,
    key: &Key,
    listed: &Value,
    result: &PassResult,
) -> Option<u64> {
    let subject = subject(shared, key);
    let config = &shared.controller.config;
    let failure = match result {
        Ok(Ok(report)) => {
            tracing::debug!(%subject, ?report, "reconciled");
            if matches!(report, Report::Reconciled(..) | Report::Released) {
                shared.backoff.succeeded(listed);
                shared.failures.succeeded(&subject);
            }
            None
        }
        Ok(Err(Error::Transport(e))) => Some(Failure::of(e)),
        Ok(Err(_)) => Some(Failure::new("error", "reconcile")),
        Err(_) => Some(Failure::new("panic", "reconcile")),
    };
    if let Some(failure) = failure {
        // Nothing could be recorded in status, so the wait lives here.
        let now = shared.controller.now();
        let delay = shared
            .backoff
            .failed(listed, now, config.retry_base_ms, config.retry_max_ms);
        tracing::debug!(%subject, retry_in_ms = delay, "pass failed; backing off");
        shared.failures.failed(&subject, failure);
        return Some(delay.unwrap_or(config.retry_base_ms));
    }
    None
}
