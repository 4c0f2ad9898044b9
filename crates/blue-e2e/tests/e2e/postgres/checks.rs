//! The PostgreSQL checks' bodies: `postgres-operator` against the real
//! API server and a real PostgreSQL 15 ([`Postgres`]); the tests that run
//! them, each on a fixture of its own, are in the parent module.

use std::os::unix::process::ExitStatusExt;

use anyhow::{ensure, Context, Result};
use postgres_operator::steps::CONVERGE;
use postgres_operator::test_hooks;
use serde_json::json;

use super::world::Postgres;
use crate::support::wait::{eventually, DEADLINE};
use blue_e2e::postgres::{ADMIN_SECRET, PGDB, PGSRV, SERVER};
use blue_e2e::status::{condition, phase};
use blue_envtest::operator::processes_of;

/// `got == want`, else an error naming `what`.
fn same<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<()> {
    ensure!(got == want, "{what} is {got:?}, want {want:?}");
    Ok(())
}

/// The roles and the databases named like `pattern` are `want`
/// (comma-separated, sorted).
fn names_are(pg: &Postgres, pattern: &str, want: [&str; 2]) -> Result<()> {
    let got = pg.names_like(pattern)?;
    same("roles and databases", [got.0.as_str(), &got.1], want)
}

/// Deletes the `PostgresDatabase`s `names` and waits until they are gone.
fn delete_all(pg: &Postgres, names: &[&str]) -> Result<()> {
    pg.kube
        .ok(&[&["delete", PGDB, "--wait=false"], names].concat(), None)?;
    eventually(&format!("{} gone", names.join(", ")), DEADLINE, || {
        let get = [&["get", PGDB, "--ignore-not-found", "-o", "name"], names].concat();
        same("left", pg.kube.ok(&get, None)?.as_str(), "")
    })
}

/// The database's oid, `None` when it does not exist.
fn oid_of(pg: &Postgres, database: &str) -> Result<Option<u64>> {
    let sql = format!("SELECT oid FROM pg_database WHERE datname = '{database}'");
    Ok(pg.admin(&sql)?.parse().ok())
}

/// With the operator's own token, the admin Secret in its namespace is
/// read, but what its Role does not grant is Forbidden: that Secret in
/// another namespace, and deleting a PostgresServer (a server-side dry run:
/// authorized as the real delete, it changes nothing if let through).
/// Only the answer's reason is kept, never a body.
pub(super) fn forbidden_outside_role(pg: &mut Postgres) -> Result<()> {
    let (own, other) = (&pg.account, &pg.account.in_namespace("default"));
    let read = &["get", "secret", ADMIN_SECRET, "-o", "name"][..];
    let delete = &["delete", PGSRV, SERVER, "--dry-run=server"][..];
    for (kube, args, want) in [
        (own, read, "allowed"),
        (other, read, "Forbidden"),
        (own, delete, "Forbidden"),
    ] {
        let run = kube.run(args, None)?;
        let said = run.stderr.split("Error from server (").nth(1);
        let reason = said.and_then(|s| s.split(')').next());
        let got = match run.ok {
            true => "allowed",
            false => reason.unwrap_or("refused without a reason"),
        };
        let request = format!("kubectl -n {} {}", kube.namespace(), args.join(" "));
        same(&request, got, want)?;
    }
    Ok(())
}

/// The annotation holding a database's external name (its name).
fn external_name() -> String {
    postgres_operator::package::names().external_name_annotation()
}

