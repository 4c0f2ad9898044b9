//! Rule 8 under `spec.managementPolicy: Observe`: importing existing
//! infrastructure. The pass observes and records what it saw (outputs
//! included); `converge` and `delete` never run, so nothing is published
//! first: observing is not an effect.
//!
//! `matches` is not asked for: an imported resource describes what exists,
//! and the controller may not change it to match. Ready means it exists
//! and is ready; otherwise the pass fails (`NotReady`) and retries with
//! backoff, so a resource naming infrastructure that is not there is
//! visible rather than silently created.

use super::pass::Pass;
use super::report::{Halt, Report};
use crate::domain::status::{Next, Transition};
use crate::resource::{Phase, Reason};

impl Pass<'_> {
    pub(super) async fn import(&mut self, interval_ms: u64) -> Result<Report, Halt> {
        // Every managed resource carries our finalizer (rule 8);
        // under Observe, deletion releases it at once (rule 1).
        if !self.has_finalizer() {
            self.set_finalizer(true).await?;
        }
        let Some(observed) = self.observe().await else {
            return self.fail(Reason::ExecutionFailed).await;
        };
        if !(observed.exists && observed.ready) {
            return self.fail(Reason::NotReady).await;
        }
        let mut t = Transition::new(Phase::Ready, Reason::Converged, Next::After(interval_ms));
        t.identity = self.identity_record();
        t.immutable_digest = self.immutable_record();
        self.write(t).await
    }
}
