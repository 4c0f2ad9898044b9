//! A hook on the controller's client that counts and times every request
//! by operation and error class (never by object, never with text).

use super::Metrics;
use blue_kubernetes_client::{Answer, Call, Error, Hook};
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct RequestMetrics(pub(crate) Arc<Metrics>);

#[async_trait::async_trait]
impl Hook for RequestMetrics {
    /// A watch is counted and timed as it opens, not for its lifetime.
    fn after(&self, call: &Call<'_>, result: Result<Answer<'_>, &Error>, elapsed: Duration) {
        let operation = call.operation();
        let class = match result {
            Ok(_) => "ok".to_string(),
            Err(e) => e.kind().to_string().replace(' ', "_"),
        };
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