/// Ready, with outputs and the database's name recorded as the external
/// name (a patch the shipped Role allows); the application logs in with
/// the Secret alone, whose password appears nowhere in the status.
pub(super) fn create_ready_app_logs_in(pg: &mut Postgres) -> Result<()> {
    pg.create("orders", json!({"deletionPolicy": "Destroy"}))?;
    let ready = pg.wait_ready("orders")?;
    let recorded = &ready["metadata"]["annotations"][external_name()];
    same("the external name", recorded.as_str(), Some("orders"))?;
    let status = ready["status"].clone();
    let outputs = &status["outputs"];
    let version = outputs["serverVersion"].as_str().unwrap_or("");
    let oid = oid_of(pg, "orders")?;
    let (owner, oid_ok) = (&outputs["owner"], outputs["databaseOid"].as_u64() == oid);
    let expected = version.starts_with("15.") && owner == "orders" && oid_ok;
    ensure!(expected, "outputs {outputs}");
    let password = pg.password("orders")?;
    same("the password's length", password.len(), 32)?;
    let leaked = status.to_string().contains(&password);
    ensure!(!leaked, "the password is in the status");
    same("the role", pg.app_login("orders")?.as_str(), "orders")
}

/// A database dropped behind the operator's back is created again at the
/// next check, owned by the role, and the status follows.
pub(super) fn dropped_database_recreated(pg: &mut Postgres) -> Result<()> {
    let old = oid_of(pg, "orders")?;
    pg.admin("DROP DATABASE orders WITH (FORCE)")?;
    let new = eventually("orders created again", DEADLINE, || {
        let oid = oid_of(pg, "orders")?;
        ensure!(oid.is_some() && oid != old, "database oid {oid:?}");
        Ok(oid)
    })?;
    let owner = "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'orders'";
    same("its owner", pg.admin(owner)?.as_str(), "orders")?;
    pg.wait_ready_and("orders", |r| {
        let oid = r["status"]["outputs"]["databaseOid"].as_u64();
        same("databaseOid", oid, new)
    })?;
    pg.app_login("orders").map(drop)
}

/// A deleted connection Secret is written again with the same password,
/// which still logs in, at once: with the resource checked only hourly
/// from here on, only the watch of the Secrets can bring it back within
/// the deadline.
pub(super) fn deleted_secret_back(pg: &mut Postgres) -> Result<()> {
    let password = pg.password("orders")?;
    let hourly = json!({"spec": {"reconcileInterval": "1h"}});
    pg.kube.merge_patch(PGDB, "orders", &hourly)?;
    pg.wait_ready("orders")?;
    pg.kube.delete("secret", "orders-connection")?;
    eventually("orders-connection back with its password", DEADLINE, || {
        same("the password", pg.password("orders")?, password.clone())
    })?;
    pg.app_login("orders").map(drop)
}

pub(super) fn edited_secret_repaired(pg: &mut Postgres) -> Result<()> {
    let password = pg.password("orders")?;
    let edit = json!({"stringData": {"password": "tampered", "host": "elsewhere"}});
    pg.kube.merge_patch("secret", "orders-connection", &edit)?;
    eventually("orders-connection repaired", DEADLINE, || {
        same("the password", pg.password("orders")?, password.clone())?;
        pg.app_login("orders").map(drop)
    })
}

/// Until `name` is Waiting for a referenced resource.
fn wait_waiting(pg: &Postgres, name: &str) -> Result<()> {
    eventually(&format!("{name} Waiting"), DEADLINE, || {
        let r = pg.kube.get(PGDB, name)?.context("gone")?;
        let reason = condition(&r, "Ready").map(|c| c["reason"].clone());
        let want = ("Waiting", Some(json!("DependencyNotReady")));
        same("phase and reason", (phase(&r), reason), want)
    })
}

/// A database naming a server that does not exist yet waits and creates
/// nothing; once the server is created (and Ready) the database is.
pub(super) fn database_before_server_waits(pg: &mut Postgres) -> Result<()> {
    let spec = json!({"config": {"serverRef": {"name": "later"}}});
    pg.create("waiter", spec)?;
    wait_waiting(pg, "waiter")?;
    names_are(pg, "waiter", ["", ""])?;
    pg.create_server("later")?;
    pg.wait_ready("waiter")?;
    pg.app_login("waiter").map(drop)
}

