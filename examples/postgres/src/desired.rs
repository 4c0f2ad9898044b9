//! What a `PostgresDatabase` (and a `PostgresServer`) asks for, computed
//! without I/O: validation, identity, and the resolved [`Target`] (server,
//! database, role).
//!
//! Messages name the offending field but never echo a value.

use crate::config::{PgConfig, ServerConfig};
use crate::outputs::ServerOutputs;
use blue_kubernetes::{Context, IdentityContext};

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

/// The resource a config belongs to, as far as names go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Subject<'a> {
    /// Its namespace.
    pub namespace: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Its external name: the database's name, as recorded once the
    /// database existed or as a user set it to import one
    /// ([`crate::external_name`]).
    pub external_name: Option<&'a str>,
}

impl<'a> Subject<'a> {
    /// The subject of the callback with context `cx`.
    pub fn of<C>(cx: &'a Context<C>) -> Self {
        let metadata = cx.metadata();
        Self {
            namespace: &metadata.namespace,
            name: &metadata.name,
            external_name: cx.external_name(),
        }
    }

    /// The subject of `identity`, whose context is narrower.
    pub fn of_identity<C>(cx: &'a IdentityContext<C>) -> Self {
        let metadata = cx.metadata();
        Self {
            namespace: &metadata.namespace,
            name: &metadata.name,
            external_name: cx.external_name(),
        }
    }
}

/// The database's name: the external name, else `database`, else the
/// resource's name. (A `database` that differs from the external name is
/// a validation error.)
pub fn database_name(config: &PgConfig, subject: &Subject<'_>) -> String {
    let named = subject.external_name.or(config.database.as_deref());
    named.unwrap_or(subject.name).to_string()
}

/// The role's name: `role`, else the database's.
pub fn role_name(config: &PgConfig, subject: &Subject<'_>) -> String {
    config
        .role
        .clone()
        .unwrap_or_else(|| database_name(config, subject))
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
/// reference is the controller's to check). The external name is held to
/// the rules of `database`, which it stands for.
pub fn validate(config: &PgConfig, subject: &Subject<'_>) -> Vec<String> {
    let mut errors = Vec::new();
    let database = database_name(config, subject);
    if let (Some(external), Some(named)) = (subject.external_name, &config.database) {
        if named != external {
            errors.push("database: differs from the resource's external name".to_string());
        }
    }
    let (field, hint) = match subject.external_name {
        Some(_) => ("external name", ""),
        None => (
            "database",
            " (set it when the resource's name starts with a digit)",
        ),
    };
    if !is_valid_name(&database) {
        errors.push(format!(
            "{field}: must match ^[a-z_][a-z0-9_-]{{0,62}}${hint}"
        ));
    } else if RESERVED_DATABASES.contains(&database.as_str()) {
        errors.push(format!("{field}: names a database the server needs"));
    }
    let role = role_name(config, subject);
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
/// `PostgresServer`s naming one host do not share locks). The database is
/// the external name when there is one, so a changed external name is a
/// changed identity, which the controller refuses.
pub fn identity(config: &PgConfig, subject: &Subject<'_>) -> Vec<Option<String>> {
    let server = format!("{}/{}", subject.namespace, config.server_ref.name);
    vec![
        Some(IDENTITY_BACKEND.to_string()),
        Some(server),
        Some(database_name(config, subject)),
    ]
}

/// The resolved target of a validated config on `server` (the referenced
/// `PostgresServer`'s outputs).
pub fn target(config: &PgConfig, subject: &Subject<'_>, server: &ServerOutputs) -> Target {
    Target {
        host: server.host.clone(),
        port: server.port,
        database: database_name(config, subject),
        role: role_name(config, subject),
        mark: owner_mark(subject.namespace, subject.name),
        namespace: subject.namespace.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn subject(name: &str) -> Subject<'_> {
        Subject {
            namespace: "team-a",
            name,
            external_name: None,
        }
    }

    fn imported<'a>(name: &'a str, external_name: &'a str) -> Subject<'a> {
        Subject {
            external_name: Some(external_name),
            ..subject(name)
        }
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
        let t = target(&config(json!({})), &subject("app-db"), &server());
        assert_eq!((t.database.as_str(), t.role.as_str()), ("app-db", "app-db"));
        assert_eq!((t.host.as_str(), t.port), ("db.internal", 5432));
        assert_eq!(t.mark, "managed by postgres-operator for team-a/app-db");
        let t = target(
            &config(json!({"database": "orders"})),
            &subject("x"),
            &server(),
        );
        assert_eq!((t.database.as_str(), t.role.as_str()), ("orders", "orders"));
        let t = target(&config(json!({"role": "svc"})), &subject("x"), &server());
        assert_eq!((t.database.as_str(), t.role.as_str()), ("x", "svc"));
    }

    #[test]
    fn a_valid_config_has_no_errors() {
        assert!(validate(&config(json!({})), &subject("app")).is_empty());
        let full = config(json!({"database": "a_b", "role": "r-1"}));
        assert!(validate(&full, &subject("app")).is_empty());
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
            let errors = validate(&config(extra.clone()), &subject(name));
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
        let id = identity(&config(json!({"role": "other"})), &subject("app"));
        let id: Vec<_> = id.into_iter().map(Option::unwrap).collect();
        assert_eq!(id, ["postgres", "team-a/main", "app"]);
        // Two resources naming one database on one server share a lock.
        let other = identity(&config(json!({"database": "app"})), &subject("b"));
        assert_eq!(other, identity(&config(json!({})), &subject("app")));
    }

    #[test]
    fn the_external_name_names_the_database_the_role_and_the_identity() {
        let legacy = imported("orders", "legacy_orders");
        let t = target(&config(json!({})), &legacy, &server());
        assert_eq!(
            (t.database.as_str(), t.role.as_str()),
            ("legacy_orders", "legacy_orders")
        );
        assert_eq!(t.mark, "managed by postgres-operator for team-a/orders");
        let id = identity(&config(json!({})), &legacy);
        assert_eq!(id[2].as_deref(), Some("legacy_orders"));
        assert!(validate(&config(json!({})), &legacy).is_empty());
        // The same name in `database` agrees with it.
        let agreeing = config(json!({"database": "legacy_orders"}));
        assert!(validate(&agreeing, &legacy).is_empty());
    }

    #[test]
    fn an_external_name_other_than_the_database_or_unfit_is_invalid_unechoed() {
        let named = config(json!({"database": "orders"}));
        let errors = validate(&named, &imported("orders", "other_db"));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("database: differs"), "{errors:?}");
        for bad in ["Bad\"Name", "template1"] {
            let errors = validate(&config(json!({})), &imported("orders", bad));
            assert!(errors[0].starts_with("external name: "), "{errors:?}");
            assert!(!errors.concat().contains(bad), "{errors:?}");
        }
    }
}
