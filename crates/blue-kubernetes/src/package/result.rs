//! What a callback returns: the typed [`Answer`] the controller reads, and
//! the closure form's outcome map with its keys.

use super::observation::Outputs;
use serde::Serialize;
use serde_json::{Map, Value};

/// The error a callback returns. Its text is never copied into status,
/// Events, errors or `Debug` output; it reaches only the operator's log (one
/// WARN line per failure, carrying the error and its `source()` chain
/// joined as `outer: middle: inner`), unless [`Config::log_callback_errors`](crate::Config::log_callback_errors)
/// is false. The one exception is a [`Rejected`](super::Rejected) in the chain: its
/// [`UserFacingMessage`](super::UserFacingMessage) becomes a Warning Event on the resource.
pub type CallbackError = Box<dyn std::error::Error + Send + Sync>;

/// What a callback returns.
pub type CallbackResult<T> = Result<T, CallbackError>;

/// A workflow outcome map returned by `converge` and `delete`. A non-zero
/// integer under `blue/exit` marks failure; absent means 0.
pub type WorkflowOutcome = Map<String, Value>;

/// The key of a [`WorkflowOutcome`] under which `converge` hands over
/// outputs; see [`outcome_with_outputs`].
pub const OUTPUTS_KEY: &str = "blue/outputs";

/// The key of a [`WorkflowOutcome`] under which `converge` reports the
/// infrastructure's own ID (a string), as
/// [`Outcome::with_external_name`](crate::Outcome::with_external_name) does
/// for a trait package.
///
/// ```
/// use blue_kubernetes::package::{WorkflowOutcome, EXTERNAL_NAME_KEY};
/// let mut outcome = WorkflowOutcome::new();
/// outcome.insert(EXTERNAL_NAME_KEY.into(), "16384".into());
/// ```
pub const EXTERNAL_NAME_KEY: &str = "blue/external-name";

/// What `converge` or `delete` answered, as the controller reads it
/// whatever the package's form (the closure form's map is read into one
/// by its adapter, the only reader of the map's keys).
pub(crate) struct Answer {
    /// Failure reported without an error: a non-zero `blue/exit`.
    pub(crate) failed: bool,
    pub(crate) outputs: Option<Outputs>,
    pub(crate) external_name: Option<String>,
}

/// A successful [`WorkflowOutcome`] carrying `outputs` (under
/// [`OUTPUTS_KEY`]), for a `converge` that knows what it made.
///
/// ```
/// use blue_kubernetes::package::{outcome_with_outputs, OUTPUTS_KEY};
/// let outcome = outcome_with_outputs(&serde_json::json!({"oid": 16384})).unwrap();
/// assert_eq!(outcome[OUTPUTS_KEY]["oid"], 16384);
/// ```
pub fn outcome_with_outputs(outputs: &impl Serialize) -> CallbackResult<WorkflowOutcome> {
    let mut outcome = WorkflowOutcome::new();
    outcome.insert(OUTPUTS_KEY.into(), serde_json::to_value(outputs)?);
    Ok(outcome)
}