/// Deleting the server turns its database back to Waiting, dropping
/// nothing; the waiting database (Retain) can still be deleted.
pub(super) fn deleted_server_database_waits(pg: &mut Postgres) -> Result<()> {
    pg.kube.delete(PGSRV, "later")?;
    wait_waiting(pg, "waiter")?;
    delete_all(pg, &["waiter"])?;
    names_are(pg, "waiter", ["waiter", "waiter"])
}

/// SIGKILLed by its own test hook once the `role` step created the role
/// (its `Done` not yet recorded), the next operator re-runs that step alone
/// of the done ones and finishes the job with the password stored before
/// the role got it: one role, one database, one Secret, no process of the
/// killed one left.
pub(super) fn sigkill_mid_converge(pg: &mut Postgres) -> Result<()> {
    pg.start_operator(&["kill:after-step:role"])?;
    pg.create("crashy", json!({"deletionPolicy": "Destroy"}))?;
    let op = pg.operator.as_mut().context("no operator")?;
    let dead = || (!op.is_running()).then_some(()).context("running");
    eventually("the operator killed by its hook", DEADLINE, dead)?;
    same("its end", op.crash()?.and_then(|e| e.signal()), Some(9))?;
    names_are(pg, "crashy%", ["crashy", ""])?;
    let stored = pg.password("crashy")?;
    eventually("the killed operator's processes gone", DEADLINE, || {
        same("processes", processes_of(&pg.work), vec![])
    })?;
    pg.start_operator(&[])?;
    pg.wait_ready("crashy")?;
    names_are(pg, "crashy%", ["crashy", "crashy"])?;
    let secrets = pg.kube.ok(&["get", "secret", "-o", "name"], None)?;
    let ours: Vec<&str> = secrets.lines().filter(|s| s.contains("crashy")).collect();
    same("secrets", ours, vec!["secret/crashy-connection"])?;
    same("the password", pg.password("crashy")?, stored)?;
    let mut steps = CONVERGE.map(String::from).to_vec();
    steps.insert(2, "role!".into());
    same("the steps run", pg.attempts_of("crashy")?, steps)?;
    pg.app_login("crashy").map(drop)
}

/// Step 4 of 5 (`grants`) fails until the test hook lets it pass: the
/// status names the step, and the retries run steps 4 and 5 only, in the
/// same run (the audit shows it).
pub(super) fn failed_step_resumes_there(pg: &mut Postgres) -> Result<()> {
    let fail = pg.work.join("fail-step");
    std::fs::write(&fail, "grants")?;
    pg.start_operator(&[&format!("{}={}", test_hooks::FAIL_STEP, fail.display())])?;
    pg.create("flaky", json!({"deletionPolicy": "Destroy"}))?;
    eventually("grants attempted twice", DEADLINE, || {
        let attempts = pg.attempts_of("flaky")?;
        let retried = attempts.iter().filter(|a| a.starts_with("grants")).count() >= 2;
        ensure!(retried, "{attempts:?}");
        Ok(())
    })?;
    let status = pg.kube.get(PGDB, "flaky")?.context("flaky is gone")?["status"].clone();
    let conditions = status["conditions"].to_string();
    let named = conditions.contains("step 4 (grants)");
    ensure!(named, "conditions {conditions}");
    std::fs::remove_file(&fail)?;
    pg.wait_ready("flaky")?;
    let attempts = pg.attempts_of("flaky")?;
    let retries = attempts.iter().filter(|a| *a == "grants!").count();
    let mut want = CONVERGE.map(String::from).to_vec();
    want.splice(4..4, vec!["grants!".to_string(); retries]);
    ensure!(retries >= 1, "grants was not retried: {attempts:?}");
    same("the steps run", attempts, want)?;
    let runs: std::collections::BTreeSet<_> = pg
        .audit()?
        .into_iter()
        .filter(|a| a.resource.ends_with("/flaky"))
        .map(|a| a.run)
        .collect();
    same("runs", runs.len(), 1)?;
    pg.start_operator(&[])
}

