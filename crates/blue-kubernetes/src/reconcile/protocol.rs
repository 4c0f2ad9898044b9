//! What the decision (`decision.rs`) and the driver (`driver.rs`) say to
//! each other: the facts a pass starts from, what to do next ([`Do`]) and
//! what that came to ([`Happened`]); and what a pass is asked for and how
//! it ends: the early check a caller asks for ([`Request`]), why a pass
//! stops early ([`Halt`]), the public [`Report`] and the runtime's
//! [`PassOutcome`].

use super::plan::Plan;
use crate::domain::names::Names;
use crate::domain::status::Transition;
use crate::package::observation::Observation;
use crate::package::validation::ValidationErrors;
use crate::resource::{Phase, Reason};
use crate::Error;

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
    /// Remove our finalizer (if `finalizer`; for a destroyed resource, say
    /// so in an Event): the pass reports `Released`.
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

/// Why a pass runs early: asked for in memory, not by the due rules. (The
/// runtime's: a pass is only told whether one was asked for.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Request {
    /// Not asked for: the due rules decide.
    #[default]
    None,
    /// Look now, as if the next check were due (a related object changed,
    /// a referenced resource, a trigger).
    Check,
    /// A related object was deleted: an effect is likely, so Reconciling
    /// is published while observing, as for an edit (one round trip
    /// sooner). A check that then finds everything in place writes Ready
    /// again: two status writes instead of none, for a rare event.
    Repair,
}

impl Request {
    /// Whether an early check was asked for at all.
    pub(crate) fn any(self) -> bool {
        self != Request::None
    }
}

/// What one reconcile did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Report {
    /// The resource does not exist.
    NotFound,
    /// The resource is not due; nothing was read or written.
    NotDue,
    /// Another reconcile holds the identity lock (in this process, or in
    /// the controller's own [`LockDomain`](crate::config::LockDomain)); nothing was done.
    Busy,
    /// Between the list and the re-read the object was replaced or its
    /// identity changed; the next poll starts over.
    Changed,
    /// A write lost an optimistic-concurrency race; no further effect ran and
    /// the next pass rereads.
    Conflict,
    /// Our finalizer was removed (or was already absent) from a deleting
    /// resource; for Destroy only after absence was observed.
    Released,
    /// Status records this phase and reason: written by this pass, or,
    /// for a quiet periodic check, already stored and left alone because
    /// only its schedule would have changed.
    Reconciled(Phase, Reason),
    /// With [`Config::sharding`](crate::Config::sharding): this replica
    /// does not hold the Lease of the resource's shard (or is giving it
    /// up), so it ran nothing past the `identity` callback; the replica
    /// holding it handles the resource.
    NotOwned {
        /// The resource's shard.
        shard: u32,
    },
}

/// How one pass ended, for the runtime.
#[derive(Debug)]
pub(crate) struct PassOutcome {
    pub(crate) report: Result<Report, Error>,
    /// The resourceVersion of the pass's last successful write, so the
    /// runtime can tell its own intermediate writes from news.
    pub(crate) written: Option<String>,
    /// The next check the pass decided, whether it wrote it to
    /// `nextReconcileTime` or (a quiet check) not.
    pub(crate) next_check: Option<u64>,
}

impl PassOutcome {
    /// A pass that ended before any write.
    pub(crate) fn unwritten(report: Result<Report, Error>) -> Self {
        Self {
            report,
            written: None,
            next_check: None,
        }
    }
}

/// Why a pass stops early.
#[derive(Debug)]
pub(super) enum Halt {
    /// A write lost a race (or the object vanished): stop, nothing more runs.
    Lost(Report),
    /// The cluster could not be reached.
    Transport(blue_kubernetes_client::Error),
}

impl From<blue_kubernetes_client::Error> for Halt {
    fn from(e: blue_kubernetes_client::Error) -> Self {
        use blue_kubernetes_client::ErrorKind;
        match e.kind() {
            ErrorKind::Conflict => Halt::Lost(Report::Conflict),
            ErrorKind::NotFound => Halt::Lost(Report::NotFound),
            _ => Halt::Transport(e),
        }
    }
}
