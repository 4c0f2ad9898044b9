//! The driver of a pass: it performs what the decision (`decision.rs`,
//! the rules without I/O) says, with the pass's writes (`pass.rs`) and
//! the package's effects (here: `observe`, `converge` or `delete`, the
//! connection Secret put back before them; `steps.rs` answers durable
//! steps while an effect runs), and feeds back what happened; what the
//! callbacks report is kept for the pass.
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
use super::prepare::{Prepared, Terms};
use super::protocol::{Do, Effect, Halt, Happened, Note, PassOutcome, Report};
use super::steps::{finish_open_run, run_effect, settle_run};
use crate::connection::ConnectionError;
use crate::domain::resource;
use crate::domain::status::Transition;
use crate::package::callback::{self, Pick};
use crate::package::observation::{Observation, Outputs};
use crate::telemetry::log::{self, Subject};
use crate::test_hooks::Point;
use crate::Error;
use serde_json::Value;

/// Takes the identity lock and runs the rules under it on `terms`
/// ([`Report::Busy`] when another pass holds it).
pub(crate) async fn run_locked(prepared: Prepared<'_>, terms: Terms) -> PassOutcome {
    match prepared.lock() {
        Some(_lock) => run(prepared, terms).await,
        None => PassOutcome::unwritten(Ok(Report::Busy)),
    }
}

/// Runs the rules on `terms`, under the lock the caller holds.
pub(super) async fn run(prepared: Prepared<'_>, terms: Terms) -> PassOutcome {
    let mut pass = Pass::new(prepared, terms);
    let started = version(&pass.snapshot);
    let result = drive(&mut pass).await;
    let now = version(&pass.snapshot);
    // A lost race proves the server moved past our last write: its
    // event comes before the one that beat us (and may be taken in
    // already), so waiting for it could wait for a version that never
    // comes again, leaving the edit that beat us unhandled.
    let lost = matches!(result, Err(Halt::Lost(Report::Conflict | Report::NotFound)));
    let report = match result {
        Ok(report) | Err(Halt::Lost(report)) => Ok(report),
        Err(Halt::Transport(e)) => Err(Error::Transport(e)),
    };
    PassOutcome {
        report,
        written: now.filter(|now| !lost && Some(now) != started.as_ref()),
        next_check: pass.next_check,
    }
}

/// Performs what the decision says until it stops the pass.
async fn drive(pass: &mut Pass<'_>) -> Result<Report, Halt> {
    let mut happened = Happened::Began;
    loop {
        happened = match pass.decision.step(&pass.snapshot, happened) {
            Do::Validate => {
                let found = run_callback(pass, "validate", |c, o| c.validate(o)).await;
                Happened::Validated(found)
            }
            Do::RestoreConnection => Happened::Restored(restore_connection(pass).await),
            Do::SetFinalizer(present) => Happened::Done(pass.set_finalizer(present).await),
            Do::Observe(None) => Happened::Observed(Ok(observe(pass).await)),
            Do::Observe(Some(t)) => Happened::Observed(publish_while_observing(pass, t).await),
            Do::Publish(t) => Happened::Wrote(pass.write(t).await),
            Do::Act(converge) => Happened::Acted(effect(pass, converge).await),
            Do::FinishOpenRun => {
                finish_open_run(pass);
                Happened::Done(Ok(()))
            }
            Do::Release {
                finalizer,
                destroyed,
            } => Happened::Done(pass.release(finalizer, destroyed).await),
            Do::Write(t, note) => {
                log_note(pass, note);
                Happened::Wrote(pass.write(t).await)
            }
            Do::Stop(result) => return result,
        };
    }
}

/// Why a write is made, for the operator's log.
fn log_note(pass: &Pass<'_>, note: Option<Note>) {
    match note {
        None => {}
        // For the operator's log only.
        Some(Note::Undecodable(error)) => tracing::info!(
            namespace = resource::namespace(&pass.snapshot),
            name = resource::name(&pass.snapshot),
            %error,
            "configuration does not match the package's config type"
        ),
        Some(Note::Invalid(errors)) => pass.teller().log_invalid(&errors),
        Some(Note::ImmutableChanged(fields)) => log::warn_about!(
            pass.subject(),
            fields = fields.as_str(),
            "immutable config field changed since it was accepted; nothing runs until the edit is reverted"
        ),
    }
}

fn version(object: &Value) -> Option<String> {
    object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Runs a callback; a failure is remembered for the log line of the
/// Failed status it leads to.
async fn run_callback<T: Send + 'static>(
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
async fn publish_while_observing(
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

async fn observe(pass: &mut Pass<'_>) -> Option<Observation> {
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
async fn effect(pass: &mut Pass<'_>, converge: bool) -> Result<Effect, Halt> {
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

/// A callback reported `name` (see `Reported` in `pass.rs`).
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
async fn restore_connection(pass: &mut Pass<'_>) -> Result<bool, Halt> {
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
