//! The driver's package effects: `observe` (publishing while it runs when
//! an effect is expected), `converge` or `delete`, and the connection
//! Secret put back before them; what they report is kept for the pass.
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
use super::protocol::Effect;
use super::report::Halt;
use crate::connection::ConnectionError;
use crate::domain::resource;
use crate::domain::status::Transition;
use crate::package::callback::{self, Failure, Pick};
use crate::package::observation::{Observation, Outputs};
use crate::telemetry::log::Subject;
use crate::test_hooks::Point;

impl Pass<'_> {
    /// Runs a callback; a failure is remembered for the log line of the
    /// Failed status it leads to.
    pub(super) async fn run_callback<T: Send + 'static>(
        &mut self,
        name: &'static str,
        pick: Pick<T>,
    ) -> Option<T> {
        let result = callback::run(
            self.controller,
            self.package,
            &*self.callbacks,
            name,
            pick,
            &self.options,
        )
        .await;
        self.noted(name, result)
    }

    /// What callback `name` returned; a failure is remembered (see
    /// `run_callback`).
    pub(super) fn noted<T>(&mut self, name: &'static str, result: Result<T, Failure>) -> Option<T> {
        result
            .map_err(|failure| self.decision.failed(name, failure))
            .ok()
    }

    /// Publishes `t` and observes at the same time. A lost publish stops
    /// the pass whatever was observed.
    pub(super) async fn publish_while_observing(
        &mut self,
        t: Transition,
    ) -> Result<Option<Observation>, Halt> {
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
        let (published, observed) = tokio::join!(self.write(t), observing);
        published?;
        Ok(self
            .noted("observe", observed)
            .map(|observed| self.kept(observed)))
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

    /// Runs `converge` (`true`) or `delete`; a lost step record stops the
    /// pass.
    pub(super) async fn effect(&mut self, converge: bool) -> Result<Effect, Halt> {
        let answer = match converge {
            true => self.run_effect("converge", |c, o| c.converge(o)).await?,
            false => self.run_effect("delete", |c, o| c.delete(o)).await?,
        };
        let succeeded = answer.as_ref().is_some_and(|a| !a.failed);
        if let Some(answer) = answer {
            self.keep_outputs(answer.outputs);
            if converge && succeeded {
                self.note_external_name(answer.external_name);
                // Recorded before anything else: what was made must be
                // found again by the next pass, even after a crash.
                self.record_external_name().await?;
            }
        }
        let effect = self.settle_run(succeeded);
        if converge {
            self.reached(Point::AfterConverge).await;
        }
        Ok(effect)
    }

    /// A callback reported `name` (see `external_name.rs`).
    fn note_external_name(&mut self, name: Option<String>) {
        let package = self.package;
        let subject = Subject {
            descriptor: package.descriptor(),
            object: &self.snapshot,
        };
        self.external_name.note(name, &mut self.options, subject);
    }

    /// The latest outputs of the pass win (see `crate::package::outputs`).
    fn keep_outputs(&mut self, outputs: Option<Outputs>) {
        if outputs.is_some() {
            self.outputs = outputs;
        }
    }

    /// Restores a deleted or altered connection Secret; `false` when that
    /// is not possible (the pass fails, retried with backoff).
    pub(super) async fn restore_connection(&mut self) -> Result<bool, Halt> {
        let Some(connection) = self.options.connection().cloned() else {
            return Ok(true);
        };
        let Err(e) = connection.restore().await else {
            return Ok(true);
        };
        // The error names no value, only what went wrong.
        tracing::warn!(
            namespace = resource::namespace(&self.snapshot),
            name = resource::name(&self.snapshot),
            secret = connection.secret_name(),
            error = %e,
            "connection secret could not be restored"
        );
        match e {
            ConnectionError::Transport(blue_kubernetes_client::ErrorKind::Unavailable) => {
                let kind = blue_kubernetes_client::ErrorKind::Unavailable;
                Err(Halt::Transport(blue_kubernetes_client::Error::kubectl(
                    "connection",
                    kind,
                )))
            }
            _ => Ok(false),
        }
    }
}
