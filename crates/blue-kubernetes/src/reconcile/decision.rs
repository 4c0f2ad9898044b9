//! The rules of one pass (the crate README, "One pass, in order") as a
//! decision without I/O and without a clock: given the current snapshot
//! and what the last effect came to, [`Decision::step`] says what to do
//! next. The driver (`driver.rs`) performs each [`Do`] (the client, the
//! package, hooks) and feeds back what [`Happened`]; the runtime's `Book`
//! has the same shape.

use super::plan::{Plan, Stop};
use super::protocol::Report;
use super::protocol::{Do, Effect, Facts, Happened, Note};
use crate::domain::due::desired_state_changed;
use crate::domain::immutable::{self, Check};
use crate::domain::resource::{
    self, is_deleting, status_str, CommonSpec, ManagementPolicy, DEFAULT_INTERVAL_MS,
};
use crate::domain::status::{Next, Transition};
use crate::package::callback::{Failure, FailureKind};
use crate::package::observation::Observation;
use crate::package::validation::{bounded, ValidationErrors};
use crate::resource::{Phase, Reason};
use serde_json::Value;

/// Where the pass stands: what the next [`Happened`] answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Start,
    Validating,
    Restoring,
    /// Our finalizer is being added, before observing (or importing).
    Finalizing,
    Observing(Look),
    Publishing,
    Acting,
    Releasing,
    /// A status write that ends the pass with its report (or this one).
    Writing(Option<Report>),
    Closing,
    Stopped,
}

/// Which observation: before any effect, after one, or of an import.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Look {
    First,
    Again,
    Import,
}

/// The rules of one pass, applied one step at a time.
pub(super) struct Decision<'a> {
    facts: Facts<'a>,
    stage: Stage,
    /// The common fields, once the rules before them passed.
    common: Option<CommonSpec>,
    deleting: bool,
    /// Reconciling (or Deleting) was published in this pass.
    published: bool,
    /// The latest callback failure, for the log and the rejection rule.
    failure: Option<(&'static str, Failure)>,
    /// The message of this pass's Invalid (or Rejected) Warning Event.
    user_facing: Option<String>,
    /// The write Ready waits for (after an open steps run is finished).
    ready: Option<Transition>,
}

