//! The controller's Prometheus metrics (the `prometheus-client` crate), with
//! controller-runtime's names where the meaning matches, so existing
//! dashboards work.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Metric, Registry};
use std::sync::Mutex;
use std::time::Duration;

type One = [(&'static str, String); 1];
type Two = [(&'static str, String); 2];
type Timings<L> = Family<L, Histogram, fn() -> Histogram>;

/// The name of the work queue in `workqueue_depth{name=...}`.
pub(crate) const QUEUE_NAME: &str = "blue-kubernetes";

fn seconds() -> Histogram {
    // 5 ms to about 80 s: kubectl calls take ~0.1 s, callbacks up to minutes.
    Histogram::new(exponential_buckets(0.005, 2.0, 15))
}

/// Every metric of one controller, registered in one registry.
///
/// A family appears once it has a sample. Labels: `controller` is the resource type (`plural.group`), `callback`
/// one of `validate|identity|observe|converge|delete`, `operation` a
/// [`Client`](blue_kubernetes_client::Client) method. Values are never
/// resource names, options or error text, so cardinality stays bounded.
///
/// ```
/// let metrics = blue_kubernetes::telemetry::Metrics::new();
/// let text = metrics.encode();
/// assert!(text.contains("blue_polls_total 0"));
/// assert!(text.ends_with("# EOF\n"));
/// ```
pub struct Metrics {
    registry: Mutex<Registry>,
    pub(crate) reconciles: Family<Two, Counter>,
    pub(crate) reconcile_errors: Family<One, Counter>,
    pub(crate) reconcile_time: Timings<One>,
    pub(crate) callback_time: Timings<Two>,
    pub(crate) callback_errors: Family<[(&'static str, String); 3], Counter>,
    pub(crate) queue_depth: Family<One, Gauge>,
    pub(crate) active_workers: Family<One, Gauge>,
    pub(crate) retries: Family<One, Counter>,
    pub(crate) stalls: Family<Two, Counter>,
    pub(crate) requests: Family<Two, Counter>,
    pub(crate) request_time: Timings<One>,
    pub(crate) phases: Family<Two, Gauge>,
    pub(crate) polls: Counter,
    pub(crate) watch_events: Counter,
    pub(crate) watch_fallbacks: Counter,
    pub(crate) events: Family<One, Counter>,
    pub(crate) step_records_ignored: Family<One, Counter>,
    #[cfg(feature = "webhook")]
    webhook: std::sync::OnceLock<super::webhook_metrics::WebhookMetrics>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A registry holding every metric, all at zero.
    pub fn new() -> Self {
        let timings = || Timings::new_with_constructor(seconds as fn() -> Histogram);
        let m = Metrics {
            registry: Mutex::new(Registry::default()),
            reconciles: Family::default(),
            reconcile_errors: Family::default(),
            reconcile_time: timings(),
            callback_time: Family::new_with_constructor(seconds as fn() -> Histogram),
            callback_errors: Family::default(),
            queue_depth: Family::default(),
            active_workers: Family::default(),
            retries: Family::default(),
            stalls: Family::default(),
            requests: Family::default(),
            request_time: timings(),
            phases: Family::default(),
            polls: Counter::default(),
            watch_events: Counter::default(),
            watch_fallbacks: Counter::default(),
            events: Family::default(),
            step_records_ignored: Family::default(),
            #[cfg(feature = "webhook")]
            webhook: std::sync::OnceLock::new(),
        };
        m.queue_depth
            .get_or_create(&[("name", QUEUE_NAME.into())])
            .set(0);
        {
            let mut r = m.lock();
            r.register(
                "controller_runtime_reconcile",
                "Reconciles per type and result (success, error, conflict, busy, skipped).",
                m.reconciles.clone(),
            );
            r.register(
                "controller_runtime_reconcile_errors",
                "Reconciles that ended Failed, with a transport error or a panic.",
                m.reconcile_errors.clone(),
            );
            r.register(
                "controller_runtime_reconcile_time_seconds",
                "Duration of one reconcile.",
                m.reconcile_time.clone(),
            );
            r.register(
                "blue_callback_duration_seconds",
                "Duration of one package callback.",
                m.callback_time.clone(),
            );
            r.register("blue_callback_errors", "Package callbacks that returned an error (reason=error), a rejection the user must fix (reason=rejected) or panicked (reason=panic)", m.callback_errors.clone());
            r.register(
                "workqueue_depth",
                "Resources waiting in the work queue.",
                m.queue_depth.clone(),
            );
            r.register(
                "controller_runtime_active_workers",
                "Workers reconciling a resource of this type now.",
                m.active_workers.clone(),
            );
            r.register(
                "blue_stalled",
                "Status writes of a phase that waits for the user (Invalid, Rejected, Blocked), per type and generic reason.",
                m.stalls.clone(),
            );
            r.register(
                "blue_reconcile_retries",
                "Failed attempts scheduled for a retry with backoff.",
                m.retries.clone(),
            );
            r.register(
                "blue_transport_requests",
                "Cluster requests per operation and result (ok or the error class).",
                m.requests.clone(),
            );
            r.register(
                "blue_transport_request_duration_seconds",
                "Duration of one cluster request.",
                m.request_time.clone(),
            );
            r.register(
                "blue_resources",
                "Cached resources per type and status.phase (None when unset).",
                m.phases.clone(),
            );
            r.register(
                "blue_polls",
                "Completed lists of one type and namespace scope (polls, first lists, resyncs)",
                m.polls.clone(),
            );
            r.register(
                "blue_watch_events",
                "Watch events received, bookmarks included",
                m.watch_events.clone(),
            );
            r.register(
                "blue_watch_fallbacks",
                "Times watches kept failing and a type fell back to periodic lists",
                m.watch_fallbacks.clone(),
            );
            r.register(
                "blue_events",
                "Kubernetes Events per result (created, aggregated, dropped, superseded, failed).",
                m.events.clone(),
            );
            r.register(
                "blue_step_records_ignored",
                "Stored step keys (what=key) and runs (what=run) the controller did not derive itself and ignored.",
                m.step_records_ignored.clone(),
            );
            r.register(
                "blue_build_info",
                "Always 1; the crate version as a label.",
                build_info(),
            );
        }
        m
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers another metric (e.g. a transport's or leader election's
    /// own counters), exported with the others.
    ///
    /// ```
    /// use prometheus_client::metrics::counter::Counter;
    /// let metrics = blue_kubernetes::telemetry::Metrics::new();
    /// let restarts = Counter::<u64>::default();
    /// metrics.register("blue_proxy_restarts", "kubectl proxy restarts", restarts.clone());
    /// restarts.inc();
    /// assert!(metrics.encode().contains("blue_proxy_restarts_total 1"));
    /// ```
    pub fn register(&self, name: &str, help: &str, metric: impl Metric) {
        self.lock().register(name, help, metric);
    }

    /// Exports the proxy transport's counters (`blue_proxy_starts_total`,
    /// `blue_proxy_restarts_total`, `blue_proxy_failed_starts_total`,
    /// `blue_proxy_exits_total`, `blue_proxy_hangs_total`), read from
    /// `proxy` at each scrape.
    ///
    /// ```
    /// use blue_kubernetes_client::{proxy_client, KubectlConfig, ProxyConfig};
    /// // The proxy starts with the first request; nothing runs yet.
    /// let options = ProxyConfig::new(KubectlConfig::for_context("dev"));
    /// let proxy = std::sync::Arc::new(proxy_client(options).unwrap());
    /// let metrics = blue_kubernetes::telemetry::Metrics::new();
    /// metrics.register_proxy(proxy);
    /// let text = metrics.encode();
    /// assert!(text.contains("blue_proxy_starts_total 0"));
    /// assert!(text.contains("blue_proxy_restarts_total 0"));
    /// ```
    pub fn register_proxy(&self, proxy: std::sync::Arc<blue_kubernetes_client::ProxyClient>) {
        self.lock()
            .register_collector(Box::new(super::proxy_metrics::ProxyCollector(proxy)));
    }

    #[cfg(feature = "webhook")]
    /// The admission webhook's metrics, registered the first time they
    /// are asked for (one set however many servers a process runs).
    pub(crate) fn webhook(&self) -> super::webhook_metrics::WebhookMetrics {
        self.webhook
            .get_or_init(|| super::webhook_metrics::WebhookMetrics::new(&mut self.lock()))
            .clone()
    }

    /// The OpenMetrics text exposition of every metric (what `/metrics` serves).
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut text, &self.lock());
        text
    }

    pub(crate) fn observe_callback(&self, controller: &str, callback: &str, took: Duration) {
        self.callback_time
            .get_or_create(&[
                ("controller", controller.into()),
                ("callback", callback.into()),
            ])
            .observe(took.as_secs_f64());
    }

    pub(crate) fn callback_failed(&self, controller: &str, callback: &str, reason: &str) {
        self.callback_errors
            .get_or_create(&[
                ("controller", controller.into()),
                ("callback", callback.into()),
                ("reason", reason.into()),
            ])
            .inc();
    }

    pub(crate) fn event(&self, result: &str) {
        self.events
            .get_or_create(&[("result", result.into())])
            .inc();
    }
}

fn build_info() -> Family<One, Gauge> {
    let info = Family::<One, Gauge>::default();
    info.get_or_create(&[("version", env!("CARGO_PKG_VERSION").into())])
        .set(1);
    info
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}
