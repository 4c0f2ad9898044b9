//! Transport errors: exit code or HTTP status, operation and classification,
//! never output or bodies.

/// What kind of failure kubectl reported, derived from its output.
///
/// The classification is the only thing the transport keeps from kubectl's
/// stdout and stderr; the text itself is dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The object changed since the snapshot the write was computed from (HTTP 409).
    Conflict,
    /// The object or type does not exist (HTTP 404).
    NotFound,
    /// Credentials were rejected (HTTP 401).
    Unauthorized,
    /// Credentials lack permission (HTTP 403).
    Forbidden,
    /// The request or process deadline passed.
    Timeout,
    /// The API server could not be reached or is not serving.
    Unavailable,
    /// The server rejected the request as invalid (HTTP 422/400).
    Invalid,
    /// The resourceVersion or continue token asked for is too old (HTTP
    /// 410): list again from scratch.
    Gone,
    /// Anything else.
    Other,
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            ErrorKind::Conflict => "conflict",
            ErrorKind::NotFound => "not found",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::Forbidden => "forbidden",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Invalid => "invalid",
            ErrorKind::Gone => "gone",
            ErrorKind::Other => "other",
        };
        f.write_str(s)
    }
}

/// Errors of the transports.
///
/// # Guarantees
/// No variant holds kubectl's stdout, stderr or arguments, so neither
/// `Display` nor `Debug` can leak a secret that passed through kubectl.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// kubectl exited non-zero.
    #[error("kubectl {operation} failed with exit code {exit_code} ({kind})")]
    Kubectl {
        /// The first argument, e.g. `get`, `patch`, `replace`.
        operation: String,
        /// kubectl's exit code.
        exit_code: i32,
        /// Classification derived from kubectl's output.
        kind: ErrorKind,
    },
    /// The process deadline passed; kubectl and its children were killed.
    #[error("kubectl {operation} timed out after {timeout_ms} ms")]
    Timeout {
        /// The first argument.
        operation: String,
        /// The deadline that passed.
        timeout_ms: u64,
    },
    /// kubectl could not be started (binary missing, not executable...).
    #[error("kubectl {operation} could not be started ({source_kind:?})")]
    Spawn {
        /// The first argument.
        operation: String,
        /// The I/O error kind, without paths.
        source_kind: std::io::ErrorKind,
    },
    /// kubectl printed something that is not the JSON the operation expects.
    #[error("kubectl {operation} printed output that is not the expected json")]
    Decode {
        /// The first argument.
        operation: String,
    },
    /// The options given to the client or to a request are unusable.
    #[error("invalid option `{field}`: {reason}")]
    InvalidOption {
        /// The offending field, e.g. `context`.
        field: &'static str,
        /// Why it is rejected (never echoes the value).
        reason: &'static str,
    },
    /// A label selector the API server would refuse, named by its first
    /// malformed term (a selector is the caller's own text, never data
    /// read from the cluster).
    #[error("invalid label selector term `{term}`")]
    InvalidLabelSelector {
        /// The malformed term, trimmed (empty for an empty term).
        term: String,
    },
    /// A write refused without being sent because this process can no
    /// longer prove it holds the lease the write was made under (the
    /// leader-election Lease, or the Lease of the resource's shard, in the
    /// term the pass started in). Classified as
    /// [`ErrorKind::Conflict`]: like a lost race, the caller's view is stale
    /// and nothing may follow from it.
    #[error("{operation} refused: the lease it was made under is no longer provably held")]
    Fenced {
        /// The refused operation, e.g. `replace`.
        operation: String,
    },
    /// Preparing a private temporary file failed.
    #[error("temporary file could not be prepared ({0:?})")]
    TempFile(std::io::ErrorKind),
    /// The API server answered a raw request with a non-2xx status.
    #[error("{method} request failed with http status {status} ({kind})")]
    Http {
        /// The HTTP method, e.g. `PUT`.
        method: &'static str,
        /// The HTTP status code.
        status: u16,
        /// Classification from the status and the Kubernetes `Status` reason.
        kind: ErrorKind,
    },
    /// The transport does not offer this operation (e.g. watches through
    /// the per-call kubectl transport); callers fall back to something else.
    #[error("{operation} is not supported by this transport")]
    Unsupported {
        /// The operation, e.g. `watch`.
        operation: &'static str,
    },
    /// The `kubectl proxy` behind a proxy client could not carry the request.
    #[error("kubectl proxy {problem} ({kind})")]
    Proxy {
        /// What went wrong, a fixed phrase (never kubectl's output).
        problem: &'static str,
        /// Classification: `Unavailable` unless the problem says otherwise.
        kind: ErrorKind,
    },
    /// The `kube::Client` behind a `KubeClient` (feature `kube`) could not
    /// carry the request.
    #[error("kube client {problem} ({kind})")]
    Kube {
        /// What went wrong, a fixed phrase (never kube's message).
        problem: &'static str,
        /// Classification: `Unavailable` for a connection that failed,
        /// `Unauthorized` for credentials that could not be had, `Timeout`
        /// for the client's own connect or read timeout.
        kind: ErrorKind,
    },
}

