//! The PostgreSQL example's fixture: a private PostgreSQL server (guarded
//! by a watchdog like the control plane's),
//! the example's CRDs, admin Secret and `PostgresServer` [`SERVER`], and
//! `postgres-operator` auditing its steps (`steps_audit`).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{ensure, Context, Result};
use postgres_operator::package::{self, REQUEST_ANNOTATION};
use postgres_operator::test_server::{bin_dir, TestServer, ADMIN, ADMIN_PASSWORD};
use serde_json::Value;

use crate::support::manifests::in_namespace;
use crate::support::wait::{eventually, DEADLINE};
use crate::support::PG_BINARY;
use crate::support::{indent, name_of, World, POLL_MS};
use blue_e2e::guarded_server::GuardedServer;
use blue_e2e::postgres::{account_flags, ready};
use blue_e2e::postgres::{ACCOUNT, PGDB, RBAC};
use blue_e2e::postgres_fixture::PostgresFixture;
use blue_e2e::status::check_ready;
use blue_envtest::operator::Operator;
use blue_envtest::process::log_tail;
use blue_envtest::Kubectl;

/// The PostgreSQL half of a check. Drop stops the operator, then the server.
pub struct Postgres {
    pg: PostgresFixture,
    /// kubectl as the operator connects: its ServiceAccount's token.
    pub account: Kubectl,
}

impl std::ops::Deref for Postgres {
    type Target = PostgresFixture;
    fn deref(&self) -> &PostgresFixture {
        &self.pg
    }
}

impl std::ops::DerefMut for Postgres {
    fn deref_mut(&mut self) -> &mut PostgresFixture {
        &mut self.pg
    }
}

impl Postgres {
    /// Installs PostgreSQL if needed, starts a server, installs the CRD and
    /// the admin Secret into `w`'s namespace and starts the operator.
    pub fn up(w: &World) -> Result<Self> {
        let work = w.work().join("postgres");
        std::fs::create_dir_all(&work)?;
        let (account, mut args) = as_shipped_account(w, &work)?;
        args.extend(["--poll-ms", &POLL_MS.to_string()].map(String::from));
        let server = GuardedServer::new(TestServer::start()?)?;
        w.install_crd(&postgres_operator::postgres_server::crd(false)?)?;
        w.install_crd(&package::crd(false)?)?;
        let operator = (PathBuf::from(PG_BINARY), args);
        let pg = PostgresFixture::start(w.kube.clone(), work, operator, server)?;
        Ok(Postgres { pg, account })
    }

    /// The server's directory (data, socket, log), removed on drop.
    pub fn server_dir(&self) -> &Path {
        self.server().server().dir()
    }

    /// Restarts the operator if it is not running.
    pub fn ensure_operator(&mut self) -> Result<()> {
        match self.operator.as_mut().is_some_and(Operator::is_running) {
            true => Ok(()),
            false => self.start_operator(&[]),
        }
    }

