//! The PostgreSQL example on the testbed, for the e2e group and the chaos
//! scenario: a private PostgreSQL server (the example's own test server,
//! guarded by a watchdog like the control plane's processes), the
//! example's CRD, the admin Secret, and `postgres-operator` as a separate
//! process with scratch space of its own; and the reads the checks make,
//! through psql and kubectl.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{ensure, Context, Result};
use postgres_operator::package::{self, REQUEST_ANNOTATION};
use postgres_operator::test_server::{bin_dir, TestServer, ADMIN, ADMIN_PASSWORD};
use serde_json::{json, Value};

use super::operator::Operator;
use super::{check_ready, indent, Transport, World, POLL_MS};
use crate::cluster::control_plane::process::{log_tail, Watchdog};
use crate::cluster::manifests::crd_for;
use crate::support::base64::base64_decode;
use crate::support::interrupt::with_default_mask;
use crate::support::kube::Kube;
use crate::support::wait::{eventually, DEADLINE};

/// Plural.group of `PostgresDatabase`.
pub const PGDB: &str = "postgresdatabases.postgres.blue.example";
const ADMIN_SECRET: &str = "pg-admin";

/// A login: role, password, database.
pub type Login<'a> = (&'a str, &'a str, &'a str);

/// The PostgreSQL half of a run. Drop stops the operator, then the server.
pub struct Postgres {
    /// kubectl in the run's namespace.
    pub kube: Kube,
    pub operator: Option<Operator>,
    /// The operator's scratch directory: log, TMPDIR, kubectl cache.
    pub work: PathBuf,
    binary: PathBuf,
    args: Vec<String>,
    watchdog: Option<Watchdog>,
    server: TestServer,
    /// Remove the CRD again at the end (a cluster that outlives the run).
    remove_crd: bool,
}

impl Postgres {
    /// Installs PostgreSQL if needed, starts a server, installs the CRD and
    /// the admin Secret into `w`'s namespace and starts the operator.
    pub fn up(w: &World<'_>) -> Result<Self> {
        crate::support::postgres::ensure_installed()?;
        let server = with_default_mask(TestServer::start)?;
        let work = w.work.join("postgres");
        std::fs::create_dir_all(&work)?;
        let kube = w.kube.clone();
        let remove_crd = !w.cluster.is_disposable() && kube.get("crd", PGDB)?.is_none();
        let mut args = w.connect_args_with(Transport::Proxy);
        args.extend(["--poll-ms".into(), POLL_MS.to_string()]);
        let mut pg = Postgres {
            kube,
            operator: None,
            work,
            binary: w.pg_binary.clone(),
            args,
            watchdog: None,
            server,
            remove_crd,
        };
        pg.arm_watchdog()?;
        let (crd, _) = crd_for(&pg.kube, package::crd_yaml)?;
        pg.kube.apply_crd(&crd, PGDB)?;
        pg.kube.apply(
            &json!({
                "apiVersion": "v1", "kind": "Secret", "metadata": {"name": ADMIN_SECRET},
                "stringData": {"username": ADMIN, "password": ADMIN_PASSWORD},
            })
            .to_string(),
        )?;
        pg.start_operator(&[])?;
        println!(
            "setup: PostgreSQL on 127.0.0.1:{} ({}), postgres-operator log {}",
            pg.server.port(),
            pg.server.dir().display(),
            pg.log().display()
        );
        Ok(pg)
    }

    fn arm_watchdog(&mut self) -> Result<()> {
        let pid = self.server.pid().context("PostgreSQL is not running")?;
        self.watchdog = Some(Watchdog::arm(pid, self.server.dir())?);
        Ok(())
    }

    /// The server's directory (data, socket, log), removed on drop.
    pub fn server_dir(&self) -> &Path {
        self.server.dir()
    }

    /// The operator's log (shared by restarts).
    pub fn log(&self) -> PathBuf {
        self.work.join("operator.log")
    }

    /// (Re)starts the operator with `env` added to its environment.
    pub fn start_operator(&mut self, env: &[(String, String)]) -> Result<()> {
        if let Some(mut old) = self.operator.take() {
            old.stop()?;
        }
        let log = self.log();
        let op = Operator::start(&self.binary, &self.args, env, &log, &self.work)?;
        self.operator = Some(op);
        Ok(())
    }

    /// Restarts the operator if it is not running.
    pub fn ensure_operator(&mut self) -> Result<()> {
        match self.operator.as_mut().is_some_and(Operator::is_running) {
            true => Ok(()),
            false => self.start_operator(&[]),
        }
    }

    /// Stops the server (a fast shutdown), keeping its data.
    pub fn stop_server(&mut self) {
        if let Some(w) = self.watchdog.take() {
            w.disarm();
        }
        self.server.stop();
    }

    /// Starts the stopped server again, on the same port.
    pub fn start_server(&mut self) -> Result<()> {
        with_default_mask(|| self.server.restart())?;
        self.arm_watchdog()
    }

