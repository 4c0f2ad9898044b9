//! The admin credentials: the one Kubernetes read this package makes
//! itself, of the Secret `spec.config.adminSecretRef` names, in the
//! resource's namespace, through the operator's shared [`RawApi`].

use crate::config::AdminSecretRef;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use blue_kubernetes::Sensitive;
use blue_kubernetes_client::{ApiPath, ApiRequest, ErrorKind, RawApi};

/// The admin role's name and password.
#[derive(Debug)]
pub struct AdminCredentials {
    /// The admin role's name.
    pub user: String,
    /// Its password (redacted in `Debug`).
    pub password: Sensitive,
}

/// Why the admin credentials could not be read. Names the Secret's keys,
/// never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdminSecretError {
    /// The Secret does not exist.
    #[error("the admin secret does not exist")]
    Missing,
    /// Reading it failed.
    #[error("reading the admin secret failed ({0})")]
    Transport(ErrorKind),
    /// A key is absent, or not base64 of UTF-8 text.
    #[error("the admin secret has no usable {0:?} key")]
    BadKey(String),
    /// The Secret's name cannot be a path.
    #[error("the admin secret's name is not a valid object name")]
    InvalidName,
}

/// Reads the admin credentials from `namespace`'s Secret `secret.name`.
pub async fn read(
    api: &dyn RawApi,
    namespace: &str,
    secret: &AdminSecretRef,
) -> Result<AdminCredentials, AdminSecretError> {
    let path = ApiPath::namespaced("", "v1", namespace, "secrets", Some(&secret.name), None)
        .map_err(|_| AdminSecretError::InvalidName)?;
    let body = match api.send(ApiRequest::get(path)).await {
        Ok(answer) => answer.body.unwrap_or_default(),
        Err(e) if e.kind() == ErrorKind::NotFound => return Err(AdminSecretError::Missing),
        Err(e) => return Err(AdminSecretError::Transport(e.kind())),
    };
    let value = |key: &str| {
        body["data"][key]
            .as_str()
            .and_then(|text| STANDARD.decode(text).ok())
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .filter(|text| !text.is_empty())
            .ok_or_else(|| AdminSecretError::BadKey(key.to_string()))
    };
    Ok(AdminCredentials {
        user: value(&secret.user_key)?,
        password: Sensitive::new(value(&secret.password_key)?),
    })
}
