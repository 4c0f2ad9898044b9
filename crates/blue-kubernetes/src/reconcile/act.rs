//! Rule 8: observe, then converge or destroy, publishing before any effect.
//!
//! When an effect is expected (the desired state changed, or the resource
//! is being destroyed), Reconciling (or Deleting) is published *while*
//! observing rather than after: observing is read-only, so publish before
//! effect (the crate README, "Guarantees": published before the first
//! effect, nothing done if the publish loses a race) still holds, and the
//! effect comes one round trip sooner. A periodic check does not expect
//! an effect and keeps the sequential order, so one that finds everything
//! matching writes status once and publishes nothing. A package with
//! durable steps publishes with its first step's record instead
//! (`steps.rs`), so it observes first.

use super::pass::Pass;
use super::report::{Halt, Report};
use super::steps::Effect;
use crate::domain::due::desired_state_changed;
use crate::domain::resource::is_deleting;
use crate::domain::status::{Next, Transition};
use crate::package::callback;
use crate::package::observation::Observation;
use crate::package::observation::Outputs;
use crate::resource::{Phase, Reason};
use crate::test_hooks::Point;

impl Pass<'_> {
    pub(super) async fn act(&mut self, interval_ms: u64) -> Result<Report, Halt> {
        let deleting = is_deleting(&self.snapshot);
        if !deleting && !self.has_finalizer() {
            self.set_finalizer(true).await?;
        }
        let expect_effect = deleting
            || self.terms.expects_effect
            || desired_state_changed(
                &self.snapshot,
                &self.controller.config.names.request_annotation,
            );
        // With durable steps, the first step's record is the publish.
        let observed = match expect_effect && !self.stepped() {
            true => self.publish_while_observing().await?,
            false => self.observe().await,
        };
        let Some(observed) = observed else {
            return self.fail(Reason::ExecutionFailed).await;
        };
        if deleting {
            self.destroy(observed).await
        } else {
            self.converge(observed, interval_ms).await
        }
    }

    /// Publishes Reconciling (Deleting) and observes at the same time. A
    /// lost publish stops the pass whatever was observed.
    async fn publish_while_observing(&mut self) -> Result<Option<Observation>, Halt> {
        let (phase, reason) = self.effect_phase();
        let (controller, package) = (self.controller, self.package);
        let (options, callbacks) = (self.options.clone(), self.callbacks.clone());
        let observing = callback::run(
            controller,
            package,
            &*callbacks,
            "observe",
            |c, o| c.observe(o),
            &options,
        );
        let (published, observed) = tokio::join!(self.publish(phase, reason), observing);
        published?;
        Ok(self
            .noted("observe", observed)
            .map(|observed| self.kept(observed)))
    }

    async fn converge(
        &mut self,
        mut observed: Observation,
        interval_ms: u64,
    ) -> Result<Report, Halt> {
        if !(observed.exists && observed.matches) {
            if !self.published && !self.stepped() {
                self.publish(Phase::Reconciling, Reason::Reconciling)
                    .await?;
            }
            let effect = self.effect("converge").await?;
            self.reached(Point::AfterConverge).await;
            if let Effect::Failed(reason) = effect {
                return self.fail(reason).await;
            }
            let Some(again) = self.observe().await else {
                return self.fail(Reason::ExecutionFailed).await;
            };
            observed = again;
        }
        // Matching but unready is retried by observing on the next pass,
        // never by converging again.
        if !observed.is_ready() {
            return self.fail(Reason::NotReady).await;
        }
        self.finish_open_run();
        let mut t = Transition::new(Phase::Ready, Reason::Converged, Next::After(interval_ms));
        t.identity = self.identity_record();
        t.immutable_digest = self.immutable_record();
        self.write(t).await
    }

    async fn destroy(&mut self, observed: Observation) -> Result<Report, Halt> {
        if observed.exists {
            if !self.published && !self.stepped() {
                self.publish(Phase::Deleting, Reason::Deleting).await?;
            }
            if let Effect::Failed(reason) = self.effect("delete").await? {
                return self.fail(reason).await;
            }
            // The finalizer goes only once absence has been observed.
            match self.observe().await {
                Some(again) if !again.exists => {}
                _ => return self.fail(Reason::ExecutionFailed).await,
            }
        }
        self.set_finalizer(false).await?;
        if let Some(events) = &self.controller.telemetry.events {
            events.released(&self.snapshot);
        }
        self.forget();
        self.record_lingering_deletion().await?;
        Ok(Report::Released)
    }

    /// Records that an effect is about to run, with the profile and identity
    /// it runs under (and, with durable steps, the step about to start). A
    /// conflict here stops the pass before any effect.
    pub(super) async fn publish(&mut self, phase: Phase, reason: Reason) -> Result<(), Halt> {
        let mut t = Transition::new(phase, reason, Next::Now);
        t.acknowledge = false;
        t.identity = self.identity_record();
        t.immutable_digest = self.immutable_record();
        self.write(t).await?;
        self.published = true;
        Ok(())
    }

    pub(super) async fn observe(&mut self) -> Option<Observation> {
        let observed = self.run_callback("observe", |c, o| c.observe(o)).await?;
        Some(self.kept(observed))
    }

    /// An observation, its outputs and external name kept for the pass.
    fn kept(&mut self, mut observed: Observation) -> Observation {
        self.keep_outputs(observed.take_outputs());
        self.note_external_name(observed.take_external_name());
        observed
    }

    /// Runs `converge` or `delete`; a lost step record stops the pass.
    async fn effect(&mut self, name: &'static str) -> Result<Effect, Halt> {
        let answer = match name {
            "converge" => self.run_effect(name, |c, o| c.converge(o)).await?,
            _ => self.run_effect(name, |c, o| c.delete(o)).await?,
        };
        let succeeded = answer.as_ref().is_some_and(|a| !a.failed);
        if let Some(answer) = answer {
            self.keep_outputs(answer.outputs);
            if name == "converge" && succeeded {
                self.note_external_name(answer.external_name);
                // Recorded before anything else: what was made must be
                // found again by the next pass, even after a crash.
                self.record_external_name().await?;
            }
        }
        Ok(self.settle_run(succeeded))
    }

    /// The latest outputs of the pass win (see `crate::package::outputs`).
    fn keep_outputs(&mut self, outputs: Option<Outputs>) {
        if outputs.is_some() {
            self.outputs = outputs;
        }
    }
}