    /// Runs `sql` through psql over TCP as `user` with `password`, in
    /// `database`; returns its rows, one a line. psql explains a failure.
    pub fn psql(&self, [user, password, database]: [&str; 3], sql: &str) -> Result<String> {
        let port = format!("--port={}", self.server().server().port());
        let out = Command::new(bin_dir().join("psql"))
            .env("PGPASSWORD", password)
            .args(["-XAtq", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", &port])
            .args(["-U", user, "-d", database, "-c", sql])
            .stdin(Stdio::null())
            .output()
            .context("running psql")?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        ensure!(out.status.success(), "psql as {user}: {}", stderr.trim());
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// [`Postgres::psql`] as the admin.
    pub fn admin(&self, sql: &str) -> Result<String> {
        self.psql([ADMIN, ADMIN_PASSWORD, "postgres"], sql)
    }

    /// The roles and the databases named like `pattern` (SQL `LIKE`),
    /// sorted and comma-separated; the server's own (`pg_*`, templates) left out.
    pub fn names_like(&self, pattern: &str) -> Result<(String, String)> {
        let list = |column: &str, table: &str, own: &str| {
            self.admin(&format!(
                "SELECT coalesce(string_agg({column}, ',' ORDER BY {column}), '') FROM {table} \
                 WHERE {column} LIKE '{pattern}' AND NOT ({own})"
            ))
        };
        let roles = list("rolname", "pg_roles", "rolname LIKE 'pg\\_%'")?;
        Ok((roles, list("datname", "pg_database", "datistemplate")?))
    }

    /// Waits until `name` is Ready for its current generation.
    pub fn wait_ready(&self, name: &str) -> Result<Value> {
        self.wait_ready_and(name, |_| Ok(()))
    }

    /// [`Postgres::wait_ready`], until the resource also passes `also`.
    pub fn wait_ready_and(&self, name: &str, also: impl Fn(&Value) -> Result<()>) -> Result<Value> {
        eventually(&format!("postgresdatabase {name} Ready"), DEADLINE, || {
            let r = ready(&self.kube, name, REQUEST_ANNOTATION)?;
            also(&r)?;
            Ok(r)
        })
    }

    /// Waits until every `PostgresDatabase` is Ready and exactly `names`
    /// exist (one list per probe); returns them.
    pub fn wait_all_ready(&self, names: &[String]) -> Result<Vec<Value>> {
        let mut want = names.to_vec();
        want.sort();
        eventually("every postgresdatabase Ready", DEADLINE, || {
            let all = self.kube.items(&["get", PGDB])?;
            let mut got: Vec<String> = all.iter().map(|r| name_of(r).to_string()).collect();
            got.sort();
            ensure!(got == want, "postgresdatabases {got:?}");
            for r in &all {
                check_ready(r, REQUEST_ANNOTATION).with_context(|| name_of(r).to_string())?;
            }
            Ok(all)
        })
    }

    /// Fails when the operator's log holds the admin password or one of
    /// `names`' generated ones.
    pub fn log_holds_no_password(&self, names: &[String]) -> Result<()> {
        let log = std::fs::read_to_string(self.log())?;
        let leaked = log.contains(ADMIN_PASSWORD);
        ensure!(!leaked, "the log holds the admin password");
        for name in names {
            let leaked = log.contains(&self.password(name)?);
            ensure!(!leaked, "the log holds {name}'s password");
        }
        Ok(())
    }

    /// `name`'s connection Secret, decoded; an error when it does not exist.
    pub fn connection(&self, name: &str) -> Result<BTreeMap<String, String>> {
        let secret = self.kube.get("secret", &format!("{name}-connection"))?;
        let secret = secret.with_context(|| format!("{name}-connection does not exist"))?;
        let data = secret["data"].as_object().cloned().unwrap_or_default();
        let decode = |v: &Value| STANDARD.decode(v.as_str().unwrap_or(""));
        let decoded = data
            .iter()
            .map(|(k, v)| Ok((k.clone(), String::from_utf8(decode(v)?)?)));
        decoded.collect()
    }

    /// The password in `name`'s connection Secret.
    pub fn password(&self, name: &str) -> Result<String> {
        let password = self.connection(name)?.remove("password");
        password.context("the connection Secret holds no password")
    }

    /// Logs in as an application would, with `name`'s connection Secret
    /// alone; returns `current_user`.
    pub fn app_login(&self, name: &str) -> Result<String> {
        let s = self.connection(name)?;
        let value = |k: &str| s.get(k).map_or("", String::as_str);
        let (host, port) = (value("host"), value("port"));
        let ours = host == "127.0.0.1" && port == self.server().server().port().to_string();
        ensure!(ours, "the Secret names {host}:{port}");
        let login = [value("user"), value("password"), value("database")];
        self.psql(login, "SELECT current_user")
    }

    /// Prints the ends of the operator's and the server's logs.
    pub fn diagnose(&self) {
        let logs = [
            ("postgres-operator", self.log()),
            ("PostgreSQL", self.server().server().log()),
        ];
        for (who, log) in logs {
            println!("  --- {who}, last lines of {}:", log.display());
            println!("{}", indent(&log_tail(&log, 15)));
        }
    }
}

/// Installs the example's shipped RBAC manifest into `w`'s namespace and
/// returns kubectl and the operator's flags connecting as its
/// ServiceAccount (a real token in a kubeconfig of its own in `dir`), so
/// every check runs with exactly the permissions a user grants it.
fn as_shipped_account(w: &World, dir: &Path) -> Result<(Kubectl, Vec<String>)> {
    let namespace = w.kube.namespace();
    w.kube.apply(&in_namespace(RBAC, namespace))?;
    let endpoint = w.endpoint()?;
    let api = (endpoint.host.as_str(), endpoint.port);
    let flags = account_flags(&w.kube, api, &endpoint.ca_pem, dir)?;
    let kubectl = w.control_plane().kubectl().to_path_buf();
    let cache = dir.join("account-kube-cache");
    let path = Some(dir.join("kubeconfig"));
    let account = Kubectl::new(kubectl, path, ACCOUNT, &cache, namespace);
    Ok((account, flags))
}
