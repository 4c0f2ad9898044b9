//! Counters observable on a running runtime. Numbers only, never error text.

use super::failure_log::Failure;
use crate::reconcile::Report;
use crate::resource::Phase;
use crate::telemetry::{Metrics, Tally};
use crate::Error;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// A snapshot of the runtime's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Lists that ended, successfully or not (every page of one type in one
    /// namespace scope):
    /// each poll without watches, the first list and each resync with them.
    pub polls: u64,
    /// Watch requests the server accepted.
    pub watches: u64,
    /// Watch events received (bookmarks included).
    pub watch_events: u64,
    /// Times a reflector fell back from watching to periodic lists because
    /// its watches kept failing.
    pub watch_fallbacks: u64,
    /// Failed lists, per resource type (`plural.group`).
    pub transport_failures: BTreeMap<String, u64>,
    /// Reconciles that ended with a transport error or a panic of the pass
    /// (not a failed callback: see `failed` and `callback_failures`).
    pub reconcile_errors: u64,
    /// Reconciles that wrote phase Failed (a callback failed, or the
    /// infrastructure was not ready).
    pub failed: u64,
    /// Callback calls that returned an error or panicked.
    pub callback_failures: u64,
    /// Reconciles that found the configuration invalid.
    pub invalid: u64,
    /// Reconciles that ran to a report.
    pub reconciles: u64,
    /// Reconciles that found the identity lock held.
    pub busy: u64,
    /// Reconciles stopped by a write conflict (fenced writes included).
    pub conflicts: u64,
    /// Times this process became leader (leader election only).
    pub leadership_acquired: u64,
    /// Times it stopped being leader (renew deadline passed, or another
    /// holder took the lease).
    pub leadership_lost: u64,
    /// Status and finalizer writes refused because the lease could no
    /// longer be proven held.
    pub fenced_writes: u64,
    /// Early checks asked for by related objects, references and
    /// [`Runtime::trigger`](crate::Runtime::trigger) (requests for a
    /// resource not cached are not counted).
    pub requested_checks: u64,
}

/// The runtime's counting, one call per fact: each updates [`Stats`] and,
/// where the fact has one, its Prometheus metric.
pub(crate) struct Counters {
    metrics: Arc<Metrics>,
    polls: Tally,
    watch_events: Tally,
    watch_fallbacks: Tally,
    /// The facts without a Prometheus counter of their own, and the pass
    /// results, whose metrics carry labels `Stats` does not keep.
    rest: Mutex<Stats>,
}

impl Counters {
    pub(crate) fn new(metrics: Arc<Metrics>) -> Self {
        Self {
            polls: Tally::exporting(metrics.polls.clone()),
            watch_events: Tally::exporting(metrics.watch_events.clone()),
            watch_fallbacks: Tally::exporting(metrics.watch_fallbacks.clone()),
            metrics,
            rest: Mutex::default(),
        }
    }

    fn update(&self, f: impl FnOnce(&mut Stats)) {
        f(&mut self.rest.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// A list ended, successfully or not.
    pub(crate) fn listed(&self) {
        self.polls.inc();
    }

    /// A list of `resource_type` (`plural.group`) failed.
    pub(crate) fn list_failed(&self, resource_type: String) {
        self.update(|s| *s.transport_failures.entry(resource_type).or_default() += 1);
    }

    pub(crate) fn watch_opened(&self) {
        self.update(|s| s.watches += 1);
    }

    pub(crate) fn watch_event(&self) {
        self.watch_events.inc();
    }

    pub(crate) fn fell_back(&self) {
        self.watch_fallbacks.inc();
    }

    /// An early check of a cached resource was asked for.
    pub(crate) fn requested(&self) {
        self.update(|s| s.requested_checks += 1);
    }

    /// The object a timer fired for could not be read: no pass ran.
    pub(crate) fn read_failed(&self) {
        self.update(|s| s.reconcile_errors += 1);
    }

    /// A pass over a resource of type `controller` ended so.
    pub(crate) fn pass_ended(&self, controller: &str, verdict: &Verdict) {
        let label = [("controller", controller.to_owned())];
        if matches!(verdict, Verdict::WroteFailed | Verdict::Broke(_)) {
            self.metrics.reconcile_errors.get_or_create(&label).inc();
        }
        let [(_, controller)] = label;
        self.metrics
            .reconciles
            .get_or_create(&[
                ("controller", controller),
                ("result", verdict.result_label().into()),
            ])
            .inc();
        self.update(|s| match verdict {
            Verdict::Broke(_) => s.reconcile_errors += 1,
            _ => {
                s.reconciles += 1;
                match verdict {
                    Verdict::Busy => s.busy += 1,
                    Verdict::Conflict => s.conflicts += 1,
                    Verdict::WroteFailed => s.failed += 1,
                    _ => {}
                }
            }
        });
    }

    pub(crate) fn snapshot(&self) -> Stats {
        let mut stats = self.rest.lock().unwrap_or_else(|e| e.into_inner()).clone();
        stats.polls = self.polls.get();
        stats.watch_events = self.watch_events.get();
        stats.watch_fallbacks = self.watch_fallbacks.get();
        stats
    }
}

/// How a pass ended: a report, an error, or a panic.
pub(crate) type PassResult = Result<Result<Report, Error>, Box<dyn std::any::Any + Send>>;

/// What a finished pass means to the runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A status was written (not Failed), or our finalizer released.
    Wrote,
    /// Phase Failed was written: the status holds the retry time, and the
    /// write itself succeeded.
    WroteFailed,
    /// Gone, not due, or changed under us: nothing was written.
    Skipped,
    /// Another reconcile holds the identity lock.
    Busy,
    /// Someone wrote first.
    Conflict,
    /// A transport error, another error or a panic: nothing could be
    /// recorded in status.
    Broke(Failure),
}

impl Verdict {
    pub(crate) fn of(result: &PassResult) -> Self {
        match result {
            Ok(Ok(Report::Reconciled(Phase::Failed, _))) => Verdict::WroteFailed,
            Ok(Ok(Report::Reconciled(..) | Report::Released)) => Verdict::Wrote,
            Ok(Ok(Report::Busy)) => Verdict::Busy,
            Ok(Ok(Report::Conflict)) => Verdict::Conflict,
            Ok(Ok(_)) => Verdict::Skipped,
            Ok(Err(Error::Transport(e))) => Verdict::Broke(Failure::of(e)),
            Ok(Err(_)) => Verdict::Broke(Failure::new("error", "reconcile")),
            Err(_) => Verdict::Broke(Failure::new("panic", "reconcile")),
        }
    }

