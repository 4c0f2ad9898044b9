//! The PostgreSQL side: connecting (plain TCP; TLS is out of scope for
//! this example), reading the facts `observe` needs, and the statements
//! the steps send ([`crate::steps`]). `CREATE ROLE` and `CREATE DATABASE`
//! are sent only after reading that they are still needed; the others
//! (`ALTER ROLE ... PASSWORD`, `REVOKE`/`GRANT`, `DROP ... IF EXISTS`)
//! change nothing when repeated.

use crate::desired::Target;
use crate::sql::{quote_ident, quote_literal, UnsafeLiteral};
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls};

/// How long connecting (TCP plus authentication) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The server-side limit on each statement (and on waiting for a lock),
/// so a callback never hangs on a stuck server.
pub const STATEMENT_TIMEOUT_MS: u64 = 30_000;
/// The database the admin connects to.
pub const MAINTENANCE_DATABASE: &str = "postgres";

/// Why talking to the server failed. The text is for the operator's log:
/// it never contains a password (passwords only travel as SCRAM verifiers
/// or in the authentication exchange).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Connecting took longer than [`CONNECT_TIMEOUT`].
    #[error("connecting to the server timed out")]
    Timeout,
    /// The TCP connection failed.
    #[error("connecting to the server failed: {0}")]
    Connect(#[source] std::io::Error),
    /// The server refused a login or a statement.
    #[error("postgres: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// A value cannot be written as a literal.
    #[error(transparent)]
    Literal(#[from] UnsafeLiteral),
    /// The role exists and is not this resource's (no or another mark).
    #[error("the role exists and is not managed for this resource; not altered")]
    RoleNotOurs,
    /// The database exists and another role owns it.
    #[error("the database exists and is owned by another role; not taken over")]
    DatabaseNotOurs,
}

/// What the admin sees of the role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleFacts {
    /// `rolcanlogin`.
    pub can_login: bool,
    /// Its comment, which marks the roles this operator created.
    pub comment: Option<String>,
}

/// What the admin sees of the database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabaseFacts {
    /// Its OID.
    pub oid: u32,
    /// Its owner's name.
    pub owner: String,
    /// Its size in bytes.
    pub size_bytes: i64,
    /// Every role may connect to it (PostgreSQL's default for `PUBLIC`,
    /// which the `grants` step revokes).
    pub public_connects: bool,
}

/// Everything `observe` reads as the admin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facts {
    /// `server_version`.
    pub server_version: String,
    /// The role, if it exists.
    pub role: Option<RoleFacts>,
    /// The database, if it exists.
    pub database: Option<DatabaseFacts>,
}

impl Facts {
    /// The role exists and carries `target`'s mark.
    pub fn role_is_ours(&self, target: &Target) -> bool {
        self.role
            .as_ref()
            .is_some_and(|r| r.comment.as_deref() == Some(target.mark.as_str()))
    }

    /// The database exists and `target`'s role owns it.
    pub fn database_is_owned(&self, target: &Target) -> bool {
        self.database
            .as_ref()
            .is_some_and(|d| d.owner == target.role)
    }
}

/// Connects to `database` on `target`'s server as `user`, and spawns the
/// connection's task (it ends when the returned client is dropped).
pub async fn connect(
    target: &Target,
    user: &str,
    password: &str,
    database: &str,
) -> Result<Client, ServerError> {
    let mut config = tokio_postgres::Config::new();
    config
        .user(user)
        .password(password)
        .dbname(database)
        .application_name("postgres-operator")
        .options(format!(
            "-c statement_timeout={STATEMENT_TIMEOUT_MS} -c lock_timeout={STATEMENT_TIMEOUT_MS}"
        ));
    let connecting = async {
        let address = (target.host.as_str(), target.port);
        let stream = tokio::net::TcpStream::connect(address)
            .await
            .map_err(ServerError::Connect)?;
        let _ = stream.set_nodelay(true);
        Ok::<_, ServerError>(config.connect_raw(stream, NoTls).await?)
    };
    let (client, connection) = tokio::time::timeout(CONNECT_TIMEOUT, connecting)
        .await
        .map_err(|_| ServerError::Timeout)??;
    tokio::spawn(async move {
        // Its errors reach the client's next call; nothing to add here.
        let _ = connection.await;
    });
    Ok(client)
}

/// The server's version (`server_version`, e.g. `15.8`).
pub async fn version(admin: &Client) -> Result<String, ServerError> {
    let row = admin
        .query_one("SELECT current_setting('server_version')", &[])
        .await?;
    Ok(row.get(0))
}

/// Reads the server version, the role and the database.
pub async fn facts(admin: &Client, target: &Target) -> Result<Facts, ServerError> {
    let server_version = version(admin).await?;
    let role = admin
        .query_opt(
            "SELECT rolcanlogin, shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = $1",
            &[&target.role],
        )
        .await?
        .map(|row| RoleFacts {
            can_login: row.get(0),
            comment: row.get(1),
        });
    let database = admin
        .query_opt(
            "SELECT oid, pg_get_userbyid(datdba)::text, pg_database_size(oid), \
             has_database_privilege('public', oid, 'CONNECT') \
             FROM pg_database WHERE datname = $1",
            &[&target.database],
        )
        .await?
        .map(|row| DatabaseFacts {
            oid: row.get(0),
            owner: row.get(1),
            size_bytes: row.get(2),
            public_connects: row.get(3),
        });
    Ok(Facts {
        server_version,
        role,
        database,
    })
}

