//! PostgreSQL stopped and started again while `PostgresDatabase`s
//! converge, their connection Secrets deleted and new resources created
//! during each outage: every resource ends Ready with its first password,
//! one role, database and Secret each; Destroy then leaves nothing.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use serde_json::json;

use super::Figures;
use crate::support::interrupt;
use crate::support::suite::Suite;
use crate::support::wait::{eventually, DEADLINE};
use crate::world::postgres::{Postgres, PGDB};
use crate::world::World;

/// How long each outage lasts: longer than the resources' 2 s interval,
/// so checks fail against the stopped server.
const OUTAGE: Duration = Duration::from_secs(3);
const FIRST: [&str; 3] = ["shop-0", "shop-1", "shop-2"];
const OUTAGES: usize = 2;

/// Runs the scenario; returns the server's directory (gone by then) for
/// the cleanup check.
pub fn run(w: &World<'_>, suite: &mut Suite, figures: &mut Figures) -> Option<PathBuf> {
    let mut pg = None;
    let mut recoveries = Vec::new();
    let passed = suite.check("postgres-restarts-and-deleted-secrets", || {
        let pg = pg.insert(Postgres::up(w)?);
        scenario(pg, &mut recoveries)
    });
    if let (false, Some(pg)) = (passed, &pg) {
        pg.diagnose();
    }
    let slowest = recoveries.iter().max().copied().unwrap_or_default();
    figures.add(format!(
        "PostgreSQL stopped {OUTAGES} times for {OUTAGE:?}, {} connection Secrets deleted and a resource created in each outage: all Ready and logging in with their first passwords within {:.1}s of each restart",
        FIRST.len(),
        slowest.as_secs_f64()
    ));
    let dir = pg.as_ref().map(|p| p.server_dir().to_path_buf());
    drop(pg);
    dir
}

fn scenario(pg: &mut Postgres, recoveries: &mut Vec<Duration>) -> Result<()> {
    let destroy = json!({"deletionPolicy": "Destroy"});
    let mut names: Vec<String> = FIRST.map(String::from).to_vec();
    for name in &names {
        pg.create(name, destroy.clone())?;
    }
    let mut passwords = BTreeMap::new();
    for name in &names {
        pg.wait_ready(name)?;
        passwords.insert(name.clone(), pg.password(name)?);
    }
    for outage in 0..OUTAGES {
        pg.stop_server();
        for name in FIRST {
            let secret = format!("{name}-connection");
            pg.kube
                .ok(&["delete", "secret", &secret, "--wait=false"], None)?;
        }
        names.push(format!("late-{outage}"));
        pg.create(&names[names.len() - 1], destroy.clone())?;
        interrupt::sleep(OUTAGE);
        pg.start_server()?;
        let restarted = Instant::now();
        for name in &names {
            pg.wait_ready_and(name, |_| pg.app_login(name).map(drop))?;
        }
        recoveries.push(restarted.elapsed());
    }
    for (name, password) in &passwords {
        ensure!(pg.password(name)? == *password, "{name}'s password changed");
    }
    let count = |table: &str, column: &str| {
        let sql = format!(
            "SELECT count(*) FROM {table} WHERE {column} LIKE 'shop-%' OR {column} LIKE 'late-%'"
        );
        pg.admin(&sql)
    };
    let found = (
        count("pg_roles", "rolname")?,
        count("pg_database", "datname")?,
    );
    let want = names.len().to_string();
    ensure!(
        found == (want.clone(), want),
        "(roles, databases): {found:?}"
    );

    pg.kube
        .ok(&["delete", PGDB, "--all", "--wait=false"], None)?;
    eventually("every resource destroyed", DEADLINE, || {
        let left = pg.kube.ok(&["get", PGDB, "-o", "name"], None)?;
        ensure!(left.trim().is_empty(), "left: {left}");
        let found = (
            count("pg_roles", "rolname")?,
            count("pg_database", "datname")?,
        );
        ensure!(
            found == ("0".into(), "0".into()),
            "(roles, databases) left: {found:?}"
        );
        Ok(())
    })?;
    let log = std::fs::read_to_string(pg.log())?;
    ensure!(!log.contains("panicked"), "a panic in the operator's log");
    let running = pg.operator.as_mut().is_some_and(|o| o.is_running());
    ensure!(running, "postgres-operator exited on its own");
    Ok(())
}
