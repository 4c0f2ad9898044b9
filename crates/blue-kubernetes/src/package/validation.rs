//! What `validate` returns: messages for the operator's log, and messages
//! the package marks as safe to show the resource's users.
//!
//! Status never carries either: it holds generic reasons only. A
//! message reaches the resource's users only when the package wraps it in
//! a [`UserFacingMessage`]: then, with Events on
//! ([`Config::event_component`](crate::Config::event_component)), it is
//! the message of the `InvalidConfiguration` Warning Event. Everything
//! else stays in the operator's log.

/// Bytes of user-facing text one Event carries at most; longer text is
/// cut at a character boundary and ends with `...`.
pub const MAX_USER_FACING_BYTES: usize = 1024;

/// A validation message the package declares safe for the resource's users
/// to read: it names what to fix in their own config and carries no
/// secret, no infrastructure detail and nothing from outside the resource.
/// It is the message of the resource's `InvalidConfiguration` Warning
/// Event (never its status), or, carried by a
/// [`Rejected`](crate::package::Rejected) error, of its `InputRejected`
/// one. Not to be confused with a preflight
/// [`Problem`](crate::config::Problem), which is for the operator.
///
/// ```
/// use blue_kubernetes::package::{UserFacingMessage, ValidationErrors};
/// let mut errors = ValidationErrors::new();
/// errors.push_user_facing(UserFacingMessage::new(
///     "config.database must not be a system database",
/// ));
/// errors.push("database postgres is listed in pg_database as datistemplate");
/// assert_eq!(errors.len(), 2);
/// ```
///
/// A message may name the field it is about ([`with_field`](Self::with_field)):
/// the admission webhook then refuses the resource with that field path
/// (`kubectl apply` shows it beside the message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserFacingMessage {
    text: String,
    field: Option<String>,
}

impl UserFacingMessage {
    /// Marks `text` as safe for the resource's users.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            field: None,
        }
    }

    /// The message is about the field at `path`, a JSON path from the
    /// resource's root as Kubernetes writes them (`spec.config.size`,
    /// `spec.config.hosts[2]`).
    ///
    /// ```
    /// use blue_kubernetes::package::UserFacingMessage;
    /// let message = UserFacingMessage::new("must be 1..=64").with_field("spec.config.size");
    /// assert_eq!(message.field(), Some("spec.config.size"));
    /// ```
    pub fn with_field(mut self, path: impl Into<String>) -> Self {
        self.field = Some(path.into());
        self
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The path of the field the message is about, if it names one.
    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }
}

/// The errors `validate` found; empty when the config is valid.
///
/// A validate callback returns either this or, as before, a `Vec<String>`
/// (every message log-only). Messages pushed with [`push`](Self::push) go
/// to the operator's log only; those pushed with
/// [`push_user_facing`](Self::push_user_facing) also become the Warning
/// Event the resource's users see. `Debug` shows counts, never text.
///
/// ```
/// use blue_kubernetes::{package::{UserFacingMessage, ValidationErrors}, Package};
/// # use blue_kubernetes::{package::WorkflowOutcome, Observation};
/// # use blue_kubernetes_client::ResourceDescriptor;
/// let package = Package::builder(ResourceDescriptor::new("db.example.com", "v1", "databases", "Database"))
///     .validate(|opts| {
///         let mut errors = ValidationErrors::new();
///         if opts.get("database").and_then(|v| v.as_str()) == Some("postgres") {
///             errors.push_user_facing(UserFacingMessage::new(
///                 "config.database must not be a system database",
///             ));
///         }
///         Ok(errors)
///     })
/// #   .identity(|opts| Ok(vec![Some(opts.profile().to_string())]))
/// #   .observe(|_| Ok(Observation::ABSENT))
/// #   .converge(|_| Ok(WorkflowOutcome::new()))
/// #   .delete(|_| Ok(WorkflowOutcome::new()))
///     .build()
///     .unwrap();
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ValidationErrors {
    entries: Vec<Entry>,
}

#[derive(Clone, PartialEq, Eq)]
enum Entry {
    LogOnly(String),
    UserFacing(UserFacingMessage),
}

