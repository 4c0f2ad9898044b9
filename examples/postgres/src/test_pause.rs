//! Test-only: a point in `converge` where a test can stop the operator
//! deterministically. With [`ENV`] set to a path, a converge that has just
//! created a role (its first effect: the database does not exist yet)
//! writes the role's name to that file and waits until the file is
//! removed; `cargo xtask e2e` SIGKILLs the operator there. Never set it
//! outside tests: such converges wait for as long as the file exists.

use std::path::Path;
use std::time::Duration;

/// The environment variable that names the pause file.
pub const ENV: &str = "POSTGRES_OPERATOR_TEST_PAUSE_AFTER_CREATE_ROLE";

/// Pauses as described above when [`ENV`] is set; returns at once when not.
pub async fn after_create_role(role: &str) {
    let Some(path) = std::env::var_os(ENV) else {
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