    /// The `result` label of `controller_runtime_reconcile_total`.
    pub(crate) fn result_label(&self) -> &'static str {
        match self {
            Verdict::Wrote => "success",
            Verdict::WroteFailed | Verdict::Broke(_) => "error",
            Verdict::Skipped => "skipped",
            Verdict::Busy => "busy",
            Verdict::Conflict => "conflict",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Reason;

    const TYPE: &str = "things.example.com";

    #[test]
    fn a_pass_result_is_counted_in_stats_and_metrics_by_one_call() {
        let metrics = Arc::new(Metrics::new());
        let counters = Counters::new(metrics.clone());
        counters.pass_ended(TYPE, &Verdict::WroteFailed);
        counters.pass_ended(TYPE, &Verdict::Broke(Failure::new("panic", "reconcile")));
        counters.pass_ended(TYPE, &Verdict::Busy);
        let s = counters.snapshot();
        assert_eq!(
            (s.reconciles, s.failed, s.busy, s.reconcile_errors),
            (2, 1, 1, 1)
        );
        let text = metrics.encode();
        let errors =
            format!("controller_runtime_reconcile_errors_total{{controller=\"{TYPE}\"}} 2");
        let busy = format!(
            "controller_runtime_reconcile_total{{controller=\"{TYPE}\",result=\"busy\"}} 1"
        );
        assert!(text.contains(&errors) && text.contains(&busy), "{text}");
    }

    #[test]
    fn a_list_is_counted_in_stats_and_metrics_by_one_call() {
        let metrics = Arc::new(Metrics::new());
        let counters = Counters::new(metrics.clone());
        counters.listed();
        assert_eq!(counters.snapshot().polls, 1);
        assert!(metrics.encode().contains("blue_polls_total 1"));
    }

    fn verdict(result: PassResult) -> (Verdict, &'static str) {
        let verdict = Verdict::of(&result);
        let label = verdict.result_label();
        (verdict, label)
    }

    #[test]
    fn a_written_status_is_a_success_unless_it_is_failed() {
        let ready = Ok(Ok(Report::Reconciled(Phase::Ready, Reason::Converged)));
        assert_eq!(verdict(ready), (Verdict::Wrote, "success"));
        assert_eq!(
            verdict(Ok(Ok(Report::Released))),
            (Verdict::Wrote, "success")
        );
        let failed = Ok(Ok(Report::Reconciled(
            Phase::Failed,
            Reason::ExecutionFailed,
        )));
        assert_eq!(verdict(failed), (Verdict::WroteFailed, "error"));
    }

    #[test]
    fn busy_and_conflict_are_their_own_results() {
        assert_eq!(verdict(Ok(Ok(Report::Busy))), (Verdict::Busy, "busy"));
        assert_eq!(
            verdict(Ok(Ok(Report::Conflict))),
            (Verdict::Conflict, "conflict")
        );
    }

    #[test]
    fn a_pass_that_wrote_nothing_is_skipped() {
        for report in [Report::NotFound, Report::NotDue, Report::Changed] {
            assert_eq!(verdict(Ok(Ok(report))), (Verdict::Skipped, "skipped"));
        }
    }

    #[test]
    fn an_error_or_a_panic_breaks_the_pass_with_its_class() {
        let panic = verdict(Err(Box::new("boom")));
        assert_eq!(
            panic,
            (Verdict::Broke(Failure::new("panic", "reconcile")), "error")
        );
        let error = verdict(Ok(Err(Error::NoRuntime)));
        assert_eq!(
            error,
            (Verdict::Broke(Failure::new("error", "reconcile")), "error")
        );
    }
}
