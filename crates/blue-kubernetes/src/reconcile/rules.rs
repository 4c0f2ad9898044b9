//! The ordered rules of one reconcile; the first that applies wins.

use super::pass::{Halt, Pass};
use super::references::Resolution;
use super::Report;
use crate::connection::secret_ref_valid;
use crate::domain::resource::{self, has_finalizer, is_deleting, status_str};
use crate::domain::spec::{self, DeletionPolicy, ManagementPolicy, DEFAULT_INTERVAL_MS};
use crate::domain::status::{Next, Transition};
use crate::{Names, Phase, Reason};
use serde_json::Value;

/// Rule 1 applies: deleting, and Retain, observe-only management or our
/// finalizer already gone.
pub(super) fn releases_without_callbacks(r: &Value, names: &Names) -> bool {
    is_deleting(r)
        && (spec::deletion_policy(r) == Some(DeletionPolicy::Retain)
            || spec::management_policy(r) == Some(ManagementPolicy::Observe)
            || !has_finalizer(r, &names.finalizer))
}

impl Pass<'_> {
    pub(super) async fn decide(&mut self) -> Result<Report, Halt> {
        let deleting = is_deleting(&self.snapshot);

        // 1. Retain (or nothing of ours to release): no callback, config need not be valid.
        let names = &self.controller.config.names;
        if releases_without_callbacks(&self.snapshot, names) {
            return self.release().await;
        }

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

        // 3. Common fields.
        let Some(common) = spec::parse(&self.snapshot) else {
            return self.invalid().await;
        };
        if !spec::protection_well_typed(&self.snapshot, &names.destroy_protection_key) {
            return self.invalid().await;
        }
        if self.package.schema().connection && !secret_ref_valid(&self.snapshot) {
            return self.invalid().await;
        }

        // 3b. A typed config that does not decode is invalid like a failed
        // validation: its message is for the operator's log only.
        if let Some(error) = &self.config_error {
            tracing::info!(
                namespace = resource::namespace(&self.snapshot),
                name = resource::name(&self.snapshot),
                %error,
                "configuration does not match the package's config type"
            );
            return self.invalid().await;
        }

        // 3c. References: no callback runs until every referenced resource
        // is Ready; a resource being deleted does not wait.
        if !deleting {
            match &self.references {
                Some(Resolution::Malformed) => return self.invalid().await,
                Some(Resolution::Cycle) => {
                    let t = Transition::new(Phase::Invalid, Reason::CyclicReference, Next::OnEdit);
                    return self.write(t).await;
                }
                Some(Resolution::Waiting(_)) => {
                    let t = Transition::new(
                        Phase::Waiting,
                        Reason::DependencyNotReady,
                        Next::After(common.interval_ms),
                    );
                    return self.write(t).await;
                }
                Some(Resolution::Resolved(_)) | None => {}
            }
        }

        // 4 and 5. The package's validation: its messages go to the log,
        // and only those it marked user-facing to the Invalid write's Event.
        // (A package without its own validation finds no errors.)
        match self.run_callback("validate", |c, o| c.validate(o)).await {
            None => return self.fail(Reason::ValidationFailed).await,
            Some(errors) if !errors.is_empty() => {
                self.log_invalid(&errors);
                self.user_facing = errors.for_users();
                return self.invalid().await;
            }
            Some(_) => {}
        }
        // Identity is needed for the lock before any effect may run.
        if self.identity.is_none() {
            return self.fail(Reason::ExecutionFailed).await;
        }

        // 6. Destruction protection, even while suspended.
        if deleting && spec::prevents_destroy(&self.snapshot, &names.destroy_protection_key) {
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

    async fn invalid(&mut self) -> Result<Report, Halt> {
        let t = Transition::new(Phase::Invalid, Reason::InvalidConfiguration, Next::OnEdit);
        self.write(t).await
    }

    /// Rule 1: removes only our finalizer. If the object survives (someone
    /// else's finalizer), records that deletion was seen so it stops being due.
    async fn release(&mut self) -> Result<Report, Halt> {
        if self.has_finalizer() {
            self.set_finalizer(false).await?;
        }
        self.forget_connection();
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
