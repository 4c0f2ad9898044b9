//! An older served version, erased: what the schema, the CRD and the
//! conversion read of a [`Versions`](super::Versions) declaration.

use serde_json::Value;

/// An older served version, erased to JSON: the conversions of its config
/// (without the reserved keys) to and from the stored version's.
#[derive(Clone)]
pub(crate) struct OldVersion {
    pub(crate) name: String,
    /// The old config's OpenAPI v3 schema.
    pub(crate) schema: fn() -> Value,
    /// Stored config -> this version's. Fails only on a config that is not
    /// the stored type's.
    pub(crate) down: fn(&Value) -> Result<Value, serde_json::Error>,
    /// This version's config -> the stored one's.
    pub(crate) up: fn(&Value) -> Result<Value, serde_json::Error>,
}

impl std::fmt::Debug for OldVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

/// Whether `name` can be a version of a CRD: a DNS label starting with a
/// letter (`v1`, `v1beta2`), as the API server requires.
pub(crate) fn is_version_name(name: &str) -> bool {
    name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}
