//! The migration's progress on `/metrics`, per kind (`plural.group`).

use super::decision::Tally;
use crate::telemetry::Metrics;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

type Labels<const N: usize> = [(&'static str, String); N];

/// Objects by what their rewrite came to, passes by how they ended,
/// objects left in the running pass.
#[derive(Clone, Debug, Default)]
pub(crate) struct MigrationMetrics {
    objects: Family<Labels<2>, Counter>,
    passes: Family<Labels<2>, Counter>,
    left: Family<Labels<1>, Gauge>,
}

/// How a pass ended, as the `result` label of the passes counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PassResult {
    /// It counted: the old versions were retired after it.
    Completed,
    /// It did not count (the CRD or the storage version changed under
    /// it, or a continue token expired) and started over.
    Restarted,
    /// It stopped: the lease was lost, a request was refused, or the
    /// process was asked to stop.
    Stopped,
}

impl PassResult {
    fn label(self) -> &'static str {
        match self {
            PassResult::Completed => "completed",
            PassResult::Restarted => "restarted",
            PassResult::Stopped => "stopped",
        }
    }
}

impl MigrationMetrics {
    /// Registered into `metrics` (once per process: the runner makes one).
    pub(crate) fn new(metrics: &Metrics) -> Self {
        let m = Self::default();
        metrics.register(
            "blue_storage_migration_objects",
            "Objects a storage migration wrote, by result: rewritten (stored anew at the storage version), current (already there: a no-op write), conflict (changed by someone else since listed), gone (deleted since listed)",
            m.objects.clone(),
        );
        metrics.register(
            "blue_storage_migration_passes",
            "Storage migration passes over every object of a kind, by result: completed, restarted (the storage version or the CRD changed under it), stopped",
            m.passes.clone(),
        );
        metrics.register(
            "blue_storage_migration_objects_left",
            "Objects the running storage migration pass has still to write (0 when none runs)",
            m.left.clone(),
        );
        m
    }

    /// Adds what a pass counted since `before` (its tally then).
    pub(crate) fn add(&self, kind: &str, before: &Tally, now: &Tally) {
        let results = [
            ("rewritten", now.rewritten - before.rewritten),
            ("current", now.current - before.current),
            ("conflict", now.conflicts - before.conflicts),
            ("gone", now.gone - before.gone),
        ];
        for (result, n) in results.into_iter().filter(|(_, n)| *n > 0) {
            let labels = [("kind", kind.to_owned()), ("result", result.to_owned())];
            self.objects.get_or_create(&labels).inc_by(n);
        }
        let left = i64::try_from(now.left).unwrap_or(i64::MAX);
        self.left
            .get_or_create(&[("kind", kind.to_owned())])
            .set(left);
    }

    /// A pass of `kind` ended.
    pub(crate) fn pass(&self, kind: &str, result: PassResult) {
        let labels = [
            ("kind", kind.to_owned()),
            ("result", result.label().to_owned()),
        ];
        self.passes.get_or_create(&labels).inc();
        self.left.get_or_create(&[("kind", kind.to_owned())]).set(0);
    }
}
