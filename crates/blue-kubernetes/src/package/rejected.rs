//! A failure the resource's user must fix: the infrastructure refused the
//! input. The one callback error whose words (its [`UserFacingMessage`])
//! reach the resource's users.

use crate::package::result::CallbackError;
use crate::package::validation::UserFacingMessage;

/// The error a callback returns when the infrastructure refused the
/// resource's input, so that only an edit can help: a DNS API answering
/// 422 to a malformed address, a database refusing an unknown encoding.
///
/// The resource becomes `Rejected` / `InputRejected` (conditions `Ready`
/// False, `Reconciling` False, `Stalled` True) and the message becomes a
/// Warning Event on it (with the connection values the pass handed out
/// redacted, aggregated and rate-limited like every Event; never in
/// status). It is not retried with backoff and `retryCount` does not
/// grow: the next attempt comes with an edit (a new generation), a new
/// request token, or the periodic check after the interval. A durable-steps
/// run it cuts short ends there: the next attempt starts a new run, with
/// new keys.
///
/// Return it from `observe`, `converge` or `delete` (also from inside a
/// durable step: [`Steps::run`](crate::steps::Steps::run) keeps it as the
/// source of its error, and a callback that passes that error on with `?`
/// rejects), found anywhere in the error's `source()` chain. Use it only
/// when the backend refused the input itself; anything that may pass on
/// retry (a timeout, a 5xx, a conflict, a dependency not there yet) is an
/// ordinary error, retried with backoff. Config that can be judged without
/// the backend belongs in `validate`.
///
/// ```
/// use blue_kubernetes::package::{CallbackError, Rejected, UserFacingMessage};
/// fn refused(status: u16, field: &str) -> CallbackError {
///     let message = UserFacingMessage::new(format!("config.{field}: refused by the DNS server"));
///     let rejected = Rejected::new(message).with_source(format!("HTTP {status}"));
///     rejected.into()
/// }
/// let error = refused(422, "content");
/// let rejected = error.downcast_ref::<Rejected>().unwrap();
/// assert_eq!(rejected.message().as_str(), "config.content: refused by the DNS server");
/// ```
pub struct Rejected {
    message: UserFacingMessage,
    source: Option<CallbackError>,
}

impl Rejected {
    /// The infrastructure refused the input; `message` tells the user
    /// what to fix.
    pub fn new(message: UserFacingMessage) -> Self {
        Self {
            message,
            source: None,
        }
    }

    /// Keeps the backend's own error as the source, for the operator's
    /// log only (the Event carries the message alone).
    pub fn with_source(mut self, source: impl Into<CallbackError>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// What the resource's users read.
    pub fn message(&self) -> &UserFacingMessage {
        &self.message
    }
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rejected: {}", self.message.as_str())
    }
}

/// The message only: the source is the operator's log's.
impl std::fmt::Debug for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rejected")
            .field("message", &self.message)
            .finish_non_exhaustive()
    }
}

impl std::error::Error for Rejected {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// The first [`Rejected`] in `error`'s `source()` chain.
pub(crate) fn find<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a Rejected> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(rejected) = error.downcast_ref::<Rejected>() {
            return Some(rejected);
        }
        next = error.source();
    }
    None
}
