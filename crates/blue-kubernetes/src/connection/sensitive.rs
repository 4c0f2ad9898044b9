//! A credential in memory: shown nowhere by accident.

/// A connection value (a password, say). `Debug` and `Display` print
/// `<redacted>`, so a value that ends up in a log line or an error by
/// mistake leaks nothing; read it with [`expose`](Sensitive::expose).
///
/// ```
/// use blue_kubernetes::connection::Sensitive;
/// let password = Sensitive::new("hunter2");
/// assert_eq!(password.expose(), "hunter2");
/// assert_eq!(format!("{password} {password:?}"), "<redacted> <redacted>");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Sensitive(String);

impl Sensitive {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The value, unwrapped.
    pub fn into_inner(self) -> String {
        self.0
    }
}

impl std::fmt::Debug for Sensitive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl std::fmt::Display for Sensitive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}
