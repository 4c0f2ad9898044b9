//! The PostgreSQL example on the testbed, for the bench's references: a private
//! PostgreSQL server (guarded by a watchdog like the control plane's),
//! the example's CRDs, admin Secret and `PostgresServer` [`SERVER`], and
//! `postgres-operator` auditing its steps.

use std::path::{Path, PathBuf};

use anyhow::Result;
use postgres_operator::package::{self, REQUEST_ANNOTATION};
use postgres_operator::test_server::{TestServer, ADMIN, ADMIN_PASSWORD};
use serde_json::{json, Value};

use super::operator::Operator;
use super::{World, POLL_MS};
use crate::cluster::manifests::{crd_for, in_namespace};
use crate::support::interrupt::with_default_mask;
use crate::support::kube::Kube;
use crate::support::wait::{eventually, DEADLINE};
use blue_e2e::guarded_server::GuardedServer;
use blue_e2e::postgres::{account_flags, audited_args, create_database, create_server, ready};
use blue_e2e::postgres::{ADMIN_SECRET, PGDB, PGSRV, RBAC, SERVER};

/// The PostgreSQL half of a run. Drop stops the operator, then the server.
/// Only on clusters of the run's own: it leaves its CRD behind.
pub struct Postgres {
    pub kube: Kube,
    pub operator: Option<Operator>,
    /// The operator's scratch directory: log, TMPDIR, kubectl cache.
    pub work: PathBuf,
    binary: PathBuf,
    args: Vec<String>,
    server: GuardedServer,
}

impl Postgres {
    /// Installs PostgreSQL if needed, starts a server, installs the CRD and
    /// the admin Secret into `w`'s namespace and starts the operator.
    pub fn up(w: &World<'_>) -> Result<Self> {
        crate::support::debian::ensure_postgres()?;
        let work = w.work.join("postgres");
        std::fs::create_dir_all(&work)?;
        let mut args = as_shipped_account(w, &work)?;
        args.extend(["--poll-ms", &POLL_MS.to_string()].map(String::from));
        let mut pg = Postgres {
            kube: w.kube.clone(),
            operator: None,
            work,
            binary: w.pg_binary.clone(),
            args,
            server: GuardedServer::new(with_default_mask(TestServer::start)?)?,
        };
        let (crd, _) = crd_for(&pg.kube, package::crd_yaml)?;
        pg.kube.apply_crd(&crd, PGDB)?;
        pg.kube.wait_established(PGSRV)?;
        let secret = json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": ADMIN_SECRET},
            "stringData": {"username": ADMIN, "password": ADMIN_PASSWORD},
        });
        pg.kube.apply(&secret.to_string())?;
        pg.create_server(SERVER)?;
        pg.start_operator(&[])?;
        let (port, log) = (pg.server.server().port(), pg.log().display().to_string());
        println!("setup: PostgreSQL on 127.0.0.1:{port}, postgres-operator log {log}");
        Ok(pg)
    }

    /// The operator's log (shared by restarts).
    pub fn log(&self) -> PathBuf {
        self.work.join("operator.log")
    }

    /// (Re)starts the operator, auditing its steps, with the test hooks
    /// `hooks` (e.g. `kill:after-step:role`) too.
    pub fn start_operator(&mut self, hooks: &[&str]) -> Result<()> {
        if let Some(mut old) = self.operator.take() {
            old.stop()?;
        }
        let args = audited_args(&self.args, hooks);
        let op = Operator::start(&self.binary, &args, &[], &self.log(), &self.work)?;
        self.operator = Some(op);
        Ok(())
    }

    /// Stops the server (a fast shutdown), keeping its data.
    pub fn stop_server(&mut self) {
        self.server.stop();
    }

    /// [`create_database`] in the namespace.
    pub fn create(&self, name: &str, spec: Value) -> Result<()> {
        create_database(&self.kube, name, spec)
    }

    /// [`create_server`] for the test server.
    pub fn create_server(&self, name: &str) -> Result<()> {
        create_server(&self.kube, name, self.server.server().port())
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
}

/// Installs the example's shipped RBAC manifest into `w`'s namespace and
/// returns the operator's flags connecting as its
/// ServiceAccount (a real token in a kubeconfig of its own in `dir`), so
/// every check runs with exactly the permissions a user grants it.
fn as_shipped_account(w: &World<'_>, dir: &Path) -> Result<Vec<String>> {
    let namespace = w.kube.namespace();
    w.kube.apply(&in_namespace(RBAC, namespace))?;
    let endpoint = w.cluster.endpoint()?;
    let api = (endpoint.host.as_str(), endpoint.port);
    account_flags(&w.kube, api, &endpoint.ca_pem, dir)
}

impl Drop for Postgres {
    fn drop(&mut self) {
        drop(self.operator.take());
        self.stop_server();
    }
}
