//! What every package test needs: a real PostgreSQL server (the crate's
//! `test_server`, which `cargo xtask e2e` uses too), the testkit's fake API
//! server (which also keeps Secrets) and the controller around both
//! packages ([`Rig`]), with the steps audit on and a crash switch in front
//! of the controller's client (unarmed, it changes nothing). [`Rig::new`]
//! has the `PostgresServer` [`SERVER`] Ready; [`Rig::bare`] has none.
#![allow(dead_code)]

use base64::Engine;
use blue_kubernetes::{controller, reconcile, Config, Controller, Package, Phase, Report};
use blue_testkit::{Crash, FakeClock, FakeCluster};
use postgres_operator::desired::Target;
use postgres_operator::package::{self, Features};
use postgres_operator::postgres_server;
use postgres_operator::server::{self, ServerError};
use postgres_operator::test_server::{TestServer, ADMIN, ADMIN_PASSWORD};
use serde_json::{json, Value};
use std::sync::Arc;

pub const ADMIN_SECRET: &str = "pg-admin";
/// The `PostgresServer` every database of [`Rig::create`] names.
pub const SERVER: &str = "main";

/// One test's world: server, cluster (with Secrets), clock, controller.
pub struct Rig {
    /// This rig's namespace, `team-<port>`: tests run in parallel in one
    /// process, whose identity lock would serialise equal identities
    /// (`<namespace>/<server>`) of different rigs.
    pub ns: String,
    pub pg: TestServer,
    pub cluster: FakeCluster,
    pub clock: FakeClock,
    /// The `PostgresDatabase` package.
    pub package: Package,
    /// The `PostgresServer` package.
    pub servers: Package,
    pub crash: Crash,
    pub controller: Controller,
}

/// One row of the steps audit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    pub resource: String,
    pub run: String,
    pub event: String,
    pub step: String,
    pub interrupted: bool,
}

