//! Errors of the controller crate.

/// Errors returned by [`controller`](crate::controller), [`reconcile`](crate::reconcile)
/// and [`start`](crate::start).
///
/// # Guarantees
/// No variant carries callback error text, validation messages, options or
/// kubectl output; transport errors are the client's text-free errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration field is unusable; names the field, never its value.
    #[error("invalid configuration: `{field}` {reason}")]
    InvalidConfig {
        /// The offending field, e.g. `workers`.
        field: &'static str,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A package is missing a required callback.
    #[error("package is missing the `{0}` callback")]
    MissingCallback(&'static str),
    /// A package's config type has no structural schema, so no CRD can
    /// describe it; names the field path in the type, never a value.
    #[error("config schema is not structural at `{path}`: {why}")]
    NotStructural {
        /// The node, e.g. `spec.config.endpoints[]`.
        path: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// [`start`](crate::start) was called outside a tokio runtime.
    #[error("start must be called inside a running tokio runtime")]
    NoRuntime,
    /// The `/metrics` and health listener could not be opened.
    #[error("listener could not be opened ({0:?})")]
    Listen(std::io::ErrorKind),
    /// The cluster could not be read or written.
    #[error("transport failed: {0}")]
    Transport(#[from] blue_kubernetes_client::Error),
}
