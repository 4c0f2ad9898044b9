//! The PostgreSQL example's resources as the checks and the bench create
//! them, and the operator connecting as its shipped ServiceAccount.

use std::path::Path;

use anyhow::{Context, Result};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use blue_envtest::Kubectl;
use postgres_operator::test_hooks;
use serde_json::{json, Value};

use crate::in_cluster::request_token_for;
use crate::status::check_ready;

/// Plural.group of `PostgresDatabase`.
pub const PGDB: &str = "postgresdatabases.postgres.blue.example";
/// Plural.group of `PostgresServer`.
pub const PGSRV: &str = "postgresservers.postgres.blue.example";
/// The `PostgresServer` [`create_database`] names.
pub const SERVER: &str = "main";
/// The admin Secret [`SERVER`] names.
pub const ADMIN_SECRET: &str = "pg-admin";
/// The example's shipped ServiceAccount, Role and RoleBinding (no namespace).
pub const RBAC: &str = include_str!("../../../examples/postgres/manifests/rbac.yaml");
/// The operator's ServiceAccount in [`RBAC`].
pub const ACCOUNT: &str = "postgres-operator";

/// Creates a `PostgresDatabase` checked every 2 s unless `spec` says
/// otherwise, naming the `PostgresServer` [`SERVER`] unless its
/// `spec.config` names another.
pub fn create_database(kube: &Kubectl, name: &str, mut spec: Value) -> Result<()> {
    if spec["reconcileInterval"].is_null() {
        spec["reconcileInterval"] = json!("2s");
    }
    if spec["config"].is_null() {
        spec["config"] = json!({"serverRef": {"name": SERVER}});
    }
    create_kind(kube, "PostgresDatabase", name, spec)
}

/// Creates a `PostgresServer` for a test server on 127.0.0.1:`port`
/// (admin Secret [`ADMIN_SECRET`]), checked every 2 s.
pub fn create_server(kube: &Kubectl, name: &str, port: u16) -> Result<()> {
    let config = json!({
        "host": "127.0.0.1", "port": port,
        "adminSecretRef": {"name": ADMIN_SECRET},
    });
    let spec = json!({"reconcileInterval": "2s", "config": config});
    create_kind(kube, "PostgresServer", name, spec)
}

fn create_kind(kube: &Kubectl, kind: &str, name: &str, spec: Value) -> Result<()> {
    let doc = json!({
        "apiVersion": "postgres.blue.example/v1alpha1", "kind": kind,
        "metadata": {"name": name}, "spec": spec,
    });
    Ok(kube.create(&doc.to_string())?)
}

/// Writes `dir/kubeconfig` for [`ACCOUNT`] (a real token) on the API server
/// at `host:port` with CA `ca_pem`, and returns the operator's flags
/// connecting with it in `kube`'s namespace. [`RBAC`] must be applied.
pub fn account_flags(
    kube: &Kubectl,
    (host, port): (&str, u16),
    ca_pem: &[u8],
    dir: &Path,
) -> Result<Vec<String>> {
    let config = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {
            "server": format!("https://{host}:{port}"),
            "certificate-authority-data": STANDARD.encode(ca_pem),
        }}],
        "users": [{"name": ACCOUNT, "user": {"token": request_token_for(kube, ACCOUNT)?}}],
        "contexts": [{"name": ACCOUNT, "context": {"cluster": "e2e", "user": ACCOUNT}}],
    });
    let path = dir.join("kubeconfig");
    std::fs::write(&path, config.to_string())?;
    let file = path.display().to_string();
    let connect = ["--context", ACCOUNT, "--namespace", kube.namespace()];
    let flags = [connect, ["--transport", "proxy", "--kubeconfig", &file]].concat();
    Ok(flags.iter().map(|f| f.to_string()).collect())
}

/// One probe of a wait: `PostgresDatabase` `name` exists and is Ready for
/// its current generation (request annotation `request`).
pub fn ready(kube: &Kubectl, name: &str, request: &str) -> Result<Value> {
    let r = kube.get(PGDB, name)?;
    let r = r.with_context(|| format!("postgresdatabase {name} does not exist"))?;
    check_ready(&r, request)?;
    Ok(r)
}

/// The operator's flags `args` with the test hooks auditing its steps and
/// `hooks` (e.g. `kill:after-step:role`).
pub fn audited_args(args: &[String], hooks: &[&str]) -> Vec<String> {
    let hooks = [&[test_hooks::AUDIT_STEPS], hooks].concat().join(",");
    [args, &["--test-hooks".into(), hooks]].concat()
}
