//! The proxy transport's own counters on `/metrics`, read at each scrape.

use blue_kubernetes_client::ProxyClient;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use std::sync::Arc;

/// Reads [`ProxyClient::lifecycle_stats`] when scraped, so the transport
/// needs no knowledge of metrics.
pub(crate) struct ProxyCollector(pub(crate) Arc<ProxyClient>);

impl std::fmt::Debug for ProxyCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProxyCollector")
    }
}

impl Collector for ProxyCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stats = self.0.lifecycle_stats();
        let counters = [
            (
                "blue_proxy_starts",
                "kubectl proxy processes started and answering.",
                stats.starts,
            ),
            (
                "blue_proxy_restarts",
                "Starts that replaced an earlier kubectl proxy.",
                stats.restarts,
            ),
            (
                "blue_proxy_failed_starts",
                "kubectl proxy starts that failed.",
                stats.failed_starts,
            ),
            (
                "blue_proxy_exits",
                "Running kubectl proxies found exited.",
                stats.exits,
            ),
            (
                "blue_proxy_hangs",
                "Running kubectl proxies replaced because they stopped answering.",
                stats.hangs,
            ),
        ];
        for (name, help, value) in counters {
            let counter = ConstCounter::new(value);
            let metric = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
            counter.encode(metric)?;
        }
        Ok(())
    }
}
