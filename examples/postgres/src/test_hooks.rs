//! Test-only hooks, so `cargo xtask e2e` can stop or fail the operator at
//! a chosen point deterministically. Both are off unless their variable is
//! set; never set them outside tests:
//!
//! - [`PAUSE_ENV`] names a file: a `role` step that has just created the
//!   role (its effect: the database does not exist yet) writes the role's
//!   name to that file and waits until the file is removed; the e2e
//!   SIGKILLs the operator there.
//! - [`FAIL_ENV`] names a file: while it exists, the step whose name it
//!   holds fails at its start (after its audit row, before its effect), so
//!   the e2e can fail step k of a run and watch the retry resume there.

use std::path::Path;
use std::time::Duration;

/// The variable naming the pause file.
pub const PAUSE_ENV: &str = "POSTGRES_OPERATOR_TEST_PAUSE_AFTER_CREATE_ROLE";

/// The variable naming the failure file.
pub const FAIL_ENV: &str = "POSTGRES_OPERATOR_TEST_FAIL_STEP";

/// Pauses as described above when [`PAUSE_ENV`] is set; returns at once when not.
pub async fn after_create_role(role: &str) {
    let Some(path) = std::env::var_os(PAUSE_ENV) else {
        return;
    };
    let path = Path::new(&path);
    tracing::warn!(
        "test pause: role {role} created; waiting until {} is removed",
        path.display()
    );
    if std::fs::write(path, role).is_err() {
        tracing::warn!("test pause: cannot write the pause file; not pausing");
        return;
    }
    while path.exists() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An error when [`FAIL_ENV`] names a file that holds `step`.
pub fn fail_step(step: &str) -> Result<(), &'static str> {
    let Some(path) = std::env::var_os(FAIL_ENV) else {
        return Ok(());
    };
    match std::fs::read_to_string(path) {
        Ok(named) if named.trim() == step => Err("test hook: this step fails while asked to"),
        _ => Ok(()),
    }
}
