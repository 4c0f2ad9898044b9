//! Why a durable step did not return its result.

use super::record::{MAX_STEPS_PER_RUN, MAX_STEP_RESULT_BYTES};

/// Why [`Steps::run`](super::Steps::run) did not return a step's result. Messages name the
/// step, never what it returned or raised; `Debug` shows no source text.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum StepError {
    /// The step's closure failed; `source` is its error (the operator's log
    /// shows it, nothing else does).
    #[error("step {step:?} failed")]
    Failed {
        /// The step's name.
        step: String,
        /// What the closure returned.
        #[source]
        source: crate::package::result::CallbackError,
    },
    /// The step's record could not be written (a conflict, an unreachable
    /// API server): the pass stops here and no later step starts.
    #[error("the step record could not be written; the pass stops")]
    Halted,
    /// The runtime is stopping ([`Runtime::stop`](crate::Runtime::stop)):
    /// the step before this one is recorded, this one is left for the next
    /// process, and the pass ends.
    #[error("the controller is stopping; the next process resumes at this step")]
    Stopping,
    /// Steps run only while `converge` or `delete` runs.
    #[error("durable steps run only inside converge and delete, while they run")]
    Unavailable,
    /// The package did not declare steps
    /// ([`ResourceSchema::steps`](crate::ResourceSchema::steps)).
    #[error("the package does not declare durable steps (ResourceSchema::steps)")]
    Undeclared,
    /// The name is not `[a-z0-9-]{1,63}`.
    #[error("step name {0:?} is not 1 to 63 of [a-z0-9-]")]
    InvalidName(String),
    /// The run already has [`MAX_STEPS_PER_RUN`] steps.
    #[error("a run may record at most {MAX_STEPS_PER_RUN} steps")]
    TooManySteps,
    /// A step of this name already ran (or was skipped as done) in this
    /// pass: each step of a run needs a name of its own. Nothing ran and
    /// no result is handed back; the pass fails.
    #[error("step {0:?} already ran in this pass; each step of a run needs a name of its own")]
    Repeated(String),
    /// The step's result is larger than [`MAX_STEP_RESULT_BYTES`] as JSON;
    /// the step counts as failed.
    #[error(
        "the result of step {step:?} is {bytes} bytes as JSON, more than {MAX_STEP_RESULT_BYTES}"
    )]
    ResultTooLarge {
        /// The step's name.
        step: String,
        /// The result's size.
        bytes: usize,
    },
    /// The step's result holds a value
    /// [`Connection::get_or_create`](crate::connection::Connection::get_or_create)
    /// returned in this pass: results are recorded in status, where
    /// credentials must never be. The step counts as failed and its result
    /// is not recorded.
    #[error("the result of step {0:?} holds a connection secret value")]
    ResultHoldsSecret(String),
    /// `run` was called while another step of this run was running (from
    /// inside it, or beside it): steps run one at a time.
    #[error("a step was started while another one ran; steps run one at a time")]
    Concurrent,
    /// The step's result did not serialize; the step counts as failed.
    #[error("the result of step {0:?} does not serialize")]
    Unserializable(String),
    /// The result recorded for a `Done` step does not deserialize into the
    /// type asked for (change a step's result type only with its name).
    #[error("the recorded result of step {0:?} is not of the step's result type")]
    RecordedResult(String),
}

impl std::fmt::Debug for StepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StepError::Failed { step, .. } => f
                .debug_struct("Failed")
                .field("step", step)
                .finish_non_exhaustive(),
            other => write!(f, "StepError({other})"),
        }
    }
}
