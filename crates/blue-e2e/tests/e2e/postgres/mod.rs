//! The PostgreSQL example operator against a real API server and a real
//! PostgreSQL 15. Each test gets a namespace, a PostgreSQL server and an
//! operator of its own ([`Postgres`]), after a setup that makes what its
//! check starts from; the checks that judge a whole history (the steps
//! audit, the log, what Destroy leaves) share one fixture, inside one test.

mod checks;
mod steps_audit;
// Shared with tests/chaos, which uses more of it.
#[allow(dead_code)]
mod world;

use anyhow::Result;
use serde_json::json;

use crate::support::{self, World};
use checks::*;
use world::Postgres;

/// Runs `setup`, then `check`, on a fresh [`Postgres`]; afterwards the
/// server's directory, like the check's own, must be gone.
fn check(
    setup: fn(&mut Postgres) -> Result<()>,
    check: fn(&mut Postgres) -> Result<()>,
) -> Result<()> {
    support::run(World::new("pg")?, None, |w| {
        let mut pg = Postgres::up(w)?;
        let result = setup(&mut pg).and_then(|()| check(&mut pg));
        if result.is_err() {
            pg.diagnose();
        }
        let server = pg.server_dir().to_path_buf();
        drop(pg);
        result?;
        Ok(blue_envtest::procfs::nothing_left(&[server])?)
    })
}

fn nothing(_: &mut Postgres) -> Result<()> {
    Ok(())
}

/// `orders` Ready (Destroy).
fn orders(pg: &mut Postgres) -> Result<()> {
    pg.create("orders", json!({"deletionPolicy": "Destroy"}))?;
    pg.wait_ready("orders").map(drop)
}

/// A role and a database `legacy` made by hand.
fn legacy(pg: &mut Postgres) -> Result<()> {
    pg.admin("CREATE ROLE legacy LOGIN PASSWORD 'legacy-pw'")?;
    pg.admin("CREATE DATABASE legacy OWNER legacy").map(drop)
}

#[test]
fn account_forbidden_outside_its_role() -> Result<()> {
    check(nothing, forbidden_outside_role)
}

#[test]
fn create_ready_app_logs_in() -> Result<()> {
    check(nothing, checks::create_ready_app_logs_in)
}

#[test]
fn dropped_database_recreated() -> Result<()> {
    check(orders, checks::dropped_database_recreated)
}

#[test]
fn deleted_secret_back_at_once_same_password() -> Result<()> {
    check(orders, deleted_secret_back)
}

#[test]
fn edited_secret_repaired() -> Result<()> {
    check(orders, checks::edited_secret_repaired)
}

#[test]
fn database_before_server_waits_then_ready() -> Result<()> {
    check(nothing, database_before_server_waits)
}

#[test]
fn deleted_server_database_waits() -> Result<()> {
    check(
        database_before_server_waits,
        checks::deleted_server_database_waits,
    )
}

#[test]
fn sigkill_mid_converge_recovers() -> Result<()> {
    check(nothing, sigkill_mid_converge)
}

#[test]
fn failed_step_4_retried_from_step_4() -> Result<()> {
    check(nothing, failed_step_resumes_there)
}

#[test]
fn observe_imports_unchanged() -> Result<()> {
    check(nothing, checks::observe_imports_unchanged)
}

#[test]
fn observe_imports_by_external_name() -> Result<()> {
    check(legacy, checks::observe_imports_by_external_name)
}

/// One history on one server: `orders` created, `waiter` waiting for its
/// server and kept, `crashy` killed mid-converge, `flaky` failing at step
/// 4, `legacy` imported. Then: no step recorded Done ran twice (and the
/// crash and the failure left re-runs), the log holds no password, and
/// deleting the Destroy resources drops theirs only.
#[test]
fn audit_log_and_destroy_after_a_history() -> Result<()> {
    check(
        |pg| {
            checks::create_ready_app_logs_in(pg)?;
            database_before_server_waits(pg)?;
            checks::deleted_server_database_waits(pg)?;
            sigkill_mid_converge(pg)?;
            failed_step_resumes_there(pg)?;
            checks::observe_imports_unchanged(pg)
        },
        |pg| {
            audit_no_done_step_twice(pg)?;
            log_holds_no_password(pg)?;
            destroy_drops_both(pg)
        },
    )
}