fn encoded(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn build(
    cluster: &FakeCluster,
    crash: &Crash,
    clock: &FakeClock,
    packages: Vec<Package>,
    ns: &str,
) -> Controller {
    let config = Config::new(crash.client(Arc::new(cluster.clone())), packages)
        .with_names(package::names())
        .with_namespace(ns)
        .with_clock(clock.as_fn())
        .with_event_component(Some("postgres-operator".to_string()));
    controller(config).unwrap()
}

impl Rig {
    /// A rig whose `PostgresServer` [`SERVER`] is Ready.
    pub async fn new() -> Self {
        let r = Self::bare();
        r.create_server(SERVER, r.pg.port());
        let report = r.reconcile_server(SERVER).await;
        assert!(
            matches!(report, Report::Reconciled(Phase::Ready, _)),
            "{report:?}"
        );
        r
    }

    /// A rig without any `PostgresServer`.
    pub fn bare() -> Self {
        let pg = TestServer::start().expect("a private PostgreSQL server");
        let ns = format!("team-{}", pg.port());
        let clock = FakeClock::default();
        let cluster = FakeCluster::new().with_clock(clock.clone());
        let features = Features { audit_steps: true };
        let mut packages = package::packages(Arc::new(cluster.clone()), features).unwrap();
        let (package, servers) = (packages.pop().unwrap(), packages.pop().unwrap());
        cluster.install_crd(&package::crd(false).unwrap(), package::VERSION);
        cluster.install_crd(&postgres_server::crd(false).unwrap(), package::VERSION);
        let secrets = format!("/api/v1/namespaces/{ns}/secrets");
        cluster.create_object(
            &secrets,
            json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": ADMIN_SECRET, "namespace": ns},
                "data": {"username": encoded(ADMIN), "password": encoded(ADMIN_PASSWORD)},
            }),
        );
        let crash = Crash::new();
        let both = vec![servers.clone(), package.clone()];
        let controller = build(&cluster, &crash, &clock, both, &ns);
        Rig {
            ns,
            pg,
            cluster,
            clock,
            package,
            servers,
            crash,
            controller,
        }
    }

    /// A new operator process: a controller with nothing of the old one's
    /// memory, over the same cluster (after a crash, say).
    pub fn restart(&mut self) {
        let both = vec![self.servers.clone(), self.package.clone()];
        self.controller = build(&self.cluster, &self.crash, &self.clock, both, &self.ns);
    }

    /// Reconciles `name` until the armed crash strikes: `None` when it did.
    pub async fn reconcile_until_crash(&self, name: &str) -> Option<Report> {
        let pass = reconcile(&self.controller, &self.package, &self.ns, name);
        self.crash.run(pass).await.map(Result::unwrap)
    }

    /// The steps audit, oldest first.
    pub async fn audit(&self) -> Vec<Attempt> {
        let sql = "SELECT resource, run, event, step, interrupted FROM postgres_operator_audit ORDER BY id";
        let rows = self.admin().await.query(sql, &[]).await.unwrap();
        let attempt = |r: &tokio_postgres::Row| Attempt {
            resource: r.get(0),
            run: r.get(1),
            event: r.get(2),
            step: r.get(3),
            interrupted: r.get(4),
        };
        rows.iter().map(attempt).collect()
    }

    /// The steps `name`'s attempts ran, in order, marking re-runs `!`.
    pub async fn attempts_of(&self, name: &str) -> Vec<String> {
        let resource = format!("{}/{name}", self.ns);
        let attempts = self
            .audit()
            .await
            .into_iter()
            .filter(|a| a.resource == resource);
        let mark = |a: Attempt| format!("{}{}", a.step, if a.interrupted { "!" } else { "" });
        attempts.map(mark).collect()
    }

    /// Creates a `PostgresServer` on 127.0.0.1:`port` with the admin Secret.
    pub fn create_server(&self, name: &str, port: u16) -> Value {
        let config =
            json!({"host": "127.0.0.1", "port": port, "adminSecretRef": {"name": ADMIN_SECRET}});
        let spec = json!({"config": config});
        self.cluster
            .create(&postgres_server::descriptor(), &self.ns, name, spec)
    }

    pub async fn reconcile_server(&self, name: &str) -> Report {
        reconcile(&self.controller, &self.servers, &self.ns, name)
            .await
            .unwrap()
    }

    pub fn server(&self, name: &str) -> Option<Value> {
        self.cluster
            .get(&postgres_server::descriptor(), &self.ns, name)
    }

    /// Creates a `PostgresDatabase` with `spec` (its `config` naming
    /// [`SERVER`] unless it names another).
    pub fn create(&self, name: &str, mut spec: Value) -> Value {
        let mut config = json!({"serverRef": {"name": SERVER}});
        if let Some(extra) = spec["config"].as_object() {
            config.as_object_mut().unwrap().extend(extra.clone());
        }
        spec["config"] = config;
        self.cluster
            .create(&package::descriptor(), &self.ns, name, spec)
    }

    pub async fn reconcile(&self, name: &str) -> Report {
        reconcile(&self.controller, &self.package, &self.ns, name)
            .await
            .unwrap()
    }

    /// Past the next periodic check (interval 60 s plus up to 10% jitter).
    pub fn next_check(&self) {
        self.clock.advance(70_000);
    }

    pub fn resource(&self, name: &str) -> Option<Value> {
        self.cluster.get(&package::descriptor(), &self.ns, name)
    }

    pub fn delete(&self, name: &str) {
        self.cluster.delete(&package::descriptor(), &self.ns, name);
    }

    pub fn secret_path(&self, name: &str) -> String {
        format!("/api/v1/namespaces/{}/secrets/{name}", self.ns)
    }

    /// The connection Secret's decoded `key`.
    pub fn connection_value(&self, secret: &str, key: &str) -> Option<String> {
        let secret = self.cluster.get_object(&self.secret_path(secret))?;
        let text = secret["data"][key].as_str()?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .ok()?;
        String::from_utf8(bytes).ok()
    }

    /// An admin session on the server.
    pub async fn admin(&self) -> tokio_postgres::Client {
        self.login(ADMIN, ADMIN_PASSWORD, "postgres").await.unwrap()
    }

    /// A session as `user`; the error is the server's refusal.
    pub async fn login(
        &self,
        user: &str,
        password: &str,
        database: &str,
    ) -> Result<tokio_postgres::Client, ServerError> {
        let target = Target {
            host: "127.0.0.1".into(),
            port: self.pg.port(),
            database: database.into(),
            role: user.into(),
            namespace: self.ns.clone(),
            mark: String::new(),
        };
        server::connect(&target, user, password, database).await
    }

    /// Logs in as an application would: only with the connection Secret.
    pub async fn app_login(&self, secret: &str) -> Result<tokio_postgres::Client, ServerError> {
        let value = |k| self.connection_value(secret, k).expect(k);
        assert_eq!(value("host"), "127.0.0.1");
        assert_eq!(value("port"), self.pg.port().to_string());
        self.login(&value("user"), &value("password"), &value("database"))
            .await
    }

    /// Whether `database` exists, and its owner.
    pub async fn owner_of(&self, database: &str) -> Option<String> {
        let row = self
            .admin()
            .await
            .query_opt(
                "SELECT pg_get_userbyid(datdba)::text FROM pg_database WHERE datname = $1",
                &[&database],
            )
            .await
            .unwrap();
        row.map(|r| r.get(0))
    }

    pub async fn role_exists(&self, role: &str) -> bool {
        let admin = self.admin().await;
        let row = admin
            .query_opt("SELECT 1 FROM pg_roles WHERE rolname = $1", &[&role])
            .await
            .unwrap();
        row.is_some()
    }
}
