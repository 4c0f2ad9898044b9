//! What a `PostgresDatabase` (and a `PostgresServer`) asks for, computed
//! without I/O: validation, identity, and the resolved [`Target`] (server,
//! database, role).
//!
//! Messages name the offending field but never echo a value.

use crate::config::{PgConfig, ServerConfig};
use crate::outputs::ServerOutputs;
use blue_kubernetes::Options;

/// The first element of every identity: the backend this package manages.
pub const IDENTITY_BACKEND: &str = "postgres";

/// Databases the operator never manages (so `Destroy` cannot drop them).
pub const RESERVED_DATABASES: &[&str] = &["postgres", "template0", "template1"];

/// Role names PostgreSQL reserves or that belong to the server itself.
pub const RESERVED_ROLES: &[&str] = &[
    "postgres",
    "public",
    "none",
    "current_user",
    "current_role",
    "session_user",
];

/// The server, database and role one resource manages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// The database's name.
    pub database: String,
    /// The owning role's name.
    pub role: String,
    /// The resource's namespace (where the admin Secret is).
    pub namespace: String,
    /// The comment marking the role as this resource's (see [`owner_mark`]).
    pub mark: String,
}

/// The comment this operator puts on the roles it creates:
/// `managed by postgres-operator for <namespace>/<name>`. A role without
/// it (or with another resource's) is never altered or dropped.
pub fn owner_mark(namespace: &str, name: &str) -> String {
    format!("managed by postgres-operator for {namespace}/{name}")
}

/// A role or database name: lowercase letters, digits, `_` and `-`,
/// starting with a letter or `_`, at most 63 bytes (PostgreSQL's limit).
///
/// ```
/// use postgres_operator::desired::is_valid_name;
/// assert!(is_valid_name("app-db") && is_valid_name("_x9"));
/// assert!(!is_valid_name("App") && !is_valid_name("9a") && !is_valid_name("a\"b"));
/// ```
pub fn is_valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    let first_ok = matches!(bytes.next(), Some(b'a'..=b'z' | b'_'));
    first_ok
        && name.len() <= 63
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'))
}

fn is_valid_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b':' | b'_' | b'-'))
}

fn is_valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 253
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

fn metadata<'a>(opts: &'a Options, key: &str) -> &'a str {
    opts.resource()["metadata"][key].as_str().unwrap_or("")
}

/// The database's name: `database`, else the resource's name.
pub fn database_name(config: &PgConfig, opts: &Options) -> String {
    config
        .database
        .clone()
        .unwrap_or_else(|| metadata(opts, "name").to_string())
}

/// The role's name: `role`, else the database's.
pub fn role_name(config: &PgConfig, opts: &Options) -> String {
    config
        .role
        .clone()
        .unwrap_or_else(|| database_name(config, opts))
}

/// A `PostgresServer` config's problems, empty when valid.
pub fn validate_server(config: &ServerConfig) -> Vec<String> {
    let mut errors = Vec::new();
    if !is_valid_host(&config.host) {
        errors.push("host: must be a host name or an IP address".to_string());
    }
    if config.port == 0 {
        errors.push("port: must be between 1 and 65535".to_string());
    }
    let secret = &config.admin_secret_ref;
    if !is_dns_subdomain(&secret.name) {
        errors.push("adminSecretRef.name: must be a Secret name".to_string());
    }
    if !is_valid_key(&secret.user_key) || !is_valid_key(&secret.password_key) {
        errors.push("adminSecretRef: keys must match [-._a-zA-Z0-9]+".to_string());
    }
    errors
}

/// A `PostgresDatabase` config's problems, empty when valid (the server
/// reference is the controller's to check).
pub fn validate(config: &PgConfig, opts: &Options) -> Vec<String> {
    let mut errors = Vec::new();
    let database = database_name(config, opts);
    if !is_valid_name(&database) {
        errors.push(
            "database: must match ^[a-z_][a-z0-9_-]{0,62}$ (set it when the resource's name starts with a digit)"
                .to_string(),
        );
    } else if RESERVED_DATABASES.contains(&database.as_str()) {
        errors.push("database: names a database the server needs".to_string());
    }
    let role = role_name(config, opts);
    if !is_valid_name(&role) {
        errors.push("role: must match ^[a-z_][a-z0-9_-]{0,62}$".to_string());
    } else if role.starts_with("pg_") || RESERVED_ROLES.contains(&role.as_str()) {
        errors.push("role: names a reserved role".to_string());
    }
    errors
}

/// `["postgres", "<namespace>/<server>", "<database>"]`: two resources
/// naming one database on one `PostgresServer` share a lock, so they never
/// run at once. It names the server resource rather than its host and
/// port: identity is computed from the config alone (two
/// `PostgresServer`s naming one host do not share locks).
pub fn identity(config: &PgConfig, opts: &Options) -> Vec<Option<String>> {
    let server = format!("{}/{}", metadata(opts, "namespace"), config.server_ref.name);
    vec![
        Some(IDENTITY_BACKEND.to_string()),
        Some(server),
        Some(database_name(config, opts)),
    ]
}

