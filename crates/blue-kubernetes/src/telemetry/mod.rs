//! What the people running the operator see: logs, Events, Prometheus
//! [`Metrics`], the runtime's [`Stats`] and [`Health`], and with the `http`
//! feature, `/metrics`, `/healthz` and `/readyz` (`serve_http`).

pub(crate) mod events;
pub(crate) mod failure_log;
mod health;
pub(crate) mod log;
mod metrics;
mod proxy_metrics;
pub(crate) mod request_metrics;
mod sharding;
mod stats;
mod tally;
#[cfg(feature = "webhook")]
mod webhook_metrics;

pub(crate) use events::{EventRecorder, EventType};
pub use health::Health;
pub use metrics::Metrics;
pub(crate) use metrics::QUEUE_NAME;
pub(crate) use request_metrics::RequestMetrics;
pub(crate) use sharding::ShardMetrics;
pub use stats::Stats;
pub(crate) use stats::{Counters, Verdict};
pub(crate) use tally::Tally;
#[cfg(feature = "webhook")]
pub(crate) use webhook_metrics::WebhookMetrics;

#[cfg(feature = "http")]
pub use crate::http::{serve_http, HttpServer};
/// The Prometheus client the [`Metrics`] are built with, for registering more.
pub use prometheus_client;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The observability state one controller shares with its passes.
pub(crate) struct Telemetry {
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) events: Option<EventRecorder>,
    pub(crate) log_callback_errors: bool,
    callback_failures: AtomicU64,
    invalid: AtomicU64,
}

impl Telemetry {
    pub(crate) fn new(
        metrics: Arc<Metrics>,
        events: Option<EventRecorder>,
        log_callback_errors: bool,
    ) -> Self {
        Self {
            metrics,
            events,
            log_callback_errors,
            callback_failures: AtomicU64::new(0),
            invalid: AtomicU64::new(0),
        }
    }

    /// A package callback failed: counted for `Stats` and for
    /// `blue_callback_errors_total` in one call.
    pub(crate) fn callback_failed(&self, controller: &str, callback: &str, reason: &str) {
        self.callback_failures.fetch_add(1, Ordering::Relaxed);
        self.metrics.callback_failed(controller, callback, reason);
    }

    pub(crate) fn count_invalid(&self) {
        self.invalid.fetch_add(1, Ordering::Relaxed);
    }

    /// (callback failures, invalid verdicts) so far.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.callback_failures.load(Ordering::Relaxed),
            self.invalid.load(Ordering::Relaxed),
        )
    }
}