pub(super) fn audit_no_done_step_twice(pg: &mut Postgres) -> Result<()> {
    let s = pg.check_audit()?;
    let (runs, attempts, reruns) = (s.runs, s.attempts, s.reruns);
    println!("  ({runs} runs, {attempts} step attempts, {reruns} re-runs of interrupted steps)");
    ensure!(reruns >= 2, "the crash and the failure left no re-run");
    Ok(())
}

pub(super) fn log_holds_no_password(pg: &mut Postgres) -> Result<()> {
    pg.log_holds_no_password(&["orders", "crashy", "flaky"].map(String::from))
}

/// `managementPolicy: Observe` imports a database made by hand: outputs
/// recorded; password, comment and database untouched; no Secret; deleting
/// the resource (even with Destroy) drops nothing.
pub(super) fn observe_imports_unchanged(pg: &mut Postgres) -> Result<()> {
    pg.admin("CREATE ROLE legacy LOGIN PASSWORD 'legacy-pw'")?;
    pg.admin("CREATE DATABASE legacy OWNER legacy")?;
    let oid = oid_of(pg, "legacy")?;
    let spec = json!({"managementPolicy": "Observe", "deletionPolicy": "Destroy"});
    pg.create("legacy", spec)?;
    let outputs = pg.wait_ready("legacy")?["status"]["outputs"].clone();
    let (owner, oid_ok) = (&outputs["owner"], outputs["databaseOid"].as_u64() == oid);
    ensure!(owner == "legacy" && oid_ok, "outputs {outputs}");
    let secret = pg.kube.get("secret", "legacy-connection")?;
    ensure!(secret.is_none(), "a connection Secret");
    delete_all(pg, &["legacy"])?;
    let mark = "SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = 'legacy'";
    same("the role's comment", pg.admin(mark)?.as_str(), "")?;
    same("the database's oid", oid_of(pg, "legacy")?, oid)?;
    let login = pg.psql(["legacy", "legacy-pw", "legacy"], "SELECT current_user")?;
    same("the hand-made login", login.as_str(), "legacy")
}

/// A resource of another name imports `legacy` by the external name a
/// user set: Ready with its owner and oid, the annotation as set; deleted,
/// nothing dropped.
pub(super) fn observe_imports_by_external_name(pg: &mut Postgres) -> Result<()> {
    let oid = oid_of(pg, "legacy")?;
    let doc = json!({
        "apiVersion": "postgres.blue.example/v1alpha1", "kind": "PostgresDatabase",
        "metadata": {"name": "imported", "annotations": {external_name(): "legacy"}},
        "spec": {
            "managementPolicy": "Observe", "reconcileInterval": "2s",
            "config": {"serverRef": {"name": SERVER}},
        },
    });
    pg.kube.create(&doc.to_string())?;
    let ready = pg.wait_ready("imported")?;
    let outputs = &ready["status"]["outputs"];
    let (owner, oid_ok) = (&outputs["owner"], outputs["databaseOid"].as_u64() == oid);
    ensure!(owner == "legacy" && oid_ok, "outputs {outputs}");
    let kept = &ready["metadata"]["annotations"][external_name()];
    same("the external name", kept.as_str(), Some("legacy"))?;
    ensure!(
        pg.kube.get("secret", "imported-connection")?.is_none(),
        "a connection Secret"
    );
    delete_all(pg, &["imported"])?;
    same("the database's oid", oid_of(pg, "legacy")?, oid)
}

/// Deleting the Destroy resources drops their roles and databases; only
/// the imported ones, the retained `waiter`'s and the server's stay.
pub(super) fn destroy_drops_both(pg: &mut Postgres) -> Result<()> {
    delete_all(pg, &["orders", "crashy", "flaky"])?;
    names_are(pg, "%", ["legacy,postgres,waiter"; 2])
}
