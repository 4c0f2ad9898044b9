//! How a finished pass is classified, once: the [`Verdict`] decides what
//! it is counted as, whether the failure log clears or grows, and how the
//! book settles it (holds and write backoff).

use super::book::Settled;
use super::failure_log::Failure;
use super::key::Key;
use super::Shared;
use crate::reconcile::Report;
use crate::{Error, Phase};

/// How a pass ended: a report, an error, or a panic.
pub(super) type PassResult = Result<Result<Report, Error>, Box<dyn std::any::Any + Send>>;

/// What a finished pass means to the runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
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
    pub(super) fn of(result: &PassResult) -> Self {
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
    pub(super) fn result_label(&self) -> &'static str {
        match self {
            Verdict::Wrote => "success",
            Verdict::WroteFailed | Verdict::Broke(_) => "error",
            Verdict::Skipped => "skipped",
            Verdict::Busy => "busy",
            Verdict::Conflict => "conflict",
        }
    }
}

/// The log subject of a resource: `plural.group ns/name`.
pub(super) fn subject(shared: &Shared, key: &Key) -> String {
    let descriptor = shared.controller.config.packages[key.package()].descriptor();
    format!(
        "{} {}/{}",
        descriptor.qualified_plural(),
        key.namespace(),
        key.name()
    )
}

/// Records `verdict` in the failure log; returns how the pass settled,
/// for the book's holds and write backoff.
pub(super) fn settle(shared: &Shared, key: &Key, verdict: &Verdict) -> Settled {
    match verdict {
        Verdict::Wrote | Verdict::WroteFailed => {
            shared.failures.succeeded(&subject(shared, key));
            Settled::Wrote
        }
        Verdict::Skipped => Settled::Skipped,
        Verdict::Busy => Settled::Busy,
        Verdict::Conflict => Settled::Conflict,
        Verdict::Broke(failure) => {
            // Nothing could be recorded in status: the book backs it off.
            shared
                .failures
                .failed(&subject(shared, key), failure.clone());
            Settled::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Reason;

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
