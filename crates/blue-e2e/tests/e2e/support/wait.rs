//! The wait loop of these tests: probe until a condition holds or a
//! deadline passes; the last probe error explains a timeout.

use std::thread;
use std::time::{Duration, Instant};

use anyhow::Result;

/// How often `eventually` probes.
pub const PROBE_EVERY: Duration = Duration::from_millis(250);
/// Default deadline of an "eventually" check.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// Probes every [`PROBE_EVERY`] until `probe` succeeds or `timeout` passes.
pub fn eventually<T>(what: &str, timeout: Duration, probe: impl FnMut() -> Result<T>) -> Result<T> {
    poll(what, timeout, PROBE_EVERY, probe)
}

/// Probes every `every` until `probe` succeeds or `timeout` passes. A probe
/// error means "not yet"; the last one explains a timeout.
pub fn poll<T>(
    what: &str,
    timeout: Duration,
    every: Duration,
    mut probe: impl FnMut() -> Result<T>,
) -> Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match probe() {
            Ok(v) => return Ok(v),
            Err(err) => err,
        };
        if Instant::now() >= deadline {
            return Err(last.context(format!("not reached within {timeout:?}: {what}")));
        }
        thread::sleep(every);
    }
}