impl<'a> Decision<'a> {
    pub(super) fn new(facts: Facts<'a>, failure: Option<(&'static str, Failure)>) -> Self {
        Self {
            facts,
            stage: Stage::Start,
            common: None,
            deleting: false,
            published: false,
            failure,
            user_facing: None,
            ready: None,
        }
    }

    /// A callback failed: remembered for the log line of the Failed status
    /// it leads to, and for the rejection rule.
    pub(super) fn failed(&mut self, callback: &'static str, failure: Failure) {
        self.failure = Some((callback, failure));
    }

    pub(super) fn failure(&self) -> Option<&(&'static str, Failure)> {
        self.failure.as_ref()
    }

    pub(super) fn user_facing(&self) -> Option<&str> {
        self.user_facing.as_deref()
    }

    pub(super) fn plan(&self) -> &Plan {
        &self.facts.plan
    }

    /// The user-facing message of the failure behind this pass's failure,
    /// if that callback rejected the input.
    pub(super) fn rejection(&self) -> Option<&str> {
        let (_, failure) = self.failure.as_ref()?;
        match failure.kind {
            FailureKind::Rejected => failure.for_users.as_deref(),
            FailureKind::Errored | FailureKind::Panicked => None,
        }
    }

    /// The publish before an effect: Reconciling (Deleting), acknowledging
    /// nothing, recording the profile, identity and immutable digest the
    /// effect runs under.
    pub(super) fn publication(&self, snapshot: &Value) -> Transition {
        let (phase, reason) = match is_deleting(snapshot) {
            true => (Phase::Deleting, Reason::Deleting),
            false => (Phase::Reconciling, Reason::Reconciling),
        };
        let mut t = self.recording(Transition::new(phase, reason, Next::Now), snapshot);
        t.acknowledge = false;
        t
    }

    /// `t` recording the profile and state identity, and the digest of
    /// the immutable fields as `snapshot`'s config holds them.
    fn recording(&self, mut t: Transition, snapshot: &Value) -> Transition {
        t.identity = self.facts.identity.clone();
        t.immutable_digest = immutable::digest(self.facts.immutable, &snapshot["spec"]["config"]);
        t
    }

    /// What to do next, given the current snapshot and what the last step
    /// came to.
    pub(super) fn step(&mut self, snapshot: &Value, happened: Happened) -> Do {
        let stage = std::mem::replace(&mut self.stage, Stage::Stopped);
        match (stage, happened) {
            (Stage::Start, _) => self.begin(snapshot),
            (_, Happened::Done(Err(halt)))
            | (_, Happened::Wrote(Err(halt)))
            | (_, Happened::Restored(Err(halt)))
            | (_, Happened::Observed(Err(halt)))
            | (_, Happened::Acted(Err(halt))) => Do::Stop(Err(halt)),
            (Stage::Validating, Happened::Validated(found)) => self.validated(snapshot, found),
            (Stage::Restoring, Happened::Restored(Ok(true))) => self.act(snapshot),
            (Stage::Restoring, Happened::Restored(Ok(false))) => {
                self.fail(snapshot, Reason::ExecutionFailed)
            }
            (Stage::Finalizing, _) => self.observe_first(snapshot),
            (Stage::Observing(look), Happened::Observed(Ok(seen))) => {
                self.observed(snapshot, look, seen)
            }
            (Stage::Publishing, _) => self.to(Stage::Acting, Do::Act(!self.deleting)),
            (Stage::Acting, Happened::Acted(Ok(Effect::Failed(reason)))) => {
                self.fail(snapshot, reason)
            }
            (Stage::Acting, Happened::Acted(Ok(Effect::Succeeded))) => {
                self.to(Stage::Observing(Look::Again), Do::Observe(None))
            }
            (Stage::Releasing, _) => self.linger(snapshot),
            (Stage::Closing, _) => {
                let ready = self.ready.take().expect("set before closing");
                self.write(ready, None)
            }
            (Stage::Writing(report), Happened::Wrote(Ok(wrote))) => {
                Do::Stop(Ok(report.unwrap_or(wrote)))
            }
            (stage, _) => unreachable!("no step answers {stage:?} so"),
        }
    }

    fn to(&mut self, stage: Stage, next: Do) -> Do {
        self.stage = stage;
        next
    }

    /// Rules 1 to 3c, then `validate` (rules 4 and 5).
    fn begin(&mut self, snapshot: &Value) -> Do {
        self.deleting = is_deleting(snapshot);
        // 1, and 3 to 3c when a reference holds the pass: decided by the
        // plan, with no package code run.
        let rules = match &self.facts.plan {
            Plan::Release => return self.release(snapshot, false),
            Plan::Hold(stop) => return self.stop(stop.clone()),
            Plan::Run(rules) => rules.clone(),
        };
        // 2. Profile and state identity are immutable once recorded.
        if let Some((profile, hash)) = &self.facts.identity {
            let differs = |key, now: &str| status_str(snapshot, key).is_some_and(|s| s != now);
            if differs("profile", profile) || differs("stateIdentity", hash) {
                let t =
                    Transition::new(Phase::Invalid, Reason::ImmutableStateIdentity, Next::OnEdit);
                return self.write(t, None);
            }
        }
        // 2b. Config fields declared immutable hold their accepted values.
        let stored = status_str(snapshot, "immutableDigest");
        let config = &snapshot["spec"]["config"];
        if let Check::Changed(fields) = immutable::check(self.facts.immutable, config, stored) {
            let changed = fields.join(", config.");
            self.user_facing = Some(format!(
                "config.{changed}: immutable, changed since the resource was accepted; revert the edit (to change it, create a new resource)"
            ));
            let t = Transition::new(Phase::Invalid, Reason::ImmutableField, Next::OnEdit);
            return self.write(t, Some(Note::ImmutableChanged(changed)));
        }
        // 3 and 3b. Common fields, and a typed config that decodes (3c,
        // references, holds the pass above or does not apply).
        match rules {
            Ok(common) => self.common = Some(common),
            Err(stop) => return self.stop(stop),
        }
        self.to(Stage::Validating, Do::Validate)
    }

    /// Rules 4 to 7, then the connection Secret before rule 8.
    fn validated(&mut self, snapshot: &Value, found: Option<ValidationErrors>) -> Do {
        // 4 and 5: only messages the package marked user-facing go to
        // the Invalid write's Event.
        match found {
            None => return self.fail(snapshot, Reason::ValidationFailed),
            Some(errors) if !errors.is_empty() => {
                self.user_facing = errors.for_users();
                let t = Transition::new(Phase::Invalid, Reason::InvalidConfiguration, Next::OnEdit);
                return self.write(t, Some(Note::Invalid(errors)));
            }
            Some(_) => {}
        }
        // Identity is needed for the lock before any effect may run.
        if self.facts.identity.is_none() {
            return self.fail(snapshot, Reason::ExecutionFailed);
        }
        let common = self.common.expect("rules 3 passed");
        // 6. Destruction protection, even while suspended.
        let key = &self.facts.names.destroy_protection_key;
        if self.deleting && resource::prevents_destroy(snapshot, key) {
            let next = Next::After(common.interval_ms);
            let t = Transition::new(Phase::Blocked, Reason::DestructionProtected, next);
            return self.write(t, None);
        }
        // 7. Suspended.
        if !self.deleting && common.suspend {
            let t = Transition::new(Phase::Suspended, Reason::Suspended, Next::OnEdit);
            return self.write(t, None);
        }
        // 8, with the connection Secret put back first.
        match !self.deleting && self.facts.connection {
            true => self.to(Stage::Restoring, Do::RestoreConnection),
            false => self.act(snapshot),
        }
    }

    /// Rule 8: every managed resource carries our finalizer first.
    fn act(&mut self, snapshot: &Value) -> Do {
        let ours = &self.facts.names.finalizer;
        match !self.deleting && !resource::has_finalizer(snapshot, ours) {
            true => self.to(Stage::Finalizing, Do::SetFinalizer(true)),
            false => self.observe_first(snapshot),
        }
    }

    /// Observes; when an effect is expected (and no step's record
    /// publishes), publishes at the same time (see `driver.rs`).
    fn observe_first(&mut self, snapshot: &Value) -> Do {
        let common = self.common.expect("rules 3 passed");
        if common.management == ManagementPolicy::Observe {
            return self.to(Stage::Observing(Look::Import), Do::Observe(None));
        }
        let expected = self.deleting
            || self.facts.expects_effect
            || desired_state_changed(snapshot, &self.facts.names.request_annotation);
        let publish = expected && !self.facts.stepped;
        self.published = publish;
        let t = publish.then(|| self.publication(snapshot));
        self.to(Stage::Observing(Look::First), Do::Observe(t))
    }

    fn observed(&mut self, snapshot: &Value, look: Look, seen: Option<Observation>) -> Do {
        let Some(seen) = seen else {
            return self.fail(snapshot, Reason::ExecutionFailed);
        };
        match look {
            // Imported infrastructure is not asked to match: it is ready
            // or the pass fails (see `import`).
            Look::Import if !(seen.exists && seen.ready) => self.fail(snapshot, Reason::NotReady),
            Look::Import => self.ready(snapshot),
            Look::First if self.deleting && !seen.exists => self.release(snapshot, true),
            Look::First if !self.deleting && seen.exists && seen.matches => {
                self.converged(snapshot, seen)
            }
            Look::First => match self.published || self.facts.stepped {
                true => self.to(Stage::Acting, Do::Act(!self.deleting)),
                false => {
                    self.published = true;
                    self.to(Stage::Publishing, Do::Publish(self.publication(snapshot)))
                }
            },
            Look::Again if !self.deleting => self.converged(snapshot, seen),
            // The finalizer goes only once absence has been observed.
            Look::Again if seen.exists => self.fail(snapshot, Reason::ExecutionFailed),
            Look::Again => self.release(snapshot, true),
        }
    }

    /// Matching but unready is retried by observing on the next pass,
    /// never by converging again.
    fn converged(&mut self, snapshot: &Value, seen: Observation) -> Do {
        match seen.is_ready() {
            false => self.fail(snapshot, Reason::NotReady),
            true => self.ready(snapshot),
        }
    }

    fn ready(&mut self, snapshot: &Value) -> Do {
        let interval = self.common.expect("rules 3 passed").interval_ms;
        let t = Transition::new(Phase::Ready, Reason::Converged, Next::After(interval));
        let t = self.recording(t, snapshot);
        let imported = self
            .common
            .is_some_and(|c| c.management == ManagementPolicy::Observe);
        match self.facts.stepped && !imported {
            true => {
                self.ready = Some(t);
                self.to(Stage::Closing, Do::FinishOpenRun)
            }
            false => self.write(t, None),
        }
    }

    /// Rule 1 (running no package code), or after a destroy: removes only
    /// our finalizer, if it is there.
    fn release(&mut self, snapshot: &Value, destroyed: bool) -> Do {
        let finalizer = resource::has_finalizer(snapshot, &self.facts.names.finalizer);
        self.to(
            Stage::Releasing,
            Do::Release {
                finalizer,
                destroyed,
            },
        )
    }

    /// After our finalizer is gone, the object lives on only if another
    /// finalizer holds it: deletion is recorded as seen (so it stops being
    /// due) with a check after the interval.
    fn linger(&mut self, snapshot: &Value) -> Do {
        if resource::finalizers(snapshot).is_empty() {
            return Do::Stop(Ok(Report::Released));
        }
        let interval = resource::parse(snapshot).map_or(DEFAULT_INTERVAL_MS, |c| c.interval_ms);
        let t = Transition::new(Phase::Deleting, Reason::Deleting, Next::After(interval));
        self.to(Stage::Writing(Some(Report::Released)), Do::Write(t, None))
    }

    /// Rules 3 to 3c: a write decided before any package code ran.
    fn stop(&mut self, stop: Stop) -> Do {
        let (phase, reason, next) = match &stop {
            Stop::Invalid | Stop::Undecodable(_) => {
                (Phase::Invalid, Reason::InvalidConfiguration, Next::OnEdit)
            }
            Stop::Cycle => (Phase::Invalid, Reason::CyclicReference, Next::OnEdit),
            Stop::Waiting(interval, _) => (
                Phase::Waiting,
                Reason::DependencyNotReady,
                Next::After(*interval),
            ),
        };
        // Invalid like a failed validation; why is for the log only.
        let note = match stop {
            Stop::Undecodable(why) => Some(Note::Undecodable(why)),
            _ => None,
        };
        self.write(Transition::new(phase, reason, next), note)
    }

    /// A failed attempt: retried with backoff, unless the callback behind
    /// it rejected the input: then `Rejected`, checked again after the
    /// interval or with an edit, never with backoff.
    fn fail(&mut self, snapshot: &Value, reason: Reason) -> Do {
        let rejected = self.rejection().map(str::to_string);
        match rejected.filter(|_| reason == Reason::ExecutionFailed) {
            Some(message) => {
                let interval =
                    resource::parse(snapshot).map_or(DEFAULT_INTERVAL_MS, |c| c.interval_ms);
                self.user_facing = Some(bounded(message));
                let next = Next::After(interval);
                let t = Transition::new(Phase::Rejected, Reason::InputRejected, next);
                self.write(t, None)
            }
            None => self.write(Transition::new(Phase::Failed, reason, Next::Backoff), None),
        }
    }

    /// A status write whose landing ends the pass with its report.
    fn write(&mut self, t: Transition, note: Option<Note>) -> Do {
        self.to(Stage::Writing(None), Do::Write(t, note))
    }
}

#[cfg(test)]
mod tests;
