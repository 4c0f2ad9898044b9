//! Why a connection Secret could not be read or written.

use blue_kubernetes_client::ErrorKind;

/// Why a connection Secret could not be read or written. Never carries a
/// value; the Secret's name and keys are not secret.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectionError {
    /// Reading or writing the Secret failed.
    #[error("connection secret request failed ({0})")]
    Transport(ErrorKind),
    /// A Secret of that name exists and this resource does not own it.
    #[error("a secret of the connection secret's name exists and is not this resource's")]
    NotOurs,
    /// `key` is not a Secret data key (`[-._a-zA-Z0-9]+`).
    #[error("connection key {0:?} is not a valid secret key")]
    InvalidKey(String),
    /// The Secret's name or namespace is not a valid object name.
    #[error("the connection secret's name is not a valid object name")]
    InvalidName,
    /// Someone else kept writing the Secret; the pass retries.
    #[error("the connection secret kept changing while it was written")]
    Contended,
    /// The write was refused before it was sent: the lease the pass
    /// started under (leader election or its shard's) is no longer
    /// provably held, so another replica may own the resource now.
    #[error("connection secret write refused: the pass's lease is no longer held")]
    Fenced,
}

impl From<blue_kubernetes_client::Error> for ConnectionError {
    fn from(e: blue_kubernetes_client::Error) -> Self {
        match e {
            blue_kubernetes_client::Error::Fenced { .. } => ConnectionError::Fenced,
            e => ConnectionError::Transport(e.kind()),
        }
    }
}
