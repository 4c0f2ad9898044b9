//! Recording packages whose `converge` and `delete` run durable steps
//! ([`blue_kubernetes::steps::Steps`]), each step an effect held at the gate
//! *after* it took effect, so a pass dropped there (a simulated crash)
//! leaves the effect done and its record not.

use super::closures::block_on;
use super::{misbehave, Call, Callback, Ended, FakeInfra, Misbehaviour, State};
use blue_kubernetes::package::CallbackError;
use blue_kubernetes::steps::Steps;
use serde_json::Value;
use std::collections::VecDeque;

/// The steps of a stepped package's `converge`, in order: `prepare`
/// returns the value to apply, `apply` sets what `prepare` returned (its
/// recorded result, when `prepare` is done from an earlier pass), `verify`
/// marks what `apply` set verified. A stepped package's `observe` reports
/// a match only for verified infrastructure, so a run cut short after
/// `apply` is resumed, not found done.
pub const CONVERGE_STEPS: [&str; 3] = ["prepare", "apply", "verify"];

/// The steps of a stepped package's `delete`: `drain` does nothing but be
/// a step, `remove` removes the infrastructure.
pub const DELETE_STEPS: [&str; 2] = ["drain", "remove"];

/// One durable step a stepped package ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepRun {
    /// The resource's uid.
    pub uid: String,
    /// The profile it ran for.
    pub profile: String,
    /// The `blue/event` it saw.
    pub event: String,
    /// The resource's generation it saw.
    pub generation: i64,
    /// The step's name.
    pub name: String,
    /// Its idempotency key.
    pub key: String,
    /// Its run.
    pub run: String,
    /// What `step.interrupted()` said.
    pub interrupted: bool,
    /// Its effect happened (false after a scripted failure).
    pub effected: bool,
    /// It returned its result (false while held at the gate, after a
    /// scripted failure, or when its pass died).
    pub finished: bool,
}

type StepResult<T> = Result<T, CallbackError>;

impl FakeInfra {
    /// Every durable step the stepped packages ran, in order.
    pub fn step_runs(&self) -> Vec<StepRun> {
        self.lock().step_runs.clone()
    }

    /// Scripts the next run of step `name` to misbehave (before its
    /// effect); queued in order. `Exit` does nothing here.
    pub fn script_step(&self, name: &str, misbehaviour: Misbehaviour) {
        self.lock()
            .step_scripts
            .entry(name.into())
            .or_default()
            .push_back(misbehaviour);
    }

    /// How many scripted misbehaviours of step `name` are still queued.
    pub fn step_scripts_left(&self, name: &str) -> usize {
        self.lock().step_scripts.get(name).map_or(0, VecDeque::len)
    }

    /// A scripted `converge` or `delete` misbehaviour, consumed as the
    /// callback starts (not recorded: its steps are). `Some` ends it early.
    fn stepped_start(&self, step: Callback) -> Option<StepResult<Ended>> {
        let scripted = self
            .lock()
            .scripted
            .get_mut(&step)
            .and_then(VecDeque::pop_front);
        match scripted {
            None => None,
            Some(Misbehaviour::Exit(code)) => Some(Ok(Ended::Exit(code))),
            other => Some(misbehave(other).map(|()| Ended::Done)),
        }
    }

    pub(super) async fn converge_steps(&self, call: &Call<'_>, steps: &Steps) -> StepResult<Ended> {
        if let Some(early) = self.stepped_start(Callback::Converge) {
            return early;
        }
        let desired = call.desired.clone();
        let want: Value = steps
            .run("prepare", |s| self.step(call, s, |_| {}, desired))
            .await?;
        let profile = call.profile.to_string();
        let apply = move |state: &mut State| {
            state.items.insert(profile, want);
        };
        steps
            .run("apply", |s| self.step(call, s, apply, ()))
            .await?;
        steps
            .run("verify", |s| self.step(call, s, verify(call.profile), ()))
            .await?;
        Ok(Ended::Done)
    }

    pub(super) async fn delete_steps(&self, call: &Call<'_>, steps: &Steps) -> StepResult<Ended> {
        if let Some(early) = self.stepped_start(Callback::Delete) {
            return early;
        }
        steps
            .run("drain", |s| self.step(call, s, |_| {}, ()))
            .await?;
        let profile = call.profile.to_string();
        let remove = move |state: &mut State| {
            state.items.remove(&profile);
        };
        steps
            .run("remove", |s| self.step(call, s, remove, ()))
            .await?;
        Ok(Ended::Done)
    }

    pub(super) fn converge_steps_blocking(&self, call: &Call, steps: &Steps) -> StepResult<Ended> {
        if let Some(early) = self.stepped_start(Callback::Converge) {
            return early;
        }
        let desired = call.desired.clone();
        let want: Value =
            steps.run_blocking("prepare", |s| block_on(self.step(call, s, |_| {}, desired)))?;
        let profile = call.profile.to_string();
        let apply = move |state: &mut State| {
            state.items.insert(profile, want);
        };
        steps.run_blocking("apply", |s| block_on(self.step(call, s, apply, ())))?;
        let verified = verify(call.profile);
        steps.run_blocking("verify", |s| block_on(self.step(call, s, verified, ())))?;
        Ok(Ended::Done)
    }

    pub(super) fn delete_steps_blocking(&self, call: &Call, steps: &Steps) -> StepResult<Ended> {
        if let Some(early) = self.stepped_start(Callback::Delete) {
            return early;
        }
        steps.run_blocking("drain", |s| block_on(self.step(call, s, |_| {}, ())))?;
        let profile = call.profile.to_string();
        let remove = move |state: &mut State| {
            state.items.remove(&profile);
        };
        steps.run_blocking("remove", |s| block_on(self.step(call, s, remove, ())))?;
        Ok(Ended::Done)
    }

    /// One step: recorded, scripted misbehaviour first, then its effect,
    /// then held at the gate, then finished.
    async fn step<T>(
        &self,
        call: &Call<'_>,
        step: blue_kubernetes::steps::Step,
        effect: impl FnOnce(&mut State),
        result: T,
    ) -> StepResult<T> {
        let (index, scripted) = {
            let mut s = self.lock();
            s.step_runs.push(StepRun {
                uid: call.uid.into(),
                profile: call.profile.into(),
                event: call.event.into(),
                generation: call.generation,
                name: step.name().into(),
                key: step.key().into(),
                run: step.run().into(),
                interrupted: step.interrupted(),
                effected: false,
                finished: false,
            });
            let scripted = s
                .step_scripts
                .get_mut(step.name())
                .and_then(VecDeque::pop_front);
            (s.step_runs.len() - 1, scripted)
        };
        misbehave(scripted)?;
        let active = self.activate(call.profile);
        {
            let mut s = self.lock();
            effect(&mut s);
            s.step_runs[index].effected = true;
        }
        self.wait_at_gate().await;
        drop(active);
        self.lock().step_runs[index].finished = true;
        Ok(result)
    }
}

/// The `verify` step's effect: what `profile` holds now is verified.
fn verify(profile: &str) -> impl FnOnce(&mut State) {
    let profile = profile.to_string();
    move |state: &mut State| {
        if let Some(held) = state.items.get(&profile).cloned() {
            state.verified.insert(profile, held);
        }
    }
}
