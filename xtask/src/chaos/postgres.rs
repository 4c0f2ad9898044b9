//! PostgreSQL stopped and started again while `PostgresDatabase`s
//! converge, their connection Secrets deleted and a new resource created
//! during each outage: every resource ends Ready and logging in with its
//! first password, with one role and one database each.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use serde_json::json;

use super::Figures;
use crate::support::interrupt;
use crate::support::suite::Suite;
use crate::world::postgres::Postgres;
use crate::world::World;

/// Each outage outlasts the resources' 2 s interval, so checks fail.
const OUTAGE: Duration = Duration::from_secs(3);
const OUTAGES: usize = 2;

/// Runs the scenario; returns the server's directory (gone by then) for
/// the cleanup check.
pub fn run(w: &World<'_>, suite: &mut Suite, figures: &mut Figures) -> Option<PathBuf> {
    let (mut pg, mut recoveries) = (None, Vec::new());
    let passed = suite.check("postgres-restarts-with-deleted-secrets", || {
        scenario(pg.insert(Postgres::up(w)?), &mut recoveries)
    });
    if let (false, Some(pg)) = (passed, &pg) {
        pg.diagnose();
    }
    let slowest = recoveries.iter().max().copied().unwrap_or_default();
    figures.add(format!(
        "PostgreSQL stopped {OUTAGES} times for {OUTAGE:?} (Secrets deleted, a resource created meanwhile): all Ready with their first passwords within {:.1}s of each restart",
        slowest.as_secs_f64()
    ));
    let dir = pg.as_ref().map(|p| p.server_dir().to_path_buf());
    drop(pg);
    dir
}

fn scenario(pg: &mut Postgres, recoveries: &mut Vec<Duration>) -> Result<()> {
    let destroy = json!({"deletionPolicy": "Destroy"});
    let mut names = vec!["shop-0".to_string(), "shop-1".into(), "shop-2".into()];
    let mut passwords = Vec::new();
    for name in &names {
        pg.create(name, destroy.clone())?;
    }
    for name in &names {
        pg.wait_ready(name)?;
        passwords.push((name.clone(), pg.password(name)?));
    }
    for outage in 0..OUTAGES {
        pg.stop_server();
        for (name, _) in &passwords {
            let secret = format!("{name}-connection");
            let delete = ["delete", "secret", &secret, "--wait=false"];
            pg.kube.ok(&delete, None)?;
        }
        names.push(format!("shop-late-{outage}"));
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
    names.sort();
    let each = (names.join(","), names.join(","));
    let found = pg.names_like("shop-%")?;
    ensure!(found == each, "(roles, databases) are {found:?}");

    let log = std::fs::read_to_string(pg.log())?;
    ensure!(!log.contains("panicked"), "a panic in the operator's log");
    let running = pg.operator.as_mut().is_some_and(|o| o.is_running());
    ensure!(running, "postgres-operator exited on its own");
    Ok(())
}