    /// Runs `sql` through psql over TCP as `login`; returns its rows, one a
    /// line, columns separated by `|`. psql's message explains a failure.
    pub fn psql(&self, (user, password, database): Login<'_>, sql: &str) -> Result<String> {
        let out = Command::new(bin_dir().join("psql"))
            .env("PGPASSWORD", password)
            .env("PGCONNECT_TIMEOUT", "10")
            .args(["-XAtq", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1"])
            .args(["-p", &self.server.port().to_string(), "-U", user, "-d"])
            .args([database, "-c", sql])
            .stdin(Stdio::null())
            .output()
            .context("running psql")?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        ensure!(out.status.success(), "psql as {user}: {}", stderr.trim());
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// [`Postgres::psql`] as the admin.
    pub fn admin(&self, sql: &str) -> Result<String> {
        self.psql((ADMIN, ADMIN_PASSWORD, "postgres"), sql)
    }

    /// Creates a `PostgresDatabase` checked every 2 s, its `spec.config`
    /// pointing at the server.
    pub fn create(&self, name: &str, mut spec: Value) -> Result<()> {
        spec["reconcileInterval"] = json!("2s");
        spec["config"] = json!({
            "host": "127.0.0.1", "port": self.server.port(),
            "adminSecretRef": {"name": ADMIN_SECRET},
        });
        self.kube.create(
            &json!({
                "apiVersion": "postgres.blue.example/v1alpha1", "kind": "PostgresDatabase",
                "metadata": {"name": name}, "spec": spec,
            })
            .to_string(),
        )
    }

    /// Waits until `name` is Ready for its current generation.
    pub fn wait_ready(&self, name: &str) -> Result<Value> {
        self.wait_ready_and(name, |_| Ok(()))
    }

    /// [`Postgres::wait_ready`], until the resource also passes `also`.
    pub fn wait_ready_and(&self, name: &str, also: impl Fn(&Value) -> Result<()>) -> Result<Value> {
        eventually(&format!("postgresdatabase {name} Ready"), DEADLINE, || {
            let r = self.kube.get(PGDB, name)?;
            let r = r.with_context(|| format!("postgresdatabase {name} does not exist"))?;
            check_ready(&r, REQUEST_ANNOTATION)?;
            also(&r)?;
            Ok(r)
        })
    }

    /// Secret `name`'s decoded data, `None` when it does not exist.
    pub fn secret(&self, name: &str) -> Result<Option<BTreeMap<String, String>>> {
        let Some(secret) = self.kube.get("secret", name)? else {
            return Ok(None);
        };
        let data = secret["data"].as_object().cloned().unwrap_or_default();
        let decoded = data.iter().map(|(key, value)| {
            let bytes = base64_decode(value.as_str().unwrap_or(""))?;
            Ok((key.clone(), String::from_utf8(bytes)?))
        });
        decoded.collect::<Result<_>>().map(Some)
    }

    /// The password in `name`'s connection Secret.
    pub fn password(&self, name: &str) -> Result<String> {
        let secret = self.secret(&format!("{name}-connection"))?;
        let mut secret = secret.with_context(|| format!("{name}-connection does not exist"))?;
        secret
            .remove("password")
            .context("the Secret has no password")
    }

    /// Logs in as an application would, with `name`'s connection Secret
    /// alone; returns `current_user`.
    pub fn app_login(&self, name: &str) -> Result<String> {
        let secret = self.secret(&format!("{name}-connection"))?;
        let s = secret.with_context(|| format!("{name}-connection does not exist"))?;
        let value = |k: &str| s.get(k).map_or("", String::as_str);
        let port = self.server.port().to_string();
        ensure!(
            (value("host"), value("port")) == ("127.0.0.1", port.as_str()),
            "the Secret names {}:{}",
            value("host"),
            value("port")
        );
        let login = (value("user"), value("password"), value("database"));
        self.psql(login, "SELECT current_user")
    }

    /// Prints the ends of the operator's and the server's logs.
    pub fn diagnose(&self) {
        for (who, log) in [
            ("postgres-operator", self.log()),
            ("PostgreSQL", self.server.log()),
        ] {
            println!("  --- {who}, last lines of {}:", log.display());
            println!("{}", indent(&log_tail(&log, 15)));
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        drop(self.operator.take());
        if let Some(w) = self.watchdog.take() {
            w.disarm();
        }
        if self.remove_crd {
            let names = self.kube.ok(&["get", PGDB, "-o", "name"], None);
            for name in names.unwrap_or_default().lines() {
                let patch = json!({"metadata": {"finalizers": null}});
                let _ = self
                    .kube
                    .merge_patch(PGDB, name.rsplit('/').next().unwrap_or(""), &patch);
            }
            let _ = self.kube.ok(&["delete", "crd", PGDB, "--wait=false"], None);
        }
    }
}
