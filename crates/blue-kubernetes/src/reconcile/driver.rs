//! The driver of a pass: it performs what the decision (`decision.rs`,
//! the rules without I/O) says, with the pass's writes (`pass.rs`) and
//! the package's effects (`act.rs`, `steps.rs`), and feeds back what
//! happened.

use super::act::{effect, observe, publish_while_observing, restore_connection, run_callback};
use super::pass::Pass;
use super::prepare::Prepared;
use super::prepare::Terms;
use super::protocol::{Do, Happened, Note};
use super::protocol::{Halt, PassOutcome, Report};
use super::steps::finish_open_run;
use crate::domain::resource;
use crate::telemetry::log;
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
