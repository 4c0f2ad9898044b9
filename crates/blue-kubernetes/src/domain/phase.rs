//! What `status.phase` and the conditions' generic reason say: the
//! [`Phase`] of a resource and the [`Reason`] for it.

/// The lifecycle phase recorded in `status.phase`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Phase {
    /// Infrastructure matches and is ready.
    Ready,
    /// An infrastructure effect is in progress.
    Reconciling,
    /// Destruction is in progress.
    Deleting,
    /// The last attempt failed; retried with backoff.
    Failed,
    /// Configuration is invalid; waits for an edit.
    Invalid,
    /// Destruction is refused by `compute-prevent-destroy`.
    Blocked,
    /// `spec.suspend` is true.
    Suspended,
    /// A resource it refers to is missing or not Ready; no callback runs.
    Waiting,
    /// The infrastructure refused the input: the package classified the
    /// failure as the user's to fix. Not retried with backoff: checked
    /// again on an edit, a new request token, or at the interval.
    Rejected,
}

// Adding a `Phase` variant makes this match non-exhaustive: add it here and
// to `Phase::ALL`.
const _PHASES_ARE_ALL_LISTED: () = {
    let mut i = 0;
    while i < Phase::ALL.len() {
        match Phase::ALL[i] {
            Phase::Ready
            | Phase::Reconciling
            | Phase::Deleting
            | Phase::Failed
            | Phase::Invalid
            | Phase::Blocked
            | Phase::Suspended
            | Phase::Waiting
            | Phase::Rejected => {}
        }
        i += 1;
    }
};

/// The generic reason recorded on conditions. The only text status carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// Converged and ready.
    Converged,
    /// Converging.
    Reconciling,
    /// Destroying.
    Deleting,
    /// Matching but not (yet) ready, or still not matching after converge.
    NotReady,
    /// A callback or the infrastructure work failed.
    ExecutionFailed,
    /// The `validate` callback failed to run.
    ValidationFailed,
    /// Common fields or `validate` rejected the configuration.
    InvalidConfiguration,
    /// The profile or state identity differs from the one recorded.
    ImmutableStateIdentity,
    /// `compute-prevent-destroy` blocks destruction.
    DestructionProtected,
    /// Suspended by `spec.suspend`.
    Suspended,
    /// The package reported outputs that could not be recorded (too large,
    /// not the declared type, or not serializable).
    InvalidOutputs,
    /// A durable step broke the step rules: its name, the size of its
    /// result, or the number of steps in a run.
    InvalidStep,
    /// A referenced resource is missing, not Ready for its generation, or
    /// being deleted.
    DependencyNotReady,
    /// Following references from this resource leads back to it.
    CyclicReference,
    /// A config field declared immutable was added, removed or changed
    /// since the config was accepted.
    ImmutableField,
    /// The package reported that the infrastructure refused the input
    /// (a failure the user must fix, with a message in a Warning Event).
    InputRejected,
}

impl Phase {
    /// Every phase: the CRD's status enum and the per-phase metrics list
    /// them all (a phase missing from the CRD would make the API server
    /// refuse the controller's status writes).
    pub(crate) const ALL: [Phase; 9] = [
        Phase::Ready,
        Phase::Reconciling,
        Phase::Deleting,
        Phase::Failed,
        Phase::Invalid,
        Phase::Blocked,
        Phase::Suspended,
        Phase::Waiting,
        Phase::Rejected,
    ];

    /// The string written to status.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Ready => "Ready",
            Phase::Reconciling => "Reconciling",
            Phase::Deleting => "Deleting",
            Phase::Failed => "Failed",
            Phase::Invalid => "Invalid",
            Phase::Blocked => "Blocked",
            Phase::Suspended => "Suspended",
            Phase::Waiting => "Waiting",
            Phase::Rejected => "Rejected",
        }
    }
}

impl Reason {
    /// The string written to conditions.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Converged => "Converged",
            Reason::Reconciling => "Reconciling",
            Reason::Deleting => "Deleting",
            Reason::NotReady => "NotReady",
            Reason::ExecutionFailed => "ExecutionFailed",
            Reason::ValidationFailed => "ValidationFailed",
            Reason::InvalidConfiguration => "InvalidConfiguration",
            Reason::ImmutableStateIdentity => "ImmutableStateIdentity",
            Reason::DestructionProtected => "DestructionProtected",
            Reason::Suspended => "Suspended",
            Reason::InvalidOutputs => "InvalidOutputs",
            Reason::InvalidStep => "InvalidStep",
            Reason::DependencyNotReady => "DependencyNotReady",
            Reason::CyclicReference => "CyclicReference",
            Reason::ImmutableField => "ImmutableField",
            Reason::InputRejected => "InputRejected",
        }
    }
}
