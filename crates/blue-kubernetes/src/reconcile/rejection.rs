//! A callback rejected the input (`package::Rejected`): the user's to fix.
//! `Rejected` / `InputRejected` with the message in a Warning Event, and
//! the next attempt at the interval or with an edit, never with backoff.

use super::pass::Pass;
use super::report::{Halt, Report};
use crate::domain::spec::{self, DEFAULT_INTERVAL_MS};
use crate::domain::status::{Next, Transition};
use crate::package::callback::FailureKind;
use crate::package::validation::bounded;
use crate::resource::{Phase, Reason};

impl Pass<'_> {
    /// The user-facing message of the callback failure behind this pass's
    /// failure, if that callback rejected the input.
    pub(super) fn rejection(&self) -> Option<String> {
        let (_, failure) = self.failure.as_ref()?;
        match failure.kind {
            FailureKind::Rejected => failure.for_users.clone(),
            FailureKind::Errored | FailureKind::Panicked => None,
        }
    }

    /// Writes `Rejected`: no backoff (`retryCount` does not grow), checked
    /// again after the interval, the stored identity and digest kept.
    pub(super) async fn reject(&mut self, message: String) -> Result<Report, Halt> {
        let interval = spec::parse(&self.snapshot).map_or(DEFAULT_INTERVAL_MS, |c| c.interval_ms);
        self.user_facing = Some(bounded(message));
        let t = Transition::new(
            Phase::Rejected,
            Reason::InputRejected,
            Next::After(interval),
        );
        self.write(t).await
    }
}
