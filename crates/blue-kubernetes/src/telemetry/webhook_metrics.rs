//! The admission webhook's metrics, with controller-runtime's names
//! (`controller_runtime_webhook_*`), so its dashboards work. The `webhook`
//! label is the path served (one per kind), never anything a request
//! carries.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use std::time::Duration;

type Labels<const N: usize> = [(&'static str, String); N];

/// The webhook's request counts, latencies and requests in flight.
#[derive(Clone)]
pub(crate) struct WebhookMetrics {
    requests: Family<Labels<2>, Counter>,
    latency: Family<Labels<1>, Histogram, fn() -> Histogram>,
    in_flight: Family<Labels<1>, Gauge>,
}

fn latency() -> Histogram {
    // 1 ms to about 16 s: a review is judged in memory, `validate` may wait.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

impl WebhookMetrics {
    pub(crate) fn new(registry: &mut prometheus_client::registry::Registry) -> Self {
        let m = Self {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency as fn() -> Histogram),
            in_flight: Family::default(),
        };
        registry.register(
            "controller_runtime_webhook_requests",
            "Admission requests answered, by HTTP status code.",
            m.requests.clone(),
        );
        registry.register(
            "controller_runtime_webhook_latency_seconds",
            "Time to answer one admission request.",
            m.latency.clone(),
        );
        registry.register(
            "controller_runtime_webhook_requests_in_flight",
            "Admission requests being answered.",
            m.in_flight.clone(),
        );
        m
    }

    /// A request to `webhook` began.
    pub(crate) fn started(&self, webhook: &str) {
        self.in_flight
            .get_or_create(&[("webhook", webhook.into())])
            .inc();
    }

    /// A request to `webhook` was answered with `code` after `took`.
    pub(crate) fn answered(&self, webhook: &str, code: u16, took: Duration) {
        self.in_flight
            .get_or_create(&[("webhook", webhook.into())])
            .dec();
        self.requests
            .get_or_create(&[("code", code.to_string()), ("webhook", webhook.into())])
            .inc();
        self.latency
            .get_or_create(&[("webhook", webhook.into())])
            .observe(took.as_secs_f64());
    }
}
