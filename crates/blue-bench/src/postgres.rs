//! The PostgreSQL example on the testbed, for the bench's references: a private
//! PostgreSQL server (guarded by a watchdog like the control plane's),
//! the example's CRDs, admin Secret and `PostgresServer` [`SERVER`](blue_e2e::postgres::SERVER), and
//! `postgres-operator` auditing its steps.

use std::path::Path;

use anyhow::Result;
use postgres_operator::package::{self, REQUEST_ANNOTATION};
use postgres_operator::test_server::TestServer;
use serde_json::Value;

use blue_e2e::guarded_server::GuardedServer;
use blue_e2e::postgres::{account_flags, ready};
use blue_e2e::postgres::{PGDB, PGSRV, RBAC};
use blue_e2e::postgres_fixture::PostgresFixture;
use blue_testbed::cluster::manifests::{crd_for, in_namespace};
use blue_testbed::support::interrupt::with_default_mask;
use blue_testbed::support::wait::{eventually, DEADLINE};
use blue_testbed::world::{World, POLL_MS};

/// The PostgreSQL half of a run. Drop stops the operator, then the server.
/// Only on clusters of the run's own: it leaves its CRD behind.
pub struct Postgres(PostgresFixture);

impl std::ops::Deref for Postgres {
    type Target = PostgresFixture;
    fn deref(&self) -> &PostgresFixture {
        &self.0
    }
}

impl std::ops::DerefMut for Postgres {
    fn deref_mut(&mut self) -> &mut PostgresFixture {
        &mut self.0
    }
}

impl Postgres {
    /// Installs PostgreSQL if needed, starts a server, installs the CRD and
    /// the admin Secret into `w`'s namespace and starts the operator.
    pub fn up(w: &World<'_>) -> Result<Self> {
        blue_testbed::support::debian::ensure_postgres()?;
        let work = w.work.join("postgres");
        std::fs::create_dir_all(&work)?;
        let mut args = as_shipped_account(w, &work)?;
        args.extend(["--poll-ms", &POLL_MS.to_string()].map(String::from));
        let server = GuardedServer::new(with_default_mask(TestServer::start)?)?;
        let (crd, _) = crd_for(&w.kube, package::crd_yaml)?;
        w.kube.apply_crd(&crd, PGDB)?;
        w.kube.wait_established(PGSRV)?;
        let operator = (w.pg_binary.clone(), args);
        let pg = PostgresFixture::start(w.kube.clone(), work, operator, server)?;
        let (port, log) = (pg.server().server().port(), pg.log().display().to_string());
        println!("setup: PostgreSQL on 127.0.0.1:{port}, postgres-operator log {log}");
        Ok(Postgres(pg))
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
