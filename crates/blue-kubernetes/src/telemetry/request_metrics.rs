//! A hook on the controller's client that counts and times every request
//! by operation and error class (never by object, never with text), and
//! at debug level logs each one sent and answered (target [`TIMING`]), so
//! a reaction can be taken apart from the watch event that started it.

use super::Metrics;
use blue_kubernetes_client::{Answer, Call, Error, Hook};
use std::sync::Arc;
use std::time::Duration;

/// The log target of the debug lines that time a reaction: each watch
/// event's arrival (the reflector's) and each request sent and answered.
/// Off by default; `--log-level blue_kubernetes::timing=debug` (or a bare
/// `debug`) turns them on.
pub(crate) const TIMING: &str = "blue_kubernetes::timing";

pub(crate) struct RequestMetrics(pub(crate) Arc<Metrics>);

/// The operation, and for a raw request its method (never its path or
/// body, which may name anything).
fn what(call: &Call<'_>) -> String {
    match call {
        Call::Raw { request } => format!("raw {:?}", request.method),
        call => call.operation().to_string(),
    }
}

#[async_trait::async_trait]
impl Hook for RequestMetrics {
    async fn before(&self, call: &Call<'_>) -> Result<(), Error> {
        tracing::debug!(target: TIMING, request = %what(call), "request sent");
        Ok(())
    }

    /// A watch is counted and timed as it opens, not for its lifetime.
    fn after(&self, call: &Call<'_>, result: Result<Answer<'_>, &Error>, elapsed: Duration) {
        let operation = call.operation();
        let class = match result {
            Ok(_) => "ok".to_string(),
            Err(e) => e.kind().to_string().replace(' ', "_"),
        };
        tracing::debug!(
            target: TIMING,
            request = %what(call),
            result = %class,
            took_us = elapsed.as_micros() as u64,
            "request answered"
        );
        self.0
            .requests
            .get_or_create(&[("operation", operation.into()), ("result", class)])
            .inc();
        self.0
            .request_time
            .get_or_create(&[("operation", operation.into())])
            .observe(elapsed.as_secs_f64());
    }
}
