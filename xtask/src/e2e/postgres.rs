//! The PostgreSQL group of the e2e: `postgres-operator` against the real
//! API server and a real PostgreSQL 15 (`world::postgres`). Like the main
//! checks, later ones build on earlier ones (`orders` lives through most
//! of them).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use postgres_operator::test_pause;
use serde_json::json;

use crate::support::interrupt;
use crate::support::suite::Suite;
use crate::support::wait::{eventually, DEADLINE};
use crate::world::operator::processes_of;
use crate::world::postgres::{Postgres, PGDB};
use crate::world::World;

type Check = fn(&mut Postgres) -> Result<()>;

const CHECKS: &[(&str, Check)] = &[
    (
        "postgres-create-ready-app-logs-in",
        create_ready_app_logs_in,
    ),
    (
        "postgres-dropped-database-recreated",
        dropped_database_recreated,
    ),
    (
        "postgres-deleted-secret-back-with-same-password",
        deleted_secret_back,
    ),
    ("postgres-edited-secret-repaired", edited_secret_repaired),
    (
        "postgres-sigkill-mid-converge-recovers",
        sigkill_mid_converge,
    ),
    (
        "postgres-observe-imports-unchanged",
        observe_imports_unchanged,
    ),
    (
        "postgres-destroy-drops-role-and-database",
        destroy_drops_both,
    ),
];

/// Runs the group; returns the server's directory (gone by then) for the
/// cleanup check.
pub fn run_all(w: &World<'_>, suite: &mut Suite) -> Option<PathBuf> {
    let started = Instant::now();
    let mut pg = None;
    suite.check("postgres-setup", || {
        pg = Some(Postgres::up(w)?);
        Ok(())
    });
    let mut pg = pg?;
    for (name, check) in CHECKS {
        if !suite.check(name, || check(&mut pg)) && !interrupt::requested() {
            pg.diagnose();
        }
        if let Err(err) = pg.ensure_operator() {
            println!("  (restarting postgres-operator failed: {err:#})");
        }
    }
    let dir = pg.server_dir().to_path_buf();
    drop(pg);
    let secs = started.elapsed().as_secs_f64();
    println!("postgres group: {} checks in {secs:.1}s", CHECKS.len() + 1);
    Some(dir)
}

/// A query's rows, comma-separated.
fn rows(pg: &Postgres, sql: &str) -> Result<String> {
    Ok(pg.admin(sql)?.lines().collect::<Vec<_>>().join(","))
}

/// The database's oid, `None` when it does not exist.
fn oid_of(pg: &Postgres, database: &str) -> Result<Option<u64>> {
    let sql = format!("SELECT oid FROM pg_database WHERE datname = '{database}'");
    Ok(pg.admin(&sql)?.parse().ok())
}

/// Ready, with outputs; the application logs in with the Secret alone,
/// whose password appears nowhere in the status.
fn create_ready_app_logs_in(pg: &mut Postgres) -> Result<()> {
    pg.create("orders", json!({"deletionPolicy": "Destroy"}))?;
    let r = pg.wait_ready("orders")?;
    let outputs = &r["status"]["outputs"];
    let version = outputs["serverVersion"].as_str().unwrap_or("");
    ensure!(version.starts_with("15"), "outputs are {outputs}");
    ensure!(outputs["owner"] == "orders", "outputs are {outputs}");
    ensure!(outputs["databaseOid"].as_u64() == oid_of(pg, "orders")?);
    let password = pg.password("orders")?;
    ensure!(
        password.len() == 32,
        "a {}-character password",
        password.len()
    );
    ensure!(
        !r["status"].to_string().contains(&password),
        "password in status"
    );
    ensure!(
        pg.app_login("orders")? == "orders",
        "logged in as someone else"
    );
    Ok(())
}

/// A database dropped behind the operator's back is created again at the
/// next check, owned by the role, and the status follows.
fn dropped_database_recreated(pg: &mut Postgres) -> Result<()> {
    let old = oid_of(pg, "orders")?;
    pg.admin("DROP DATABASE orders WITH (FORCE)")?;
    let new = eventually("orders created again", DEADLINE, || {
        let oid = oid_of(pg, "orders")?;
        ensure!(oid.is_some() && oid != old, "database oid {oid:?}");
        Ok(oid)
    })?;
    let owner = "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'orders'";
    ensure!(pg.admin(owner)? == "orders", "owned by someone else");
    pg.wait_ready_and("orders", |r| {
        let got = r["status"]["outputs"]["databaseOid"].as_u64();
        ensure!(
            got == new,
            "status.outputs.databaseOid {got:?}, want {new:?}"
        );
        Ok(())
    })?;
    ensure!(pg.app_login("orders")? == "orders");
    Ok(())
}

/// A deleted connection Secret is written again with the same password,
/// which still logs in.
fn deleted_secret_back(pg: &mut Postgres) -> Result<()> {
    let password = pg.password("orders")?;
    pg.kube
        .ok(&["delete", "secret", "orders-connection"], None)?;
    eventually("orders-connection restored", DEADLINE, || {
        ensure!(pg.password("orders")? == password, "another password");
        Ok(())
    })?;
    ensure!(pg.app_login("orders")? == "orders");
    Ok(())
}