/// Whether `target`'s role can log in to its database with `password`:
/// `Ok(false)` when the server refuses the login, an error when the
/// server could not be asked.
pub async fn can_log_in(target: &Target, password: &str) -> Result<bool, ServerError> {
    match connect(target, &target.role, password, &target.database).await {
        Ok(_) => Ok(true),
        Err(ServerError::Postgres(e)) if refused_login(&e) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The server refused to let the role in (wrong password, no LOGIN, no
/// CONNECT privilege, or the role or database is gone).
fn refused_login(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|code| {
        [
            SqlState::INVALID_PASSWORD,
            SqlState::INVALID_AUTHORIZATION_SPECIFICATION,
            SqlState::INSUFFICIENT_PRIVILEGE,
            SqlState::INVALID_CATALOG_NAME,
        ]
        .contains(code)
    })
}

/// Creates the role (marked as `target`'s) or, if it is ours, sets its
/// password and LOGIN again. Only a SCRAM verifier of the password goes
/// to the server, never the password itself, so it cannot end up in the
/// server's statement log.
pub async fn ensure_role(
    admin: &Client,
    target: &Target,
    facts: &Facts,
    password: &str,
) -> Result<(), ServerError> {
    let role = quote_ident(&target.role);
    let verifier = quote_literal(&postgres_protocol::password::scram_sha_256(
        password.as_bytes(),
    ))?;
    if facts.role.is_none() {
        let mark = quote_literal(&target.mark)?;
        // One transaction: a role is never left without its mark.
        admin
            .batch_execute(&format!(
                "BEGIN; CREATE ROLE {role} LOGIN PASSWORD {verifier}; \
                 COMMENT ON ROLE {role} IS {mark}; COMMIT"
            ))
            .await?;
        return Ok(());
    }
    if !facts.role_is_ours(target) {
        return Err(ServerError::RoleNotOurs);
    }
    admin
        .batch_execute(&format!("ALTER ROLE {role} WITH LOGIN PASSWORD {verifier}"))
        .await?;
    Ok(())
}

/// Creates the database owned by the role; one that exists must already
/// be the role's: the operator never takes a database from another role.
pub async fn ensure_database(
    admin: &Client,
    target: &Target,
    facts: &Facts,
) -> Result<(), ServerError> {
    match &facts.database {
        None => {
            let (database, role) = (quote_ident(&target.database), quote_ident(&target.role));
            admin
                .batch_execute(&format!("CREATE DATABASE {database} OWNER {role}"))
                .await?;
            Ok(())
        }
        Some(_) if facts.database_is_owned(target) => Ok(()),
        Some(_) => Err(ServerError::DatabaseNotOurs),
    }
}

/// Lets only the role (and superusers) connect to its database: `PUBLIC`'s
/// default `CONNECT` and `TEMPORARY` are revoked.
pub async fn restrict_database(admin: &Client, target: &Target) -> Result<(), ServerError> {
    let (database, role) = (quote_ident(&target.database), quote_ident(&target.role));
    admin
        .batch_execute(&format!(
            "REVOKE ALL ON DATABASE {database} FROM PUBLIC; \
             GRANT CONNECT, TEMPORARY ON DATABASE {database} TO {role}"
        ))
        .await?;
    Ok(())
}

/// Drops the database if our role owns it, disconnecting its sessions, so
/// an application's open connection cannot block deletion.
pub async fn drop_database(
    admin: &Client,
    target: &Target,
    facts: &Facts,
) -> Result<(), ServerError> {
    if facts.role_is_ours(target) && facts.database_is_owned(target) {
        let database = quote_ident(&target.database);
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"))
            .await?;
    }
    Ok(())
}

/// Drops the role if it is ours; anything else is left alone.
pub async fn drop_role(admin: &Client, target: &Target, facts: &Facts) -> Result<(), ServerError> {
    if facts.role_is_ours(target) {
        let role = quote_ident(&target.role);
        admin
            .batch_execute(&format!("DROP ROLE IF EXISTS {role}"))
            .await?;
    }
    Ok(())
}

/// Names this admin session `name` (`application_name`), so that another
/// session can find it in `pg_stat_activity`.
pub async fn name_session(admin: &Client, name: &str) -> Result<(), ServerError> {
    let name = quote_literal(name)?;
    admin
        .batch_execute(&format!("SET application_name = {name}"))
        .await?;
    Ok(())
}

/// Ends every other session named `name`, waiting up to 5 s for each to
/// exit; returns how many there were. A role may end its own sessions.
pub async fn end_sessions_named(admin: &Client, name: &str) -> Result<usize, ServerError> {
    let ended = admin
        .query(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity \
             WHERE application_name = $1 AND pid <> pg_backend_pid()",
            &[&name],
        )
        .await?;
    Ok(ended.len())
}
