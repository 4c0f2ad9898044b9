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
use super::protocol::Halt;
use super::steps::{run_effect, settle_run};
use crate::connection::ConnectionError;
use crate::domain::resource;
use crate::domain::status::Transition;
use crate::package::callback::{self, Pick};
use crate::package::observation::{Observation, Outputs};
use crate::telemetry::log::Subject;
use crate::test_hooks::Point;

/// Runs a callback; a failure is remembered for the log line of the
/// Failed status it leads to.
pub(super) async fn run_callback<T: Send + 'static>(
    pass: &mut Pass<'_>,
    name: &'static str,
    pick: Pick<T>,
) -> Option<T> {
    let result = callback::run(
        pass.controller,
        pass.package,
        &*pass.callbacks,
        name,
        pick,
        &pass.options,
    )
    .await;
    pass.noted(name, result)
}

/// Publishes `t` and observes at the same time. A lost publish stops
/// the pass whatever was observed.
pub(super) async fn publish_while_observing(
    pass: &mut Pass<'_>,
    t: Transition,
) -> Result<Option<Observation>, Halt> {
    let (controller, package) = (pass.controller, pass.package);
    let (options, callbacks) = (pass.options.clone(), pass.callbacks.clone());
    let observing = callback::run(
        controller,
        package,
        &*callbacks,
        "observe",
        |c, o| c.observe(o),
        &options,
    );
    let (published, observed) = tokio::join!(pass.write(t), observing);
    published?;
    Ok(pass
        .noted("observe", observed)
        .map(|observed| kept(pass, observed)))
}

pub(super) async fn observe(pass: &mut Pass<'_>) -> Option<Observation> {
    let observed = run_callback(pass, "observe", |c, o| c.observe(o)).await?;
    Some(kept(pass, observed))
}

/// An observation, its outputs and external name kept for the pass.
fn kept(pass: &mut Pass<'_>, mut observed: Observation) -> Observation {
    keep_outputs(pass, observed.take_outputs());
    note_external_name(pass, observed.take_external_name());
    observed
}

/// Runs `converge` (`true`) or `delete`; a lost step record stops the
/// pass.
pub(super) async fn effect(pass: &mut Pass<'_>, converge: bool) -> Result<Effect, Halt> {
    let answer = match converge {
        true => run_effect(pass, "converge", |c, o| c.converge(o)).await?,
        false => run_effect(pass, "delete", |c, o| c.delete(o)).await?,
    };
    let succeeded = answer.as_ref().is_some_and(|a| !a.failed);
    if let Some(answer) = answer {
        keep_outputs(pass, answer.outputs);
        if converge && succeeded {
            note_external_name(pass, answer.external_name);
            // Recorded before anything else: what was made must be
            // found again by the next pass, even after a crash.
            pass.record_external_name().await?;
        }
    }
    let effect = settle_run(pass, succeeded);
    if converge {
        pass.reached(Point::AfterConverge).await;
    }
    Ok(effect)
}

/// A callback reported `name` (see `external_name.rs`).
fn note_external_name(pass: &mut Pass<'_>, name: Option<String>) {
    let package = pass.package;
    let subject = Subject {
        descriptor: package.descriptor(),
        object: &pass.snapshot,
    };
    pass.external_name.note(name, &mut pass.options, subject);
}

/// The latest outputs of the pass win (see `crate::package::outputs`).
fn keep_outputs(pass: &mut Pass<'_>, outputs: Option<Outputs>) {
    if outputs.is_some() {
        pass.outputs = outputs;
    }
}

/// Restores a deleted or altered connection Secret; `false` when that
/// is not possible (the pass fails, retried with backoff).
pub(super) async fn restore_connection(pass: &mut Pass<'_>) -> Result<bool, Halt> {
    let Some(connection) = pass.options.connection().cloned() else {
        return Ok(true);
    };
    let Err(e) = connection.restore().await else {
        return Ok(true);
    };
    // The error names no value, only what went wrong.
    tracing::warn!(
        namespace = resource::namespace(&pass.snapshot),
        name = resource::name(&pass.snapshot),
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
