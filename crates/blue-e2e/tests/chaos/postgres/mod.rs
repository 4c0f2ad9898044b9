//! The PostgreSQL example under faults: PostgreSQL outages, and the
//! operator SIGKILLed in the middle of multi-step runs. Each test has a
//! namespace, a PostgreSQL server and an operator of its own (the e2e
//! fixture, `tests/e2e/postgres/world.rs`).

mod kills;
// The e2e's PostgreSQL fixture; these checks use part of it.
#[allow(dead_code)]
#[path = "../../e2e/postgres/steps_audit.rs"]
mod steps_audit;
#[allow(dead_code)]
#[path = "../../e2e/postgres/world.rs"]
mod world;

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use serde_json::json;

use crate::chaos::figure;
use crate::support::{self, World};
use world::Postgres;

/// Each outage outlasts the resources' 2 s interval, so checks fail.
const OUTAGE: Duration = Duration::from_secs(3);
const OUTAGES: usize = 2;

/// Runs `check` on a fresh [`Postgres`]; afterwards the server's
/// directory, like the check's own, must be gone.
fn on_postgres(check: impl FnOnce(&mut Postgres) -> Result<()>) -> Result<()> {
    support::run(World::new("pg-chaos")?, None, |w| {
        let mut pg = Postgres::up(w)?;
        let result = check(&mut pg);
        if result.is_err() {
            pg.diagnose();
        }
        let server = pg.server_dir().to_path_buf();
        drop(pg);
        result?;
        Ok(blue_envtest::procfs::nothing_left(&[server])?)
    })
}

/// Three `PostgresDatabase`s Ready, then twice: PostgreSQL stopped (fast
/// shutdown) for [`OUTAGE`], their connection Secrets deleted and one more
/// resource created meanwhile, PostgreSQL started again on the same data
/// and port. Every resource Ready and logging in with its Secret again,
/// the first three with their first passwords; exactly one role and one
/// database each; no panic, the operator still running.
#[test]
fn postgres_restarts_with_deleted_secrets() -> Result<()> {
    on_postgres(|pg| {
        let mut recoveries = Vec::new();
        let result = outages(pg, &mut recoveries);
        let slowest = recoveries.iter().max().copied().unwrap_or_default();
        figure(&format!(
            "PostgreSQL stopped {OUTAGES} times for {OUTAGE:?} (Secrets deleted, a resource created meanwhile): all Ready with their first passwords within {:.1}s of each restart",
            slowest.as_secs_f64()
        ));
        result
    })
}

fn outages(pg: &mut Postgres, recoveries: &mut Vec<Duration>) -> Result<()> {
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
            pg.kube.delete("secret", &format!("{name}-connection"))?;
        }
        names.push(format!("shop-late-{outage}"));
        pg.create(&names[names.len() - 1], destroy.clone())?;
        std::thread::sleep(OUTAGE);
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

/// The operator SIGKILLed once per round at a seeded point (see
/// [`kills::sigkill_during_steps`]): nothing lost or duplicated, and each
/// killed converge run resumed by the new process with only the step the
/// kill cut short re-run (no failed attempt, so no retry delay, between).
#[test]
fn postgres_sigkill_during_steps_loses_nothing_and_resumes_without_a_retry() -> Result<()> {
    let mut seed = crate::chaos::Seed::for_test("postgres_sigkill_during_steps");
    let rounds = crate::chaos::Profile::from_env().kills;
    on_postgres(|pg| {
        let mut k = kills::Kills::default();
        let result = kills::sigkill_during_steps(pg, rounds, &mut seed, &mut k);
        figure(&k.figure());
        result?;
        ensure!(k.retried.is_empty(), "{}", k.retried.join("; "));
        Ok(())
    })
}
