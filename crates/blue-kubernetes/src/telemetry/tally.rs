//! One fact counted in one call: the count `Stats` reads and its
//! Prometheus counter move together, so they cannot drift apart.

use prometheus_client::metrics::counter::Counter;
use std::sync::atomic::{AtomicU64, Ordering};

/// A count of one fact, read for [`Stats`](crate::telemetry::Stats) and exported to
/// Prometheus.
///
/// The exported counter may outlive this tally and be shared by others
/// (a controller's metrics serve every runtime started from it), so
/// [`get`](Self::get) reads only what was counted here.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    own: AtomicU64,
    exported: Counter,
}

impl Tally {
    /// Counts into `exported` as well, e.g. a counter already registered.
    pub(crate) fn exporting(exported: Counter) -> Self {
        Self {
            own: AtomicU64::new(0),
            exported,
        }
    }

    pub(crate) fn inc(&self) {
        self.own.fetch_add(1, Ordering::Relaxed);
        self.exported.inc();
    }

    /// What was counted through this tally.
    pub(crate) fn get(&self) -> u64 {
        self.own.load(Ordering::Relaxed)
    }

    /// The exported counter, to register (a default tally starts its own).
    pub(crate) fn exported(&self) -> Counter {
        self.exported.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_call_counts_the_fact_and_its_metric() {
        let tally = Tally::default();
        tally.inc();
        tally.inc();
        assert_eq!((tally.get(), tally.exported().get()), (2, 2));
    }

    #[test]
    fn a_shared_metric_keeps_counting_what_others_counted_but_the_tally_does_not() {
        let metric = Counter::<u64>::default();
        Tally::exporting(metric.clone()).inc();
        let second = Tally::exporting(metric.clone());
        second.inc();
        assert_eq!((second.get(), metric.get()), (1, 2));
    }
}
