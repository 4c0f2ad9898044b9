//! The health of operations that repeat (lists, a resource's passes): a
//! failure that repeats is logged when it starts, when its class or
//! operation changes and when it ends, plus reminders at exponentially
//! growing intervals, never once per attempt. Only the error class and the
//! operation are logged, never error text.

use std::collections::HashMap;
use std::sync::Mutex;

/// What failed, without text: e.g. (`forbidden`, `replace`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) class: String,
    pub(crate) operation: String,
}

impl Failure {
    pub(crate) fn new(class: impl ToString, operation: impl Into<String>) -> Self {
        Self {
            class: class.to_string(),
            operation: operation.into(),
        }
    }

    /// A transport error's class and operation.
    pub(crate) fn of(error: &blue_kubernetes_client::Error) -> Self {
        Self::new(error.kind(), error.operation().unwrap_or("kubectl"))
    }
}

/// A change worth one log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// Started failing, or now fails differently.
    Failing(Failure),
    /// Still failing the same way after this many attempts (a power of two).
    StillFailing(Failure, u64),
    /// An operation has not answered for a while.
    Stalled(String),
    /// Succeeded after this many failed attempts.
    Recovered(u64),
}

/// How long a call may go unanswered before that is logged.
pub(crate) const STALL_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Default)]
pub(crate) struct FailureLog {
    failing: Mutex<HashMap<String, (Failure, u64)>>,
}

impl FailureLog {
    fn failing(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Failure, u64)>> {
        self.failing.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a failed attempt of `subject`; logs only a change of state.
    pub(crate) fn failed(&self, subject: &str, failure: Failure) -> Option<Change> {
        let mut failing = self.failing();
        let change = match failing.get_mut(subject) {
            Some((known, count)) if *known == failure => {
                *count += 1;
                // Reminders after 8, 16, 32 ... attempts: a log that stays
                // readable through an outage of any length.
                (*count >= 8 && count.is_power_of_two())
                    .then_some(Change::StillFailing(failure, *count))
            }
            _ => {
                failing.insert(subject.to_string(), (failure.clone(), 1));
                Some(Change::Failing(failure))
            }
        };
        drop(failing);
        log(subject, change)
    }

    /// Records a successful attempt of `subject`.
    pub(crate) fn succeeded(&self, subject: &str) -> Option<Change> {
        let change = self
            .failing()
            .remove(subject)
            .map(|(_, count)| Change::Recovered(count));
        log(subject, change)
    }

    /// `operation` of `subject` has been waiting for an answer for a while.
    pub(crate) fn stalled(&self, subject: &str, operation: &str) -> Option<Change> {
        log(subject, Some(Change::Stalled(operation.to_string())))
    }

    /// Awaits `call`; if it has not answered after [`STALL_AFTER`], says so
    /// once (e.g. an API server that was stopped makes calls hang until
    /// their deadline) and keeps waiting.
    pub(crate) async fn answered<F: std::future::Future>(
        &self,
        subject: &str,
        operation: &str,
        call: F,
    ) -> F::Output {
        tokio::pin!(call);
        tokio::select! {
            out = &mut call => return out,
            () = tokio::time::sleep(STALL_AFTER) => {}
        }
        self.stalled(subject, operation);
        call.await
    }

    /// Forgets `subject` (a resource released or gone).
    pub(crate) fn forget(&self, subject: &str) {
        self.failing().remove(subject);
    }

    #[cfg(feature = "testing")]
    pub(crate) fn len(&self) -> usize {
        self.failing().len()
    }
}

fn log(subject: &str, change: Option<Change>) -> Option<Change> {
    match &change {
        Some(Change::Failing(f)) => {
            tracing::warn!(%subject, class = %f.class, operation = %f.operation, "failing")
        }
        Some(Change::StillFailing(f, attempts)) => {
            tracing::warn!(%subject, class = %f.class, operation = %f.operation, attempts, "still failing")
        }
        Some(Change::Stalled(operation)) => {
            tracing::warn!(%subject, %operation, "no answer yet; waiting for the deadline")
        }
        Some(Change::Recovered(attempts)) => {
            tracing::info!(%subject, failed_attempts = attempts, "recovered")
        }
        None => {}
    }
    change
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forbidden() -> Failure {
        Failure::new("forbidden", "replace")
    }

    #[test]
    fn a_repeated_failure_is_reported_once_then_at_doubling_counts() {
        let health = FailureLog::default();
        let changes: Vec<_> = (0..40)
            .filter_map(|_| health.failed("ns/web", forbidden()))
            .collect();
        assert_eq!(
            changes,
            [
                Change::Failing(forbidden()),
                Change::StillFailing(forbidden(), 8),
                Change::StillFailing(forbidden(), 16),
                Change::StillFailing(forbidden(), 32),
            ]
        );
    }

    #[test]
    fn a_different_class_or_operation_is_a_new_state() {
        let health = FailureLog::default();
        health.failed("s", forbidden());
        let timeout = Failure::new("timeout", "replace");
        assert_eq!(
            health.failed("s", timeout.clone()),
            Some(Change::Failing(timeout))
        );
        let patch = Failure::new("timeout", "patch");
        assert_eq!(
            health.failed("s", patch.clone()),
            Some(Change::Failing(patch))
        );
    }

    #[test]
    fn recovery_is_reported_once_with_the_attempt_count() {
        let health = FailureLog::default();
        assert_eq!(health.succeeded("s"), None, "healthy stays quiet");
        health.failed("s", forbidden());
        health.failed("s", forbidden());
        assert_eq!(health.succeeded("s"), Some(Change::Recovered(2)));
        assert_eq!(health.succeeded("s"), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_without_answer_is_reported_once_while_waiting() {
        let health = FailureLog::default();
        let slow = async {
            tokio::time::sleep(STALL_AFTER * 3).await;
            7
        };
        assert_eq!(health.answered("s", "get", slow).await, 7);
        assert_eq!(health.answered("s", "get", async { 8 }).await, 8);
    }

    #[test]
    fn subjects_are_independent_and_can_be_forgotten() {
        let health = FailureLog::default();
        health.failed("a", forbidden());
        assert_eq!(
            health.failed("b", forbidden()),
            Some(Change::Failing(forbidden()))
        );
        health.forget("a");
        assert_eq!(health.succeeded("a"), None);
        assert_eq!(health.succeeded("b"), Some(Change::Recovered(1)));
    }
}
