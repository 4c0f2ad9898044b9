//! This operator's test hooks, for `cargo xtask e2e` and `chaos` only:
//! given through the runner's one hidden option, `--test-hooks` (or
//! `BLUE_TEST_HOOKS`), beside the runner's own; all off unless given.
//!
//! - [`AUDIT_STEPS`]: every step attempt writes a row into the audit
//!   table ([`crate::audit`]);
//! - [`FAIL_STEP`]`=FILE`: while FILE exists, the step whose name it holds
//!   fails at its start (after its audit row, before its effect), so the
//!   e2e can fail step k of a run and watch the retry resume there.
//!
//! Pausing or SIGKILLing the operator at a step boundary is the runner's:
//! `kill:after-step:role` ends the process once the `role` step created
//! the role and before its `Done` is recorded.

use crate::package::Features;
use blue_kubernetes::runner::TestHookSet;
use std::path::PathBuf;
use std::sync::OnceLock;

/// `audit-steps`.
pub const AUDIT_STEPS: &str = "audit-steps";

/// `fail-step=FILE`.
pub const FAIL_STEP: &str = "fail-step";

/// The file `fail-step` names; set once, at startup.
static FAIL_FILE: OnceLock<PathBuf> = OnceLock::new();

/// The package features `hooks` turn on; remembers the `fail-step` file.
pub fn features(hooks: &TestHookSet) -> Features {
    if let Some(file) = hooks.value(FAIL_STEP).filter(|f| !f.is_empty()) {
        let _ = FAIL_FILE.set(file.into());
    }
    Features {
        audit_steps: hooks.has(AUDIT_STEPS),
    }
}

/// An error when the `fail-step` file holds `step`.
pub fn fail_step(step: &str) -> Result<(), &'static str> {
    let Some(path) = FAIL_FILE.get() else {
        return Ok(());
    };
    match std::fs::read_to_string(path) {
        Ok(named) if named.trim() == step => Err("test hook: this step fails while asked to"),
        _ => Ok(()),
    }
}
