//! Why a storage migration stopped.

use blue_kubernetes_client::ErrorKind;

/// Why [`Migration::run`](super::Migration::run) returned without
/// finishing. Names the request and the transport's classification only,
/// never an object's content or the server's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MigrationError {
    /// A request failed in a way no retry changes (RBAC refused it, the
    /// object does not validate at the storage version), or kept failing.
    #[error("storage migration of {kind}: {what} failed ({error})")]
    Request {
        /// The kind, as `plural.group`.
        kind: String,
        /// What was being done, e.g. `rewriting default/w1`.
        what: String,
        /// The transport's classification.
        error: ErrorKind,
    },
    /// The migration's settings are not usable (e.g. an invalid Lease
    /// name).
    #[error("storage migration: {0}")]
    Settings(String),
    /// Asked to stop before it finished; it starts over next time.
    #[error("storage migration stopped before it finished")]
    Stopped,
}
