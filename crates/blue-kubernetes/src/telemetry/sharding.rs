//! What sharding exports: shards owned, handovers, drain time, dispatches
//! refused for lack of a shard Lease, and writes fenced by a shard Lease.

use super::{Metrics, Tally};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

/// The sharding metrics of one controller; registered once, when the
/// controller is built.
#[derive(Debug)]
pub(crate) struct ShardMetrics {
    /// `blue_shards_owned`: shards this replica may dispatch now.
    pub(crate) owned: Gauge,
    /// `blue_shards_gained_total`.
    pub(crate) gained: Tally,
    /// `blue_shards_lost_total`: released after a drain, taken, or expired.
    pub(crate) lost: Tally,
    /// `blue_shard_drain_seconds`: from giving a shard up to its release.
    pub(crate) drain: Histogram,
    /// `blue_shard_dispatch_refused_total`: passes that found their
    /// resource's shard not held here (another replica handles it).
    pub(crate) refused: Tally,
    /// `blue_shard_fenced_writes_total`, shared by every shard's gate.
    pub(crate) fenced: Counter,
}

impl ShardMetrics {
    pub(crate) fn registered(metrics: &Metrics) -> Self {
        let this = Self {
            owned: Gauge::default(),
            gained: Tally::default(),
            lost: Tally::default(),
            // 10 ms to about 45 minutes: a drain lasts as long as the
            // longest callback running.
            drain: Histogram::new(exponential_buckets(0.01, 2.0, 19)),
            refused: Tally::default(),
            fenced: Counter::default(),
        };
        metrics.register(
            "blue_shards_owned",
            "shards whose Lease this replica holds and may dispatch",
            this.owned.clone(),
        );
        metrics.register(
            "blue_shards_gained",
            "shards this replica started dispatching",
            this.gained.exported(),
        );
        metrics.register(
            "blue_shards_lost",
            "shards this replica stopped dispatching (handed over, taken or expired)",
            this.lost.exported(),
        );
        metrics.register(
            "blue_shard_drain_seconds",
            "time from giving a shard up to releasing its Lease, its running callbacks awaited",
            this.drain.clone(),
        );
        metrics.register(
            "blue_shard_dispatch_refused",
            "passes not run because this replica does not hold the resource's shard Lease",
            this.refused.exported(),
        );
        metrics.register(
            "blue_shard_fenced_writes",
            "status and finalizer writes refused because the shard Lease could not be proven held",
            this.fenced.clone(),
        );
        this
    }
}
