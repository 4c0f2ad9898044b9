//! The pass's side of durable steps: it runs `converge` or `delete` with a
//! [`Steps`] handle and answers the handle's requests while the callback
//! runs, so every step record is one of the pass's own guarded status
//! writes (logged, fenced and counted like the others).

use super::pass::Pass;
use super::protocol::Effect;
use super::protocol::Halt;
use super::workflow::Workflow;
use crate::domain::resource::{self, status};
use crate::package::callback::{self, Failure, Pick};
use crate::package::{options::CallbackInput, result::Answer};
use crate::resource::Reason;
use crate::steps::{valid_name, Begun, Desired, Ended, Record, Refused};
use crate::steps::{Request, Started, State};
use crate::steps::{Step, StepError, Steps};
use crate::telemetry::log;
use crate::test_hooks::Point;
use crate::Controller;
use serde_json::Value;
use std::sync::atomic::Ordering;

/// The desired state the pass's run is for. (A function of the fields it
/// reads, so the run in memory can be changed while it is held.)
fn desired<'a>(
    snapshot: &'a Value,
    controller: &Controller,
    options: &CallbackInput,
) -> Desired<'a> {
    let names = &controller.config.names;
    Desired {
        uid: resource::uid(snapshot).unwrap_or_default(),
        generation: resource::generation(snapshot),
        request: resource::request_token(snapshot, &names.request_annotation),
        event: options.intent(),
    }
}

fn desired_of<'p>(pass: &'p Pass<'_>) -> Desired<'p> {
    desired(&pass.snapshot, pass.controller, &pass.options)
}

/// The package declares durable steps.
pub(super) fn stepped(pass: &Pass<'_>) -> bool {
    pass.package.schema().steps
}

/// Runs the `converge` or `delete` callback `name`, answering its
/// steps; a step record that could not be written stops the pass.
pub(super) async fn run_effect(
    pass: &mut Pass<'_>,
    name: &'static str,
    pick: Pick<Answer>,
) -> Result<Option<Answer>, Halt> {
    let called = match stepped(pass) {
        true => call_answering_steps(pass, name, pick).await,
        false => {
            let options = pass.options.clone().with_steps(Steps::undeclared());
            callback::run(
                pass.controller,
                pass.package,
                &*pass.callbacks,
                name,
                pick,
                &options,
            )
            .await
        }
    };
    if let Some(halt) = pass.workflow.as_mut().and_then(|w| w.halt.take()) {
        return Err(halt);
    }
    Ok(pass.noted(name, called))
}

async fn call_answering_steps(
    pass: &mut Pass<'_>,
    name: &'static str,
    pick: Pick<Answer>,
) -> Result<Answer, Failure> {
    let (steps, mut requests) = Steps::linked();
    let options = pass.options.clone().with_steps(steps);
    let (controller, package) = (pass.controller, pass.package);
    let callbacks = pass.callbacks.clone();
    let called = callback::run(controller, package, &*callbacks, name, pick, &options);
    tokio::pin!(called);
    loop {
        tokio::select! {
            result = &mut called => return result,
            Some(request) = requests.recv() => answer(pass, request).await,
        }
    }
}

async fn answer(pass: &mut Pass<'_>, request: Request) {
    match request {
        Request::Begin { name, reply } => {
            let answer = begin_step(pass, &name).await;
            let _ = reply.send(answer);
        }
        Request::End { name, ended, reply } => {
            pass.reached(Point::AfterStep(&name)).await;
            let _ = reply.send(end_step(pass, &name, ended));
        }
    }
}

/// The run this pass continues (the stored one of this desired state,
/// unless it is done or behind what this process already used) or
/// starts.
fn workflow_of<'p>(pass: &'p mut Pass<'_>) -> &'p mut Workflow {
    if pass.workflow.is_none() {
        let stored = Record::stored(status(&pass.snapshot));
        let desired = desired_of(pass);
        let mark = pass.controller.memory.steps(desired.uid);
        let chosen = Record::current(stored, &desired, mark, pass.controller.now());
        pass.workflow = Some(Workflow::chosen(chosen));
    }
    pass.workflow.as_mut().expect("just set")
}

/// Step `name` is about to start: hands back a recorded result, or
/// records it `Running` (the first write of a pass publishes
/// Reconciling with it) before the step may run.
async fn begin_step(pass: &mut Pass<'_>, name: &str) -> Result<Started, StepError> {
    if pass.workflow.as_ref().is_some_and(|w| w.halt.is_some()) {
        return Err(StepError::Halted);
    }
    if !valid_name(name) {
        return Err(refuse(pass, name, StepError::InvalidName(name.to_string())));
    }
    // Answering a second use of a name with the first one's result
    // would hand one item's result to another.
    if !workflow_of(pass).named.insert(name.to_string()) {
        return Err(refuse(pass, name, StepError::Repeated(name.to_string())));
    }
    if stopping_before(pass, name) {
        return Err(stop_at_boundary(pass).await);
    }
    let now = pass.controller.now();
    let desired = desired(&pass.snapshot, pass.controller, &pass.options);
    let workflow = pass.workflow.as_mut().expect("named above");
    let begun = workflow.record.begin(&desired, name, now);
    let run = desired.run_id(workflow.record.sequence);
    let (key, interrupted) = match begun {
        Ok(Begun::Recorded(result)) => return Ok(Started::Recorded(result)),
        Ok(Begun::Run { key, interrupted }) => (key, interrupted),
        Err(_) => return Err(refuse(pass, name, StepError::TooManySteps)),
    };
    let workflow = workflow_of(pass);
    workflow.running = Some(name.to_string());
    workflow.ran = true;
    // The keys go out only once the record holding the run landed
    // (`workflow_written` marks it started then).
    match pass.publish().await {
        Ok(_) => {
            pass.reached(Point::BeforeStep(name)).await;
            Ok(Started::Run(Step::new(name, key, run, interrupted)))
        }
        Err(halt) => {
            workflow_of(pass).halt = Some(halt);
            Err(StepError::Halted)
        }
    }
}

