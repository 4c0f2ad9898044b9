//! Running checks: `PASS name (1.23s)` / `FAIL name (1.23s): reason`, and
//! the verdict of a whole run.

use std::time::Instant;

use anyhow::{bail, ensure, Result};

use super::interrupt;

#[derive(Debug)]
pub struct Outcome {
    pub name: String,
    /// `None` when it passed (or was skipped).
    pub failure: Option<String>,
    /// Not run because of an interrupt.
    pub skipped: bool,
}

/// Collects outcomes and prints them as they finish.
#[derive(Debug, Default)]
pub struct Suite {
    outcomes: Vec<Outcome>,
}

impl Suite {
    /// Runs one check and prints its outcome; returns whether it passed (the
    /// caller prints diagnostics right after a failure).
    /// After an interrupt, checks are skipped (`SKIP name`) unstarted.
    pub fn check(&mut self, name: &str, f: impl FnOnce() -> Result<()>) -> bool {
        match interrupt::requested() {
            true => self.run(name, || bail!("not started")),
            false => self.run(name, f),
        }
    }

    /// Runs a check even after an interrupt (e.g. the cleanup check).
    pub fn run(&mut self, name: &str, f: impl FnOnce() -> Result<()>) -> bool {
        let started = Instant::now();
        let result = f();
        let secs = started.elapsed().as_secs_f64();
        let (failure, skipped) = match result {
            Ok(()) => {
                println!("PASS {name} ({secs:.2}s)");
                (None, false)
            }
            // Cut short by Ctrl-C: not a verdict on the code under test.
            Err(_) if interrupt::requested() => {
                println!("SKIP {name} (interrupted after {secs:.2}s)");
                (None, true)
            }
            Err(err) => {
                let reason = format!("{err:#}");
                println!("FAIL {name} ({secs:.2}s): {reason}");
                (Some(reason), false)
            }
        };
        let passed = failure.is_none() && !skipped;
        self.outcomes.push(Outcome {
            name: name.to_string(),
            failure,
            skipped,
        });
        passed
    }

    /// [`Suite::check`] of `f` on `state`; after a failure (not an
    /// interrupt) `diagnose` prints what helps, showing `resource`.
    pub fn check_on<S>(
        &mut self,
        state: &mut S,
        name: &str,
        (diagnose, resource): (impl Fn(&mut S, Option<&str>), Option<&str>),
        f: impl FnOnce(&mut S) -> Result<()>,
    ) {
        if !self.check(name, || f(state)) && !interrupt::requested() {
            diagnose(state, resource);
        }
    }

    /// Prints `<task>: N passed, N failed[, N skipped] <timing>` and fails
    /// when a check failed or the run was interrupted.
    pub fn finish(&self, task: &str, timing: &str) -> Result<()> {
        let total = self.outcomes.len();
        let failures: Vec<&str> = (self.outcomes.iter())
            .filter(|o| o.failure.is_some())
            .map(|o| o.name.as_str())
            .collect();
        let failed = failures.len();
        let skipped = self.outcomes.iter().filter(|o| o.skipped).count();
        let skipped_text = (skipped > 0).then(|| format!(", {skipped} skipped"));
        let timing = (!timing.is_empty()).then(|| format!(" {timing}"));
        println!(
            "{task}: {} passed, {failed} failed{}{}",
            total - failed - skipped,
            skipped_text.unwrap_or_default(),
            timing.unwrap_or_default()
        );
        if interrupt::requested() {
            bail!("interrupted");
        }
        ensure!(
            failed == 0,
            "{failed} of {total} {task} checks failed: {}",
            failures.join(", ")
        );
        Ok(())
    }
}
