//! What this process remembers of each object's runs: the highest run
//! number whose keys it handed out and whether that run ended. Status is
//! written by whoever may write `/status`; this memory is not, so while
//! the process lives a rolled-back or reopened record cannot make it hand
//! out an older run's keys again.

use crate::telemetry::Metrics;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The furthest this process went in one object's runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    /// The highest run number whose keys this process handed out (or
    /// whose end it recorded).
    pub(crate) sequence: u64,
    /// That run's `Done` record was written: it is never resumed.
    pub(crate) ended: bool,
}

/// A claim of a stored record that the controller ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ignored {
    /// A step's stored key was not the one it derives.
    Key,
    /// The stored run went back behind a run this process started or ended.
    Run,
}

impl Ignored {
    fn label(self) -> &'static str {
        match self {
            Ignored::Key => "key",
            Ignored::Run => "run",
        }
    }
}

/// Marks by object uid, for one controller (its process, as the tests
/// see it). An object's mark goes when the controller releases it: a
/// released object runs no more steps.
pub(crate) struct Marks {
    by_uid: Mutex<HashMap<String, Mark>>,
    ignored: Family<[(&'static str, String); 1], Counter>,
}

impl std::fmt::Debug for Marks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Marks").finish_non_exhaustive()
    }
}

impl Marks {
    /// Empty marks, with their counter exported in `metrics`.
    pub(crate) fn new(metrics: &Metrics) -> Self {
        let ignored = Family::<[(&'static str, String); 1], Counter>::default();
        // Both series from the start, so an alert on an increase works.
        for what in [Ignored::Key, Ignored::Run] {
            ignored
                .get_or_create(&[("what", what.label().into())])
                .inc_by(0);
        }
        metrics.register(
            "blue_step_records_ignored",
            "Stored step keys (what=key) and runs (what=run) the controller did not derive itself and ignored.",
            ignored.clone(),
        );
        Self {
            by_uid: Mutex::default(),
            ignored,
        }
    }

    pub(crate) fn get(&self, uid: &str) -> Option<Mark> {
        self.lock().get(uid).copied()
    }

    /// Run `sequence` of `uid` was written as started: its keys may be
    /// handed out.
    pub(crate) fn started(&self, uid: &str, sequence: u64) {
        let mut marks = self.lock();
        let mark = marks.entry(uid.to_string()).or_insert(Mark {
            sequence,
            ended: false,
        });
        if sequence > mark.sequence {
            *mark = Mark {
                sequence,
                ended: false,
            };
        }
    }

    /// Run `sequence` of `uid` was written as ended.
    pub(crate) fn ended(&self, uid: &str, sequence: u64) {
        let mut marks = self.lock();
        let ended = Mark {
            sequence,
            ended: true,
        };
        let mark = marks.entry(uid.to_string()).or_insert(ended);
        if sequence >= mark.sequence {
            *mark = ended;
        }
    }

    /// `uid` was released: it runs no more steps.
    pub(crate) fn forget(&self, uid: &str) {
        self.lock().remove(uid);
    }

    #[cfg(feature = "testing")]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    pub(crate) fn count(&self, what: Ignored, times: usize) {
        let series = self.ignored.get_or_create(&[("what", what.label().into())]);
        series.inc_by(times as u64);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Mark>> {
        self.by_uid.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_only_moves_forward_and_an_ended_run_stays_ended() {
        let marks = Marks::new(&Metrics::new());
        assert_eq!(marks.get("u"), None);
        marks.started("u", 3);
        marks.started("u", 2);
        let open = Mark {
            sequence: 3,
            ended: false,
        };
        assert_eq!(marks.get("u"), Some(open));
        marks.ended("u", 2);
        assert_eq!(marks.get("u"), Some(open), "an older run ending");
        marks.ended("u", 3);
        marks.started("u", 3);
        let ended = Mark {
            sequence: 3,
            ended: true,
        };
        assert_eq!(marks.get("u"), Some(ended), "never reopened");
        marks.started("u", 4);
        assert_eq!(
            marks.get("u").map(|m| (m.sequence, m.ended)),
            Some((4, false))
        );
        marks.forget("u");
        assert_eq!(marks.get("u"), None);
    }

    #[test]
    fn ignored_claims_are_counted_by_kind_from_zero() {
        let metrics = Metrics::new();
        let marks = Marks::new(&metrics);
        assert!(metrics
            .encode()
            .contains("blue_step_records_ignored_total{what=\"run\"} 0"));
        marks.count(Ignored::Key, 2);
        assert!(metrics
            .encode()
            .contains("blue_step_records_ignored_total{what=\"key\"} 2"));
    }
}
