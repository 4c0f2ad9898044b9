//! The admin credentials: the one Kubernetes read this package makes
//! itself, of the Secret `spec.config.adminSecretRef` names, in the
//! resource's namespace, as a typed k8s-openapi `Secret` (its `data`
//! decoded from base64 by k8s-openapi) through the operator's shared [`RawApi`].

use crate::config::AdminSecretRef;
use blue_kubernetes::connection::Sensitive;
use blue_kubernetes_client::typed::TypedApi;
use blue_kubernetes_client::{Error, ErrorKind, RawApi};
use k8s_openapi::api::core::v1::Secret;

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
    /// A key is absent, empty, or not UTF-8 text.
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
    let found = match TypedApi::<Secret>::namespaced(api, namespace)
        .get(&secret.name)
        .await
    {
        Ok(found) => found,
        Err(e) if e.kind() == ErrorKind::NotFound => return Err(AdminSecretError::Missing),
        Err(Error::InvalidOption { .. }) => return Err(AdminSecretError::InvalidName),
        Err(e) => return Err(AdminSecretError::Transport(e.kind())),
    };
    let data = found.data.unwrap_or_default();
    let value = |key: &str| {
        data.get(key)
            .and_then(|bytes| String::from_utf8(bytes.0.clone()).ok())
            .filter(|text| !text.is_empty())
            .ok_or_else(|| AdminSecretError::BadKey(key.to_string()))
    };
    Ok(AdminCredentials {
        user: value(&secret.user_key)?,
        password: Sensitive::new(value(&secret.password_key)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use blue_testkit::{FakeCluster, Fault, Operation};
    use serde_json::json;

    fn secret_ref(name: &str) -> AdminSecretRef {
        serde_json::from_value(json!({"name": name})).unwrap()
    }

    fn cluster_with(data: serde_json::Value) -> FakeCluster {
        let cluster = FakeCluster::new();
        let admin = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "admin"}, "stringData": data});
        cluster.create_object("/api/v1/namespaces/db/secrets", admin);
        cluster
    }

    #[tokio::test]
    async fn the_credentials_are_the_secrets_decoded_keys() {
        let cluster = cluster_with(json!({"username": "root", "password": "s3cret"}));
        let read = read(&cluster, "db", &secret_ref("admin")).await.unwrap();
        assert_eq!(read.user, "root");
        assert_eq!(read.password.expose(), "s3cret");
    }

    #[tokio::test]
    async fn a_missing_secret_key_or_name_and_a_failed_read_are_told_apart() {
        let cluster = cluster_with(json!({"username": "root", "password": ""}));
        let missing = read(&cluster, "db", &secret_ref("other")).await;
        assert_eq!(missing.unwrap_err(), AdminSecretError::Missing);
        let empty = read(&cluster, "db", &secret_ref("admin")).await;
        assert_eq!(
            empty.unwrap_err(),
            AdminSecretError::BadKey("password".into())
        );
        let invalid = read(&cluster, "db", &secret_ref("a/../b")).await;
        assert_eq!(invalid.unwrap_err(), AdminSecretError::InvalidName);
        cluster.inject(Operation::RawGet, Fault::Kind(ErrorKind::Forbidden));
        let refused = read(&cluster, "db", &secret_ref("admin")).await;
        assert_eq!(
            refused.unwrap_err(),
            AdminSecretError::Transport(ErrorKind::Forbidden)
        );
    }
}
