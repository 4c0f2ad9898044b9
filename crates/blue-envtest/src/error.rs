//! What can go wrong starting or using a control plane.

use std::path::PathBuf;
use std::sync::Arc;

/// An error of this crate. Cloneable, so that every test sharing a control
/// plane that failed to start sees why. Its `Debug` is its message, so a
/// test's `unwrap()` or `?` prints the line that says what to do.
#[derive(Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// kube-apiserver or etcd is not on this machine. Starting never
    /// provisions them by itself.
    #[error(
        "no kube-apiserver and etcd for tests: run `cargo xtask control-plane provision`, or set \
         KUBEBUILDER_ASSETS (or TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD) to envtest binaries"
    )]
    MissingAssets,
    /// An envtest variable names something that is not an executable file.
    #[error("{path} is not an executable file (from {var} or KUBEBUILDER_ASSETS)")]
    NotExecutable {
        /// The path found.
        path: PathBuf,
        /// The variable for that binary.
        var: &'static str,
    },
    /// A file, directory, socket or process operation failed.
    #[error("{action}: {kind}")]
    Io {
        /// What was being done, e.g. `starting etcd ("/usr/bin/etcd")`.
        action: String,
        /// The operating system's error.
        kind: std::io::ErrorKind,
    },
    /// A command (openssl, kubectl) failed.
    #[error("{command} failed: {detail}")]
    Command {
        /// The command, without credentials.
        command: String,
        /// Its exit status and error output (from the local test server).
        detail: String,
    },
    /// etcd or kube-apiserver exited while starting.
    #[error("{process} exited early ({status})\n{logs}")]
    Exited {
        /// `etcd` or `kube-apiserver`.
        process: &'static str,
        /// Its exit status.
        status: String,
        /// The last lines of both logs.
        logs: String,
    },
    /// Something did not happen in time.
    #[error("not reached within {timeout_secs}s: {what}: {last}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long, in seconds.
        timeout_secs: u64,
        /// Why the last try failed (and log tails, where there are any).
        last: String,
    },
    /// A different CRD of the same name is already installed on this server.
    #[error(
        "a different CRD named {name} is already installed on this control plane; \
         a test that needs another version starts one of its own (Envtest::start)"
    )]
    CrdConflict {
        /// The CRD's `metadata.name`.
        name: String,
    },
    /// The value given as a CRD is not one.
    #[error("not a CRD: {reason}")]
    InvalidCrd {
        /// What is missing.
        reason: &'static str,
    },
    /// A namespace prefix that cannot start a namespace name.
    #[error("namespace prefix {prefix:?} is not lowercase letters, digits and '-' (at most 50, starting with a letter)")]
    InvalidPrefix {
        /// The prefix given.
        prefix: String,
    },
    /// The controller's client could not be created.
    #[error("creating the client: {0}")]
    Client(#[source] Arc<blue_kubernetes_client::Error>),
    /// Stopping left something behind.
    #[error("stopping the control plane: {0}")]
    Stop(String),
    /// A process or directory outlived what started it.
    #[error("left behind: {what}")]
    LeftBehind {
        /// The processes' command lines, or the directory.
        what: String,
    },
    /// An operator process did not stop the way it should.
    #[error("{who} exited with {status} on SIGTERM")]
    NotGraceful {
        /// Who, as the caller named it.
        who: String,
        /// Its exit status.
        status: String,
    },
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// Maps an I/O error to [`Error::Io`] with what was being done.
pub(crate) fn io_error(action: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let action = action.into();
    move |err| Error::Io {
        action,
        kind: err.kind(),
    }
}
