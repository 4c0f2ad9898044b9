//! What a callback returns, and the closure form's outcome map.

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