impl Error {
    /// The classification of this error.
    ///
    /// ```
    /// use blue_kubernetes_client::{Error, ErrorKind};
    /// let e = Error::Kubectl { operation: "patch".into(), exit_code: 1, kind: ErrorKind::Conflict };
    /// assert_eq!(e.kind(), ErrorKind::Conflict);
    /// assert!(e.is_conflict());
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Kubectl { kind, .. } => *kind,
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::Spawn { .. } => ErrorKind::Unavailable,
            Error::Http { kind, .. } | Error::Proxy { kind, .. } | Error::Kube { kind, .. } => {
                *kind
            }
            Error::Fenced { .. } => ErrorKind::Conflict,
            // The API server answers such a selector with 400 Bad Request.
            Error::InvalidLabelSelector { .. } => ErrorKind::Invalid,
            Error::Decode { .. }
            | Error::InvalidOption { .. }
            | Error::TempFile(_)
            | Error::Unsupported { .. } => ErrorKind::Other,
        }
    }

    /// The operation that failed, when the error belongs to one: kubectl's
    /// (`get`, `patch`, `replace`...) or, through the proxy or kube, the
    /// HTTP method.
    ///
    /// ```
    /// use blue_kubernetes_client::{Error, ErrorKind};
    /// assert_eq!(Error::kubectl("patch", ErrorKind::Forbidden).operation(), Some("patch"));
    /// ```
    pub fn operation(&self) -> Option<&str> {
        match self {
            Error::Kubectl { operation, .. }
            | Error::Timeout { operation, .. }
            | Error::Spawn { operation, .. }
            | Error::Decode { operation }
            | Error::Fenced { operation } => Some(operation),
            // Through the proxy or kube the operation is the HTTP method.
            Error::Http { method, .. } => Some(method),
            Error::Proxy { .. } => Some("proxy"),
            Error::Kube { .. } => Some("kube"),
            Error::Unsupported { operation } => Some(operation),
            Error::InvalidOption { .. }
            | Error::InvalidLabelSelector { .. }
            | Error::TempFile(_) => None,
        }
    }

    /// The HTTP status, when the API server's answer is known.
    ///
    /// ```
    /// use blue_kubernetes_client::{Error, ErrorKind};
    /// let e = Error::Http { method: "POST", status: 409, kind: ErrorKind::Other };
    /// assert_eq!(e.http_status(), Some(409));
    /// ```
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Error::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// True when the write lost an optimistic-concurrency race.
    pub fn is_conflict(&self) -> bool {
        self.kind() == ErrorKind::Conflict
    }

    /// A classified kubectl failure, as fakes and runners produce them.
    pub fn kubectl(operation: impl Into<String>, kind: ErrorKind) -> Self {
        Error::Kubectl {
            operation: operation.into(),
            exit_code: 1,
            kind,
        }
    }
}