impl Entry {
    fn text(&self) -> &str {
        match self {
            Entry::LogOnly(text) => text,
            Entry::UserFacing(message) => message.as_str(),
        }
    }
}

impl ValidationErrors {
    /// No errors: the config is valid.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a message for the operator's log only.
    pub fn push(&mut self, message: impl Into<String>) {
        self.entries.push(Entry::LogOnly(message.into()));
    }

    /// Adds a message the resource's users may read (in a Warning Event).
    pub fn push_user_facing(&mut self, message: UserFacingMessage) {
        self.entries.push(Entry::UserFacing(message));
    }

    /// Whether the config is valid.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many errors.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Every message, in order, for the operator's log.
    pub(crate) fn texts(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(Entry::text)
    }

    /// How many messages are user-facing.
    pub(crate) fn user_facing_count(&self) -> usize {
        self.user_facing().count()
    }

    fn user_facing(&self) -> impl Iterator<Item = &str> {
        self.user_facing_messages().map(UserFacingMessage::as_str)
    }

    /// The user-facing messages, with their fields: what an admission
    /// denial may carry.
    pub(crate) fn user_facing_messages(&self) -> impl Iterator<Item = &UserFacingMessage> {
        self.entries.iter().filter_map(|e| match e {
            Entry::UserFacing(m) => Some(m),
            Entry::LogOnly(_) => None,
        })
    }

    /// The user-facing messages joined with `; ` and bounded by
    /// [`MAX_USER_FACING_BYTES`], or `None` when there are none: the only
    /// package text an Event may carry.
    pub(crate) fn for_users(&self) -> Option<String> {
        let joined = self.user_facing().collect::<Vec<_>>().join("; ");
        (!joined.is_empty()).then(|| bounded(joined))
    }
}

pub(crate) fn bounded(mut text: String) -> String {
    if text.len() <= MAX_USER_FACING_BYTES {
        return text;
    }
    let mut end = MAX_USER_FACING_BYTES - "...".len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str("...");
    text
}

impl std::fmt::Debug for ValidationErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValidationErrors")
            .field("len", &self.len())
            .field("user_facing", &self.user_facing_count())
            .finish()
    }
}

/// Every message log-only: what a validate callback returned before
/// messages could be marked.
impl From<Vec<String>> for ValidationErrors {
    fn from(messages: Vec<String>) -> Self {
        Self {
            entries: messages.into_iter().map(Entry::LogOnly).collect(),
        }
    }
}

/// Every message user-facing.
///
/// ```
/// use blue_kubernetes::package::{UserFacingMessage, ValidationErrors};
/// let errors: ValidationErrors = ["config.size must be 1..=64"].into_iter().map(UserFacingMessage::new).collect();
/// assert_eq!(errors.len(), 1);
/// ```
impl FromIterator<UserFacingMessage> for ValidationErrors {
    fn from_iter<I: IntoIterator<Item = UserFacingMessage>>(messages: I) -> Self {
        Self {
            entries: messages.into_iter().map(Entry::UserFacing).collect(),
        }
    }
}

/// One user-facing message.
impl From<UserFacingMessage> for ValidationErrors {
    fn from(message: UserFacingMessage) -> Self {
        Self {
            entries: vec![Entry::UserFacing(message)],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_marked_messages_are_for_users() {
        let mut errors = ValidationErrors::from(vec!["secret detail".to_string()]);
        assert_eq!(errors.for_users(), None);
        errors.push_user_facing(UserFacingMessage::new("a must be set"));
        errors.push("another detail");
        errors.push_user_facing(UserFacingMessage::new("b must be positive"));
        assert_eq!(
            errors.for_users().as_deref(),
            Some("a must be set; b must be positive")
        );
        assert_eq!(errors.len(), 4);
        assert_eq!(errors.texts().count(), 4);
        assert!(!format!("{errors:?}").contains("detail"));
    }

    #[test]
    fn long_user_facing_text_is_cut_at_a_character_boundary() {
        let errors = ValidationErrors::from(UserFacingMessage::new("é".repeat(1000)));
        let text = errors.for_users().unwrap();
        assert!(text.len() <= MAX_USER_FACING_BYTES, "{}", text.len());
        assert!(text.ends_with("é..."), "{text}");
    }
}