/// The resolved target of a validated config on `server` (the referenced
/// `PostgresServer`'s outputs).
pub fn target(config: &PgConfig, opts: &Options, server: &ServerOutputs) -> Target {
    let namespace = metadata(opts, "namespace").to_string();
    Target {
        host: server.host.clone(),
        port: server.port,
        database: database_name(config, opts),
        role: role_name(config, opts),
        mark: owner_mark(&namespace, metadata(opts, "name")),
        namespace,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn opts(name: &str) -> Options {
        Options::from_resource(&json!({
            "metadata": {"name": name, "namespace": "team-a", "uid": "u1"},
            "spec": {"config": {}},
        }))
    }

    fn merged(mut base: Value, extra: Value) -> Value {
        let extra = extra.as_object().unwrap().clone();
        base.as_object_mut().unwrap().extend(extra);
        base
    }

    fn config(extra: Value) -> PgConfig {
        serde_json::from_value(merged(json!({"serverRef": {"name": "main"}}), extra)).unwrap()
    }

    fn server_config(extra: Value) -> ServerConfig {
        let base = json!({"host": "db.internal", "adminSecretRef": {"name": "pg-admin"}});
        serde_json::from_value(merged(base, extra)).unwrap()
    }

    fn server() -> ServerOutputs {
        ServerOutputs {
            host: "db.internal".into(),
            port: 5432,
            version: "15.8".into(),
            admin_secret_ref: server_config(json!({})).admin_secret_ref,
        }
    }

    #[test]
    fn database_and_role_default_to_the_resource_name() {
        let t = target(&config(json!({})), &opts("app-db"), &server());
        assert_eq!((t.database.as_str(), t.role.as_str()), ("app-db", "app-db"));
        assert_eq!((t.host.as_str(), t.port), ("db.internal", 5432));
        assert_eq!(t.mark, "managed by postgres-operator for team-a/app-db");
        let t = target(
            &config(json!({"database": "orders"})),
            &opts("x"),
            &server(),
        );
        assert_eq!((t.database.as_str(), t.role.as_str()), ("orders", "orders"));
        let t = target(&config(json!({"role": "svc"})), &opts("x"), &server());
        assert_eq!((t.database.as_str(), t.role.as_str()), ("x", "svc"));
    }

    #[test]
    fn a_valid_config_has_no_errors() {
        assert!(validate(&config(json!({})), &opts("app")).is_empty());
        let full = config(json!({"database": "a_b", "role": "r-1"}));
        assert!(validate(&full, &opts("app")).is_empty());
        assert!(validate_server(&server_config(json!({"port": 6432}))).is_empty());
    }

    #[test]
    fn bad_names_are_errors_that_never_echo_the_value() {
        for (extra, name, field) in [
            (json!({"database": "Bad\"Name"}), "app", "database"),
            (json!({}), "9lives", "database"),
            (json!({"database": "template1"}), "app", "database"),
            (json!({"role": "pg_monitor"}), "app", "role"),
            (json!({"role": "postgres"}), "app", "role"),
            (json!({"role": "x y"}), "app", "role"),
        ] {
            let errors = validate(&config(extra.clone()), &opts(name));
            // A bad database name is also the default role's.
            assert!(
                !errors.is_empty() && errors.len() <= 2,
                "{extra}: {errors:?}"
            );
            assert!(errors[0].starts_with(field), "{extra}: {errors:?}");
            for value in ["Bad", "pg_monitor", "9lives"] {
                assert!(!errors.concat().contains(value), "{errors:?}");
            }
        }
    }

    #[test]
    fn bad_hosts_ports_and_secret_keys_of_a_server_never_echo_the_value() {
        for (extra, field) in [
            (json!({"host": "h'; drop"}), "host"),
            (json!({"port": 0}), "port"),
            (
                json!({"adminSecretRef": {"name": "Not_A_Name"}}),
                "adminSecretRef.name",
            ),
            (
                json!({"adminSecretRef": {"name": "s", "userKey": "a/b"}}),
                "adminSecretRef",
            ),
        ] {
            let errors = validate_server(&server_config(extra.clone()));
            assert_eq!(errors.len(), 1, "{extra}: {errors:?}");
            assert!(errors[0].starts_with(field), "{extra}: {errors:?}");
            for value in ["drop", "Not_A_Name", "a/b"] {
                assert!(!errors.concat().contains(value), "{errors:?}");
            }
        }
    }

    #[test]
    fn identity_is_backend_server_resource_and_database() {
        let id = identity(&config(json!({"role": "other"})), &opts("app"));
        let id: Vec<_> = id.into_iter().map(Option::unwrap).collect();
        assert_eq!(id, ["postgres", "team-a/main", "app"]);
        // Two resources naming one database on one server share a lock.
        let other = identity(&config(json!({"database": "app"})), &opts("b"));
        assert_eq!(other, identity(&config(json!({})), &opts("app")));
    }
}
