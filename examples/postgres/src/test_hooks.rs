//! Test-only hook, so `cargo xtask e2e` can fail a step deterministically.
//! Off unless its variable is set; never set it outside tests.
//!
//! [`FAIL_ENV`] names a file: while it exists, the step whose name it holds
//! fails at its start (after its audit row, before its effect), so the e2e
//! can fail step k of a run and watch the retry resume there.
//!
//! Pausing or SIGKILLing the operator at a step boundary is the library's
//! [`blue_kubernetes::test_hooks`], read from `BLUE_TEST_HOOKS` (and
//! `BLUE_TEST_HOOKS_DIR`) by the binary: `kill:after-step:role` ends the
//! process once the `role` step created the role and before its `Done` is
//! recorded.

/// The variable naming the failure file.
pub const FAIL_ENV: &str = "POSTGRES_OPERATOR_TEST_FAIL_STEP";

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
