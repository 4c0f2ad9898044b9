//! The pass's side of durable steps: it runs `converge` or `delete` with a
//! [`Steps`] handle and answers the handle's requests while the callback
//! runs, so every step record is one of the pass's own guarded status
//! writes (logged, fenced and counted like the others).

use super::pass::Pass;
use super::protocol::Effect;
use super::report::Halt;
use super::workflow::{Notes, Workflow};
use crate::domain::resource::{self, is_deleting, status};
use crate::domain::status::Transition;
use crate::package::callback::{self, Failure, Pick};
use crate::package::{options::CallbackInput, result::Answer};
use crate::resource::{Phase, Reason};
use crate::steps::{valid_name, Begun, Desired, Ended, Ignored, Record, Refused};
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

impl Pass<'_> {
    fn desired(&self) -> Desired<'_> {
        desired(&self.snapshot, self.controller, &self.options)
    }

    /// The package declares durable steps.
    pub(super) fn stepped(&self) -> bool {
        self.package.schema().steps
    }

    /// Runs the `converge` or `delete` callback `name`, answering its
    /// steps; a step record that could not be written stops the pass.
    pub(super) async fn run_effect(
        &mut self,
        name: &'static str,
        pick: Pick<Answer>,
    ) -> Result<Option<Answer>, Halt> {
        let called = match self.stepped() {
            true => self.call_answering_steps(name, pick).await,
            false => {
                let options = self.options.clone().with_steps(Steps::undeclared());
                callback::run(
                    self.controller,
                    self.package,
                    &*self.callbacks,
                    name,
                    pick,
                    &options,
                )
                .await
            }
        };
        if let Some(halt) = self.workflow.as_mut().and_then(|w| w.halt.take()) {
            return Err(halt);
        }
        Ok(self.noted(name, called))
    }

    async fn call_answering_steps(
        &mut self,
        name: &'static str,
        pick: Pick<Answer>,
    ) -> Result<Answer, Failure> {
        let (steps, mut requests) = Steps::linked();
        let options = self.options.clone().with_steps(steps);
        let (controller, package) = (self.controller, self.package);
        let callbacks = self.callbacks.clone();
        let called = callback::run(controller, package, &*callbacks, name, pick, &options);
        tokio::pin!(called);
        loop {
            tokio::select! {
                result = &mut called => return result,
                Some(request) = requests.recv() => self.answer(request).await,
            }
        }
    }

    async fn answer(&mut self, request: Request) {
        match request {
            Request::Begin { name, reply } => {
                let answer = self.begin_step(&name).await;
                let _ = reply.send(answer);
            }
            Request::End { name, ended, reply } => {
                self.reached(Point::AfterStep(&name)).await;
                let _ = reply.send(self.end_step(&name, ended));
            }
        }
    }

    /// The run this pass continues (the stored one of this desired state,
    /// unless it is done or behind what this process already used) or
    /// starts.
    fn workflow(&mut self) -> &mut Workflow {
        if self.workflow.is_none() {
            let stored = Record::stored(status(&self.snapshot));
            let desired = self.desired();
            let mark = self.controller.step_marks.get(desired.uid);
            let chosen = Record::current(stored, &desired, mark, self.controller.now());
            self.workflow = Some(Workflow::chosen(chosen));
        }
        self.workflow.as_mut().expect("just set")
    }

    /// Step `name` is about to start: hands back a recorded result, or
    /// records it `Running` (the first write of a pass publishes
    /// Reconciling with it) before the step may run.
    async fn begin_step(&mut self, name: &str) -> Result<Started, StepError> {
        if self.workflow.as_ref().is_some_and(|w| w.halt.is_some()) {
            return Err(StepError::Halted);
        }
        if !valid_name(name) {
            return Err(self.refuse(name, StepError::InvalidName(name.to_string())));
        }
        // Answering a second use of a name with the first one's result
        // would hand one item's result to another.
        if !self.workflow().named.insert(name.to_string()) {
            return Err(self.refuse(name, StepError::Repeated(name.to_string())));
        }
        if self.stopping_before(name) {
            return Err(self.stop_at_boundary().await);
        }
        let now = self.controller.now();
        let desired = desired(&self.snapshot, self.controller, &self.options);
        let workflow = self.workflow.as_mut().expect("named above");
        let begun = workflow.record.begin(&desired, name, now);
        let run = desired.run_id(workflow.record.sequence);
        let (key, interrupted) = match begun {
            Ok(Begun::Recorded(result)) => return Ok(Started::Recorded(result)),
            Ok(Begun::Run { key, interrupted }) => (key, interrupted),
            Err(_) => return Err(self.refuse(name, StepError::TooManySteps)),
        };
        let workflow = self.workflow();
        workflow.running = Some(name.to_string());
        workflow.ran = true;
        // The keys go out only once the record holding the run landed
        // (`workflow_written` marks it started then).
        match self.publish().await {
            Ok(_) => {
                self.reached(Point::BeforeStep(name)).await;
                Ok(Started::Run(Step::new(name, key, run, interrupted)))
            }
            Err(halt) => {
                self.workflow().halt = Some(halt);
                Err(StepError::Halted)
            }
        }
    }

    /// The runtime is stopping and step `name` would run after one that
    /// ran in this pass.
    fn stopping_before(&self, name: &str) -> bool {
        self.controller.stopping.load(Ordering::SeqCst)
            && self
                .workflow
                .as_ref()
                .is_some_and(|w| w.ran && !w.record.is_done(name))
    }

    /// Ends the pass at this boundary for a stopping runtime: what the
    /// steps so far recorded is written (as the boundary write would have,
    /// without the next step), and the next process resumes here.
    async fn stop_at_boundary(&mut self) -> StepError {
        let halt = match self.publish().await {
            Ok(report) => Halt::Lost(report),
            Err(halt) => halt,
        };
        self.workflow().halt = Some(halt);
        StepError::Stopping
    }

    /// Step `name` ended: recorded in memory, written with the next write.
    fn end_step(&mut self, name: &str, ended: Ended) -> Result<(), StepError> {
        let now = self.controller.now();
        let workflow = self.workflow();
        if workflow.running.as_deref() != Some(name) {
            return Err(StepError::Unavailable);
        }
        workflow.running = None;
        match ended {
            Ended::Returned(result) if self.holds_generated(&result) => {
                self.workflow().record.failed(name, now);
                let error = StepError::ResultHoldsSecret(name.to_string());
                Err(self.refuse(name, error))
            }
            Ended::Returned(result) => match self.workflow().record.done(name, result, now) {
                Ok(()) => Ok(()),
                Err(Refused::ResultTooLarge(bytes)) => {
                    let step = name.to_string();
                    Err(self.refuse(name, StepError::ResultTooLarge { step, bytes }))
                }
                Err(Refused::TooManySteps) => Err(self.refuse(name, StepError::TooManySteps)),
            },
            Ended::Failed => {
                self.workflow().record.failed(name, now);
                Ok(())
            }
            Ended::Unserializable => {
                self.workflow().record.failed(name, now);
                self.refuse(name, StepError::Unserializable(name.to_string()));
                Ok(())
            }
        }
    }

    /// A step broke the step rules: logged for the operator, and the pass
    /// fails (`InvalidStep`) whatever the callback does with the error.
    fn refuse(&mut self, name: &str, error: StepError) -> StepError {
        log::warn_about!(
            self.subject(),
            // A name the package got wrong is its own text: redacted as
            // any other.
            step = self.redacted(name),
            why = self.redacted(&error.to_string()),
            "durable step refused; the pass fails"
        );
        self.steps_broken = true;
        error
    }

    /// After the effect callback: a step that never returned (a panic)
    /// failed; the run is done when the callback succeeded, else it is
    /// retried from where it stands, unless the callback rejected the
    /// input: then the run ends there, and the attempt after the user's
    /// fix starts a new one. Decides how the effect counts.
    pub(super) fn settle_run(&mut self, succeeded: bool) -> Effect {
        let now = self.controller.now();
        let broken = self.steps_broken;
        let rejected = !succeeded && !broken && self.decision.rejection().is_some();
        if let Some(workflow) = self.workflow.as_mut() {
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
    pub(super) fn finish_open_run(&mut self) {
        if !self.stepped() || self.workflow.is_some() {
            return;
        }
        let Some(stored) = Record::stored(status(&self.snapshot)) else {
            return;
        };
        let desired = self.desired();
        if stored.is_for(&desired) && stored.state != State::Done {
            let mut stored = stored;
            let forged_keys = stored.derive_keys(&desired);
            let mut workflow = Workflow::new(stored);
            workflow.ignored.forged_keys = forged_keys;
            workflow.record.finish(self.controller.now());
            self.workflow = Some(workflow);
        }
    }

    /// A status write holding the pass's run landed: the process marks
    /// how far it went in the object's runs (a run whose step began is
    /// started, a `Done` one ended), and what the write replaced of a
    /// forged record is reported.
    pub(super) fn workflow_written(&mut self) {
        let Some(workflow) = self.workflow.as_mut() else {
            return;
        };
        let notes = std::mem::take(&mut workflow.ignored);
        let (sequence, ran, done) = (
            workflow.record.sequence,
            workflow.ran,
            workflow.record.state == State::Done,
        );
        let uid = resource::uid(&self.snapshot).unwrap_or_default();
        let marks = &self.controller.step_marks;
        if ran {
            marks.started(uid, sequence);
        }
        if done {
            marks.ended(uid, sequence);
        }
        self.report_ignored(notes);
    }

    /// Logs and counts what of a stored record was ignored: which steps
    /// had a key that was not theirs (never the key itself), and whether
    /// the run went back behind this process's.
    fn report_ignored(&self, notes: Notes) {
        let marks = &self.controller.step_marks;
        for step in &notes.forged_keys {
            log::warn_about!(
                self.subject(),
                step = step.as_str(),
                "stored step key ignored: it is not the key this step derives; the derived key is recorded and used"
            );
        }
        if !notes.forged_keys.is_empty() {
            marks.count(Ignored::Key, notes.forged_keys.len());
        }
        if notes.rolled_back {
            log::warn_about!(
                self.subject(),
                "stored step run ignored: it goes back behind a run this process started or ended; a new run starts"
            );
            marks.count(Ignored::Run, 1);
        }
    }

    /// Puts the run into the status write `t`, with the step in progress
    /// as the Reconciling condition's message.
    pub(super) fn record_workflow(&self, t: &mut Transition) {
        let Some(workflow) = &self.workflow else {
            return;
        };
        t.workflow = Some(workflow.record.to_value());
        if matches!(
            t.phase,
            Phase::Reconciling | Phase::Deleting | Phase::Failed
        ) {
            t.progress = workflow.record.progress(is_deleting(&self.snapshot));
        }
    }
}
