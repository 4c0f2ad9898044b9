//! What this process remembers of each object's runs (kept with the rest
//! of its memory of the object, `memory.rs`): the highest run number whose
//! keys it handed out and whether that run ended. Status is written by
//! whoever may write `/status`; this memory is not, so while the process
//! lives a rolled-back or reopened record cannot make it hand out an older
//! run's keys again.

use crate::telemetry::Metrics;

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
    /// Counts `times` claims of this kind in `blue_step_records_ignored`.
    pub(crate) fn count(self, metrics: &Metrics, times: usize) {
        let what = match self {
            Ignored::Key => "key",
            Ignored::Run => "run",
        };
        let series = metrics
            .step_records_ignored
            .get_or_create(&[("what", what.into())]);
        series.inc_by(times as u64);
    }

    /// Both series from the start, so an alert on an increase works.
    pub(crate) fn count_from_zero(metrics: &Metrics) {
        Ignored::Key.count(metrics, 0);
        Ignored::Run.count(metrics, 0);
    }
}

impl Mark {
    /// Run `sequence` was written as started: its keys may be handed out.
    /// A mark only moves forward.
    pub(crate) fn started(mark: Option<Mark>, sequence: u64) -> Mark {
        let started = Mark {
            sequence,
            ended: false,
        };
        mark.filter(|m| m.sequence >= sequence).unwrap_or(started)
    }

    /// Run `sequence` was written as ended: it is never resumed.
    pub(crate) fn ended(mark: Option<Mark>, sequence: u64) -> Mark {
        let ended = Mark {
            sequence,
            ended: true,
        };
        mark.filter(|m| m.sequence > sequence).unwrap_or(ended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_only_moves_forward_and_an_ended_run_stays_ended() {
        let open = Mark {
            sequence: 3,
            ended: false,
        };
        let mark = Some(Mark::started(Some(Mark::started(None, 3)), 2));
        assert_eq!(mark, Some(open));
        let mark = Some(Mark::ended(mark, 2));
        assert_eq!(mark, Some(open), "an older run ending");
        let mark = Some(Mark::started(Some(Mark::ended(mark, 3)), 3));
        let ended = Mark {
            sequence: 3,
            ended: true,
        };
        assert_eq!(mark, Some(ended), "never reopened");
        let next = Mark::started(mark, 4);
        assert_eq!((next.sequence, next.ended), (4, false));
    }

    #[test]
    fn ignored_claims_are_counted_by_kind_from_zero() {
        let metrics = Metrics::new();
        Ignored::count_from_zero(&metrics);
        assert!(metrics
            .encode()
            .contains("blue_step_records_ignored_total{what=\"run\"} 0"));
        Ignored::Key.count(&metrics, 2);
        assert!(metrics
            .encode()
            .contains("blue_step_records_ignored_total{what=\"key\"} 2"));
    }
}
