//! `spec.config` of the two kinds: a `PostgresServer` (where the server
//! is, whose admin credentials reach it) and a `PostgresDatabase` (which
//! server, by reference, and which database and role to manage).
//!
//! Types are checked by serde (and, on the cluster, by the generated CRD);
//! [`crate::desired::validate`] checks what a type cannot say.

use blue_kubernetes::related::Reference;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The PostgreSQL port when `port` is absent.
pub const DEFAULT_PORT: u16 = 5432;

/// `spec.config` of a `PostgresDatabase`. Holds no secret: the server
/// and its admin credentials are the referenced [`ServerConfig`]'s.
///
/// ```
/// use postgres_operator::config::PgConfig;
/// let config: PgConfig = serde_json::from_value(serde_json::json!({
///     "serverRef": {"name": "main"},
/// })).unwrap();
/// assert_eq!(config.server_ref.name, "main");
/// assert_eq!(config.database, None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PgConfig {
    /// Immutable. The `PostgresServer`, in the resource's namespace, the
    /// database lives on; the resource waits until it is Ready.
    pub server_ref: Reference,
    /// Immutable. The database's name; defaults to the resource's name.
    #[schemars(length(min = 1, max = 63))]
    pub database: Option<String>,
    /// Immutable. The role that owns the database and logs in with the
    /// connection Secret's password; defaults to the database's name.
    #[schemars(length(min = 1, max = 63))]
    pub role: Option<String>,
}

/// `spec.config` of a `PostgresServer`: where the server is and whose
/// admin credentials reach it. Holds no secret: the admin password stays
/// in the Secret [`AdminSecretRef`] names.
///
/// ```
/// use postgres_operator::config::ServerConfig;
/// let config: ServerConfig = serde_json::from_value(serde_json::json!({
///     "host": "db.internal",
///     "adminSecretRef": {"name": "pg-admin"},
/// })).unwrap();
/// assert_eq!(config.port, 5432);
/// assert_eq!(config.admin_secret_ref.password_key, "password");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServerConfig {
    /// The server's host name or IP address (plain TCP: TLS is out of
    /// scope for this example).
    #[schemars(length(min = 1, max = 253), regex(pattern = r"^[A-Za-z0-9.:_-]+$"))]
    pub host: String,
    /// The server's TCP port.
    #[serde(default = "default_port")]
    #[schemars(range(min = 1))]
    pub port: u16,
    /// The Secret, in the resource's namespace, with the credentials of a
    /// role that may create roles and databases.
    pub admin_secret_ref: AdminSecretRef,
}

/// Where the admin credentials are: a Secret and two of its keys (names,
/// not values: a server's outputs carry it to its databases).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AdminSecretRef {
    /// The Secret's name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The key holding the admin role's name.
    #[serde(default = "default_user_key")]
    pub user_key: String,
    /// The key holding the admin role's password.
    #[serde(default = "default_password_key")]
    pub password_key: String,
}

fn default_port() -> u16 {
    DEFAULT_PORT
}

fn default_user_key() -> String {
    "username".into()
}

fn default_password_key() -> String {
    "password".into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn everything_but_host_and_the_secret_name_has_a_default() {
        let c: ServerConfig =
            serde_json::from_value(json!({"host": "h", "adminSecretRef": {"name": "s"}})).unwrap();
        assert_eq!(c.port, 5432);
        assert_eq!(c.admin_secret_ref.user_key, "username");
        let d: PgConfig = serde_json::from_value(json!({"serverRef": {"name": "s"}})).unwrap();
        assert_eq!((d.database, d.role), (None, None));
    }

    #[test]
    fn every_field_decodes_from_camel_case() {
        let c: ServerConfig = serde_json::from_value(json!({
            "host": "10.0.0.5", "port": 6543,
            "adminSecretRef": {"name": "s", "userKey": "u", "passwordKey": "p"},
        }))
        .unwrap();
        assert_eq!(c.port, 6543);
        assert_eq!(c.admin_secret_ref.password_key, "p");
        let d: PgConfig = serde_json::from_value(
            json!({"serverRef": {"name": "s"}, "database": "app", "role": "app_owner"}),
        )
        .unwrap();
        assert_eq!(d.role.as_deref(), Some("app_owner"));
    }

    #[test]
    fn unknown_fields_wrong_types_and_missing_fields_are_refused() {
        for bad in [
            json!({"host": "h", "adminSecretRef": {"name": "s"}, "password": "x"}),
            json!({"host": "h", "port": "5432", "adminSecretRef": {"name": "s"}}),
            json!({"host": "h", "port": 70000, "adminSecretRef": {"name": "s"}}),
            json!({"adminSecretRef": {"name": "s"}}),
            json!({"host": "h"}),
        ] {
            assert!(
                serde_json::from_value::<ServerConfig>(bad.clone()).is_err(),
                "{bad}"
            );
        }
        for bad in [
            json!({}),
            json!({"serverRef": {"name": "s"}, "host": "h"}),
            json!({"serverRef": "s"}),
        ] {
            let refused = serde_json::from_value::<PgConfig>(bad.clone()).is_err();
            assert!(refused, "{bad}");
        }
    }
}
