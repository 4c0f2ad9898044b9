//! What every package test needs: a real PostgreSQL server (the crate's
//! `test_server`, which `cargo xtask e2e` uses too) and the testkit's
//! [`TestOperator`] of both packages, with the steps audit on, over its
//! fake API server (which also keeps Secrets) ([`Rig`]). [`Rig::new`] has
//! the `PostgresServer` [`SERVER`] Ready; [`Rig::bare`] has none.
#![allow(dead_code)]

use base64::Engine;
use blue_kubernetes::resource::Phase;
use blue_kubernetes::{Package, Report};
use blue_testkit::{FakeCluster, TestOperator};
use postgres_operator::desired::Target;
use postgres_operator::package::{self, Features};
use postgres_operator::postgres_server;
use postgres_operator::server::{self, ServerError};
use postgres_operator::test_server::{TestServer, ADMIN, ADMIN_PASSWORD};
use serde_json::{json, Value};

pub const ADMIN_SECRET: &str = "pg-admin";
/// The `PostgresServer` every database of [`Rig::create`] names.
pub const SERVER: &str = "main";

/// One test's world: server, and the operator over its cluster (with
/// Secrets). Rigs share names and identities: each operator has its own
/// identity lock.
pub struct Rig {
    pub ns: String,
    pub pg: TestServer,
    /// The operator of `package` (first) and `servers`.
    pub op: TestOperator,
    pub cluster: FakeCluster,
    /// The `PostgresDatabase` package.
    pub package: Package,
    /// The `PostgresServer` package.
    pub servers: Package,
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
        let ns = "team".to_string();
        let cluster = FakeCluster::new();
        let features = Features { audit_steps: true };
        let mut packages = package::packages(features).unwrap();
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
        let op = TestOperator::on(&cluster, vec![package.clone(), servers.clone()])
            .in_namespace(&ns)
            .configure(|c| {
                c.with_names(package::names())
                    .with_event_component("postgres-operator".to_string())
            });
        Rig {
            ns,
            pg,
            op,
            cluster,
            package,
            servers,
        }
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
        self.op.reconcile_of(&self.servers, name).await
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
        self.op.reconcile(name).await
    }

    /// Past the next periodic check (interval 60 s plus up to 10% jitter).
    pub fn next_check(&self) {
        self.op.clock().advance(70_000);
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