/// The runtime is stopping and step `name` would run after one that
/// ran in this pass.
fn stopping_before(pass: &Pass<'_>, name: &str) -> bool {
    pass.controller.stopping.load(Ordering::SeqCst)
        && pass
            .workflow
            .as_ref()
            .is_some_and(|w| w.ran && !w.record.is_done(name))
}

/// Ends the pass at this boundary for a stopping runtime: what the
/// steps so far recorded is written (as the boundary write would have,
/// without the next step), and the next process resumes here.
async fn stop_at_boundary(pass: &mut Pass<'_>) -> StepError {
    let halt = match pass.publish().await {
        Ok(report) => Halt::Lost(report),
        Err(halt) => halt,
    };
    workflow_of(pass).halt = Some(halt);
    StepError::Stopping
}

/// Step `name` ended: recorded in memory, written with the next write.
fn end_step(pass: &mut Pass<'_>, name: &str, ended: Ended) -> Result<(), StepError> {
    let now = pass.controller.now();
    let workflow = workflow_of(pass);
    if workflow.running.as_deref() != Some(name) {
        return Err(StepError::Unavailable);
    }
    workflow.running = None;
    match ended {
        Ended::Returned(result) if pass.holds_generated(&result) => {
            workflow_of(pass).record.failed(name, now);
            let error = StepError::ResultHoldsSecret(name.to_string());
            Err(refuse(pass, name, error))
        }
        Ended::Returned(result) => match workflow_of(pass).record.done(name, result, now) {
            Ok(()) => Ok(()),
            Err(Refused::ResultTooLarge(bytes)) => {
                let step = name.to_string();
                Err(refuse(
                    pass,
                    name,
                    StepError::ResultTooLarge { step, bytes },
                ))
            }
            Err(Refused::TooManySteps) => Err(refuse(pass, name, StepError::TooManySteps)),
        },
        Ended::Failed => {
            workflow_of(pass).record.failed(name, now);
            Ok(())
        }
        Ended::Unserializable => {
            workflow_of(pass).record.failed(name, now);
            refuse(pass, name, StepError::Unserializable(name.to_string()));
            Ok(())
        }
    }
}

/// A step broke the step rules: logged for the operator, and the pass
/// fails (`InvalidStep`) whatever the callback does with the error.
fn refuse(pass: &mut Pass<'_>, name: &str, error: StepError) -> StepError {
    log::warn_about!(
        pass.subject(),
        // A name the package got wrong is its own text: redacted as
        // any other.
        step = pass.redacted(name),
        why = pass.redacted(&error.to_string()),
        "durable step refused; the pass fails"
    );
    pass.steps_broken = true;
    error
}

/// After the effect callback: a step that never returned (a panic)
/// failed; the run is done when the callback succeeded, else it is
/// retried from where it stands, unless the callback rejected the
/// input: then the run ends there, and the attempt after the user's
/// fix starts a new one. Decides how the effect counts.
pub(super) fn settle_run(pass: &mut Pass<'_>, succeeded: bool) -> Effect {
    let now = pass.controller.now();
    let broken = pass.steps_broken;
    let rejected = !succeeded && !broken && pass.decision.rejection().is_some();
    if let Some(workflow) = pass.workflow.as_mut() {
        if let Some(name) = workflow.running.take() {
            workflow.record.failed(&name, now);
        }
        match succeeded && !broken {
            true => workflow.record.finish(now),
            false if rejected => {
                workflow.record.run_failed();
                workflow.record.finish(now);
            }
            false => workflow.record.run_failed(),
        }
    }
    match (succeeded, broken) {
        (_, true) => Effect::Failed(Reason::InvalidStep),
        (true, false) => Effect::Succeeded,
        (false, false) => Effect::Failed(Reason::ExecutionFailed),
    }
}

/// The resource is Ready for its desired state: a run of that state
/// still open (its last pass died after its work, or the
/// infrastructure came right by itself) ends, so the next effect
/// starts a new run instead of skipping steps from this one; the step
/// it cut short is recorded `Interrupted`, not left `Running`.
pub(super) fn finish_open_run(pass: &mut Pass<'_>) {
    if !stepped(pass) || pass.workflow.is_some() {
        return;
    }
    let Some(stored) = Record::stored(status(&pass.snapshot)) else {
        return;
    };
    let desired = desired_of(pass);
    if stored.is_for(&desired) && stored.state != State::Done {
        let mut stored = stored;
        let forged_keys = stored.derive_keys(&desired);
        let mut workflow = Workflow::new(stored);
        workflow.ignored.forged_keys = forged_keys;
        workflow.record.finish(pass.controller.now());
        pass.workflow = Some(workflow);
    }
}
