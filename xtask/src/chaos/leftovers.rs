//! What a crashed or stopped operator must not leave behind: kubectl
//! processes, private files, panics in its log.

use std::fs;

use anyhow::ensure;

use crate::support::suite::Suite;
use crate::world::operator::processes_of;
use crate::world::World;

/// Checks at the end of the run, the operator still running until the last.
pub fn final_checks(w: &mut World<'_>, suite: &mut Suite) {
    suite.check("operator-never-exited-on-its-own", || {
        ensure!(
            w.operator.as_mut().is_some_and(|o| o.is_running()),
            "the operator is not running"
        );
        w.stop_operator_cleanly()
    });
    suite.check("no-panic-in-the-operator-log", || {
        let log = fs::read_to_string(w.operator_log())?;
        let panics: Vec<&str> = log.lines().filter(|l| l.contains("panicked")).collect();
        ensure!(
            panics.is_empty(),
            "{} panic lines, first: {}",
            panics.len(),
            panics[0]
        );
        Ok(())
    });
    suite.check("no-kubectl-or-temp-file-left-by-the-operators", || {
        let procs = processes_of(&w.work);
        ensure!(procs.is_empty(), "processes left: {procs:?}");
        let left: Vec<_> = fs::read_dir(w.operator_tmp())?
            .flatten()
            .map(|e| e.path())
            .collect();
        ensure!(left.is_empty(), "files or directories left: {left:?}");
        Ok(())
    });
}
