//! The steps audit (the test hook `audit-steps`, off by default: see
//! [`crate::test_hooks`]): every attempt of a
//! durable step writes one row, before its effect, into [`TABLE`] in the
//! server's maintenance database (`postgres`), created on first use. The
//! rows say which steps ran in which run and which were re-runs of an
//! attempt cut short, so a test can check on the server itself that no
//! step recorded `Done` ran again in its run (`cargo xtask e2e` and
//! `chaos` do).
//!
//! A row holds the resource's `namespace/name`, the run's id, the event,
//! the step's name and key, whether it was interrupted, and the
//! operator's process id: nothing secret. The table grows by one row per
//! step attempt and is never pruned by the operator: it is for tests and
//! for audits, and whoever turns it on truncates it.

use crate::server::ServerError;
use blue_kubernetes::steps::Step;
use tokio_postgres::error::SqlState;
use tokio_postgres::Client;

/// The audit table's name.
pub const TABLE: &str = "postgres_operator_audit";

const CREATE: &str = "CREATE TABLE IF NOT EXISTS postgres_operator_audit (\
    id bigserial PRIMARY KEY, \
    at timestamptz NOT NULL DEFAULT clock_timestamp(), \
    resource text NOT NULL, run text NOT NULL, event text NOT NULL, \
    step text NOT NULL, key text NOT NULL, interrupted boolean NOT NULL, \
    pid integer NOT NULL)";

const INSERT: &str = "INSERT INTO postgres_operator_audit \
    (resource, run, event, step, key, interrupted, pid) VALUES ($1, $2, $3, $4, $5, $6, $7)";

/// Records that `step` of `resource`'s run (for `event`) starts now.
pub async fn record(
    admin: &Client,
    resource: &str,
    event: &str,
    step: &Step,
) -> Result<(), ServerError> {
    let pid = i32::try_from(std::process::id()).unwrap_or(-1);
    let (run, name, key, interrupted) = (step.run(), step.name(), step.key(), step.interrupted());
    let row: [&(dyn tokio_postgres::types::ToSql + Sync); 7] =
        [&resource, &run, &event, &name, &key, &interrupted, &pid];
    let insert = || admin.execute(INSERT, &row);
    match insert().await {
        Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => {
            create(admin).await?;
            insert().await?;
        }
        done => {
            done?;
        }
    }
    Ok(())
}

/// Creates the table. Two operators creating it at once may both pass
/// `IF NOT EXISTS` and one then fails on the catalog's unique index: the
/// table exists either way.
async fn create(admin: &Client) -> Result<(), ServerError> {
    match admin.batch_execute(CREATE).await {
        Err(e)
            if [SqlState::UNIQUE_VIOLATION, SqlState::DUPLICATE_TABLE]
                .iter()
                .any(|c| e.code() == Some(c)) =>
        {
            Ok(())
        }
        done => Ok(done?),
    }
}
