//! Writing a package, beyond the root's [`Infrastructure`](crate::Infrastructure),
//! [`Context`](crate::Context), [`Observation`](crate::Observation),
//! [`Outcome`](crate::Outcome) and [`CallbackResult`]: no outputs
//! ([`NoOutputs`]), what `validate` returns ([`ValidationErrors`],
//! [`UserFacingMessage`]), a failure that is the user's to fix
//! ([`Rejected`]), blocking code ([`blocking`]), the fenced
//! Kubernetes [`Api`] handle, the size limits, and the closure form
//! ([`Package::builder`], whose callbacks get a [`CallbackInput`] and
//! return a [`WorkflowOutcome`]).

pub use api::Api;
pub use callback::blocking;
pub use closures::PackageBuilder;
pub use erased::Package;
pub use infrastructure::NoOutputs;
pub use observation::MAX_OUTPUTS_BYTES;
pub use options::{CallbackInput, EVENT_KEY, RESOURCE_KEY};
pub use rejected::Rejected;
pub use result::{
    outcome_with_outputs, CallbackError, CallbackResult, WorkflowOutcome, EXTERNAL_NAME_KEY,
    OUTPUTS_KEY,
};
pub use validation::{UserFacingMessage, ValidationErrors, MAX_USER_FACING_BYTES};

pub(crate) mod api;
pub(crate) mod callback;
pub(crate) mod closures;
pub(crate) mod context;
pub(crate) mod erased;
pub(crate) mod infrastructure;
pub(crate) mod observation;
pub(crate) mod options;
pub(crate) mod rejected;
pub(crate) mod result;
pub(crate) mod schema;
pub(crate) mod setters;
pub(crate) mod typed;
pub(crate) mod validation;
