//! The PostgreSQL example running: a guarded test server, its admin
//! Secret and `PostgresServer`, and `postgres-operator` auditing its steps.

use std::path::PathBuf;

use anyhow::Result;
use blue_envtest::operator::Operator;
use blue_envtest::Kubectl;
use postgres_operator::test_server::{ADMIN, ADMIN_PASSWORD};
use serde_json::{json, Value};

use crate::guarded_server::GuardedServer;
use crate::postgres::{audited_args, create_database, create_server, ADMIN_SECRET, SERVER};

/// The PostgreSQL half of a check or a bench run. Drop stops the
/// operator, then the server.
pub struct PostgresFixture {
    /// kubectl in the namespace the resources live in.
    pub kube: Kubectl,
    /// The running operator, if any.
    pub operator: Option<Operator>,
    /// The operator's scratch directory: log, TMPDIR, kubectl cache.
    pub work: PathBuf,
    binary: PathBuf,
    args: Vec<String>,
    server: GuardedServer,
}

impl PostgresFixture {
    /// Installs the admin Secret and the `PostgresServer` [`SERVER`] for
    /// `server` into `kube`'s namespace (the CRDs installed) and starts the
    /// operator `binary` with `args` in `work`.
    pub fn start(
        kube: Kubectl,
        work: PathBuf,
        (binary, args): (PathBuf, Vec<String>),
        server: GuardedServer,
    ) -> Result<Self> {
        let mut pg = PostgresFixture {
            kube,
            operator: None,
            work,
            binary,
            args,
            server,
        };
        let secret = json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": ADMIN_SECRET},
            "stringData": {"username": ADMIN, "password": ADMIN_PASSWORD},
        });
        pg.kube.apply(&secret.to_string())?;
        pg.create_server(SERVER)?;
        pg.start_operator(&[])?;
        Ok(pg)
    }

    /// The guarded server.
    pub fn server(&self) -> &GuardedServer {
        &self.server
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

    /// Starts the stopped server again, on the same port.
    pub fn start_server(&mut self) -> Result<()> {
        self.server.restart()
    }

    /// [`create_database`] in the namespace.
    pub fn create(&self, name: &str, spec: Value) -> Result<()> {
        create_database(&self.kube, name, spec)
    }

    /// [`create_server`] for the test server.
    pub fn create_server(&self, name: &str) -> Result<()> {
        create_server(&self.kube, name, self.server.server().port())
    }
}

impl Drop for PostgresFixture {
    fn drop(&mut self) {
        drop(self.operator.take());
        self.stop_server();
    }
}
