//! The ordered rules of one reconcile; the first that applies wins. Those
//! that need no package code (1, 3 to 3c) were decided by the plan
//! (`plan.rs`), once, before `identity` ran; rule 2 needs the identity,
//! and 2b (immutable fields, `immutable.rs`) comes with it.

use super::pass::Pass;
use super::plan::{Plan, Stop};
use super::report::{Halt, Report};
use crate::domain::resource::{self, is_deleting, status_str};
use crate::domain::spec::{self, ManagementPolicy, DEFAULT_INTERVAL_MS};
use crate::domain::status::{Next, Transition};
use crate::resource::{Phase, Reason};

impl Pass<'_> {
    pub(super) async fn decide(&mut self) -> Result<Report, Halt> {
        let deleting = is_deleting(&self.snapshot);

        // 1, and 3 to 3c when a reference holds the pass: decided by the
        // plan, with no package code run.
        let rules = match &self.plan {
            Plan::Release => return self.release().await,
            Plan::Hold(stop) => return self.stop(stop.clone()).await,
            Plan::Run(rules) => rules.clone(),
        };

        // 2. Profile and state identity are immutable once recorded.
        if let Some((profile, hash)) = self.identity_record() {
            let differs =
                |key, now: &str| status_str(&self.snapshot, key).is_some_and(|s| s != now);
            if differs("profile", &profile) || differs("stateIdentity", &hash) {
                let t =
                    Transition::new(Phase::Invalid, Reason::ImmutableStateIdentity, Next::OnEdit);
                return self.write(t).await;
            }
        }

        // 2b. Config fields declared immutable hold their accepted values.
        if let Some(invalid) = self.immutable_changed().await {
            return invalid;
        }

        // 3 and 3b. Common fields, and a typed config that decodes (3c,
        // references, holds the pass above or does not apply).
        let common = match rules {
            Ok(common) => common,
            Err(stop) => return self.stop(stop).await,
        };

        // 4 and 5. The package's validation: its messages go to the log,
        // and only those it marked user-facing to the Invalid write's Event.
        // (A package without its own validation finds no errors.)
        match self.run_callback("validate", |c, o| c.validate(o)).await {
            None => return self.fail(Reason::ValidationFailed).await,
            Some(errors) if !errors.is_empty() => {
                self.log_invalid(&errors);
                self.user_facing = errors.for_users();
                return self.stop(Stop::Invalid).await;
            }
            Some(_) => {}
        }
        // Identity is needed for the lock before any effect may run.
        if self.identity.is_none() {
            return self.fail(Reason::ExecutionFailed).await;
        }

        // 6. Destruction protection, even while suspended.
        let key = &self.controller.config.names.destroy_protection_key;
        if deleting && spec::prevents_destroy(&self.snapshot, key) {
            let t = Transition::new(
                Phase::Blocked,
                Reason::DestructionProtected,
                Next::After(common.interval_ms),
            );
            return self.write(t).await;
        }

        // 7. Suspended.
        if !deleting && common.suspend {
            return self
                .write(Transition::new(
                    Phase::Suspended,
                    Reason::Suspended,
                    Next::OnEdit,
                ))
                .await;
        }

        // 8. Act (observe only, for imported infrastructure), with the
        // connection Secret put back first.
        if !deleting {
            if let Some(report) = self.restore_connection().await? {
                return Ok(report);
            }
        }
        match common.management {
            ManagementPolicy::Observe => self.import(common.interval_ms).await,
            ManagementPolicy::Full => self.act(common.interval_ms).await,
        }
    }

    /// Rules 3 to 3c: a write the plan decided before any package code ran.
    async fn stop(&mut self, stop: Stop) -> Result<Report, Halt> {
        let (phase, reason, next) = match stop {
            Stop::Invalid => (Phase::Invalid, Reason::InvalidConfiguration, Next::OnEdit),
            Stop::Undecodable(error) => {
                // Invalid like a failed validation; the message is for the
                // operator's log only.
                tracing::info!(
                    namespace = resource::namespace(&self.snapshot),
                    name = resource::name(&self.snapshot),
                    %error,
                    "configuration does not match the package's config type"
                );
                (Phase::Invalid, Reason::InvalidConfiguration, Next::OnEdit)
            }
            Stop::Cycle => (Phase::Invalid, Reason::CyclicReference, Next::OnEdit),
            Stop::Waiting(interval, _) => (
                Phase::Waiting,
                Reason::DependencyNotReady,
                Next::After(interval),
            ),
        };
        self.write(Transition::new(phase, reason, next)).await
    }

    /// Rule 1: removes only our finalizer. If the object survives (someone
    /// else's finalizer), records that deletion was seen so it stops being due.
    async fn release(&mut self) -> Result<Report, Halt> {
        if self.has_finalizer() {
            self.set_finalizer(false).await?;
        }
        self.forget();
        self.record_lingering_deletion().await?;
        Ok(Report::Released)
    }

    /// After our finalizer is gone, the object lives on only if another
    /// finalizer holds it; mark it seen and check back after the interval.
    pub(super) async fn record_lingering_deletion(&mut self) -> Result<(), Halt> {
        if resource::finalizers(&self.snapshot).is_empty() {
            return Ok(());
        }
        let interval = spec::parse(&self.snapshot).map_or(DEFAULT_INTERVAL_MS, |c| c.interval_ms);
        let t = Transition::new(Phase::Deleting, Reason::Deleting, Next::After(interval));
        self.write(t).await.map(drop)
    }
}
