//! What the decision (`decision.rs`) and the driver (`driver.rs`) say to
//! each other: the facts a pass starts from, what to do next ([`Do`]) and
//! what that came to ([`Happened`]).

use super::plan::Plan;
use super::report::{Halt, Report};
use crate::domain::names::Names;
use crate::domain::status::Transition;
use crate::package::observation::Observation;
use crate::package::validation::ValidationErrors;
use crate::resource::Reason;

/// What a pass starts from, fixed for the whole pass.
pub(super) struct Facts<'a> {
    pub(super) plan: Plan,
    /// The profile and state-identity hash `identity` gave (`None`: it
    /// did not run, or failed).
    pub(super) identity: Option<(String, String)>,
    /// The config fields declared immutable.
    pub(super) immutable: &'a [String],
    pub(super) names: &'a Names,
    /// The package declares durable steps: the first step's record is the
    /// publish before an effect.
    pub(super) stepped: bool,
    /// The package declares a connection Secret, put back before rule 8.
    pub(super) connection: bool,
    /// An effect is likely whatever the desired state says: publish while
    /// observing.
    pub(super) expects_effect: bool,
}

/// What the driver does next.
#[derive(Debug)]
pub(super) enum Do {
    Validate,
    RestoreConnection,
    /// Add (`true`) or remove our finalizer.
    SetFinalizer(bool),
    /// Run `observe`; with a transition, publish it at the same time.
    Observe(Option<Transition>),
    /// Publish (Reconciling or Deleting) before an effect.
    Publish(Transition),
    /// Run `converge` (`true`) or `delete`.
    Act(bool),
    /// End a durable-steps run left open, before Ready is written.
    FinishOpenRun,
    /// Remove our finalizer (if `finalizer`) and forget the resource (for
    /// a destroyed one, say so in an Event).
    Release {
        finalizer: bool,
        destroyed: bool,
    },
    /// Write this status (after logging the note, if any).
    Write(Transition, Option<Note>),
    Stop(Result<Report, Halt>),
}

/// Why a write is made, for the operator's log.
#[derive(Debug)]
pub(super) enum Note {
    /// The typed config does not decode: why (values redacted).
    Undecodable(String),
    /// `validate` found these errors.
    Invalid(ValidationErrors),
    /// These immutable fields changed (joined).
    ImmutableChanged(String),
}

/// What the last [`Do`] came to.
pub(super) enum Happened {
    Began,
    /// A finalizer update or release landed.
    Done(Result<(), Halt>),
    /// A status write (or publish) landed, recording this.
    Wrote(Result<Report, Halt>),
    /// `None`: `validate` failed (the decision was told why).
    Validated(Option<ValidationErrors>),
    /// `Ok(false)`: the connection Secret could not be put back.
    Restored(Result<bool, Halt>),
    /// `None`: `observe` failed; `Err`: the publish alongside was lost.
    Observed(Result<Option<Observation>, Halt>),
    /// How `converge` or `delete` ended.
    Acted(Result<Effect, Halt>),
}

/// How the effect callback ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Effect {
    Succeeded,
    Failed(Reason),
}
