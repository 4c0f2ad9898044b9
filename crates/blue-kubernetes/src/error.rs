//! Errors of the controller crate, and how an error is told with its
//! causes.

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
    /// The installed CRD (named) keeps unknown fields
    /// (`spec.preserveUnknownFields: true`), which older served versions
    /// and their conversion cannot work with.
    #[error("the installed CRD {0} has preserveUnknownFields: true; apply the generated CRD (preserveUnknownFields: false) before serving several versions")]
    PreservesUnknownFields(String),
    /// The cluster could not be read or written.
    #[error("transport failed: {0}")]
    Transport(#[from] blue_kubernetes_client::Error),
}

/// `error` and its whole `source()` chain, joined the way `anyhow`'s `{:#}`
/// joins them (`outer: middle: inner`): a wrapper's Display often names only
/// what failed (`db error`) and keeps why in its source.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::error_chain;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn a_chain_is_joined_outer_first_like_anyhow_alternate() {
        let inner = Layer("password authentication failed", None);
        let middle = Layer("connecting to db-1", Some(Box::new(inner)));
        let outer = Layer("db error", Some(Box::new(middle)));
        assert_eq!(
            error_chain(&outer),
            "db error: connecting to db-1: password authentication failed"
        );
        assert_eq!(error_chain(&Layer("alone", None)), "alone");
    }
}