/// Edited values in the connection Secret are put back.
fn edited_secret_repaired(pg: &mut Postgres) -> Result<()> {
    let password = pg.password("orders")?;
    let edit = json!({"stringData": {"password": "tampered", "host": "elsewhere"}});
    pg.kube.merge_patch("secret", "orders-connection", &edit)?;
    eventually("orders-connection repaired", DEADLINE, || {
        ensure!(pg.password("orders")? == password, "password not repaired");
        pg.app_login("orders").map(drop)
    })
}

/// SIGKILLed right after CREATE ROLE (the test pause holds converge
/// there), the next operator finishes the job with the password stored
/// before the role got it: one role, one database, one Secret, no
/// process of the killed one.
fn sigkill_mid_converge(pg: &mut Postgres) -> Result<()> {
    let pause = pg.work.join("pause-after-create-role");
    let env = (test_pause::ENV.to_string(), pause.display().to_string());
    pg.start_operator(&[env])?;
    pg.create("crashy", json!({"deletionPolicy": "Destroy"}))?;
    let paused = eventually("converge paused after CREATE ROLE", DEADLINE, || {
        Ok(std::fs::read_to_string(&pause)?)
    })?;
    ensure!(paused == "crashy", "paused for role {paused:?}");
    ensure!(
        oid_of(pg, "crashy")?.is_none(),
        "the database exists already"
    );
    let stored = pg.password("crashy")?;
    pg.operator.as_mut().context("no operator")?.crash()?;
    eventually("the killed operator's processes gone", DEADLINE, || {
        let left = processes_of(&pg.work);
        ensure!(left.is_empty(), "still running: {left:?}");
        Ok(())
    })?;
    std::fs::remove_file(&pause)?;
    pg.start_operator(&[])?;
    pg.wait_ready("crashy")?;
    let roles = rows(
        pg,
        "SELECT rolname FROM pg_roles WHERE rolname LIKE 'crashy%'",
    )?;
    let databases = rows(
        pg,
        "SELECT datname FROM pg_database WHERE datname LIKE 'crashy%'",
    )?;
    ensure!((roles.as_str(), databases.as_str()) == ("crashy", "crashy"));
    let secrets = pg.kube.ok(&["get", "secret", "-o", "name"], None)?;
    let ours: Vec<&str> = secrets.lines().filter(|s| s.contains("crashy")).collect();
    ensure!(ours == ["secret/crashy-connection"], "secrets {ours:?}");
    ensure!(pg.password("crashy")? == stored, "the password changed");
    ensure!(pg.app_login("crashy")? == "crashy");
    Ok(())
}

/// `managementPolicy: Observe` imports a database made by hand: outputs
/// recorded; password, comment and owner untouched; no Secret; deleting
/// the resource (even with Destroy) drops nothing.
fn observe_imports_unchanged(pg: &mut Postgres) -> Result<()> {
    pg.admin("CREATE ROLE legacy LOGIN PASSWORD 'legacy-pw'")?;
    pg.admin("CREATE DATABASE legacy OWNER legacy")?;
    let oid = oid_of(pg, "legacy")?;
    let spec = json!({"managementPolicy": "Observe", "deletionPolicy": "Destroy"});
    pg.create("legacy", spec)?;
    let outputs = pg.wait_ready("legacy")?["status"]["outputs"].clone();
    ensure!(outputs["owner"] == "legacy", "outputs are {outputs}");
    ensure!(
        outputs["databaseOid"].as_u64() == oid,
        "outputs are {outputs}"
    );
    ensure!(
        pg.secret("legacy-connection")?.is_none(),
        "a connection Secret"
    );
    pg.kube
        .ok(&["delete", PGDB, "legacy", "--wait=false"], None)?;
    eventually("legacy gone", DEADLINE, || {
        ensure!(pg.kube.get(PGDB, "legacy")?.is_none(), "still there");
        Ok(())
    })?;
    let comment =
        "SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = 'legacy'";
    ensure!(pg.admin(comment)?.is_empty(), "the role was marked");
    ensure!(oid_of(pg, "legacy")? == oid, "the database was changed");
    let login = pg.psql(("legacy", "legacy-pw", "legacy"), "SELECT current_user")?;
    ensure!(login == "legacy", "the password was changed");
    Ok(())
}

/// Deleting the Destroy resources drops their roles and databases; only
/// the imported ones stay.
fn destroy_drops_both(pg: &mut Postgres) -> Result<()> {
    pg.kube
        .ok(&["delete", PGDB, "orders", "crashy", "--wait=false"], None)?;
    eventually("orders and crashy gone", DEADLINE, || {
        let left = pg.kube.ok(&["get", PGDB, "-o", "name"], None)?;
        ensure!(left.trim().is_empty(), "left: {left}");
        Ok(())
    })?;
    let roles = "SELECT rolname FROM pg_roles WHERE rolname NOT LIKE 'pg\\_%' ORDER BY 1";
    ensure!(
        rows(pg, roles)? == "legacy,postgres",
        "roles {}",
        rows(pg, roles)?
    );
    let databases = "SELECT datname FROM pg_database WHERE datname NOT LIKE 'template_' ORDER BY 1";
    let got = rows(pg, databases)?;
    ensure!(got == "legacy,postgres", "databases {got}");
    Ok(())
}
