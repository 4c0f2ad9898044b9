//! What the resource asks for.

/// What the resource asks for, as seen by callbacks (the options'
/// `blue/event`; not a Kubernetes Event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    /// `spec.state` is `running` (or absent).
    Create,
    /// `spec.state` is `stopped`.
    Stop,
    /// `metadata.deletionTimestamp` is set.
    Delete,
}

impl Intent {
    /// The `blue/event` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Create => "create",
            Intent::Stop => "stop",
            Intent::Delete => "delete",
        }
    }
}
