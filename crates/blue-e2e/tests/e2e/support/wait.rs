//! The wait loop of these tests: blue-envtest's, with the deadline and
//! probe period they share.

use std::time::Duration;

use anyhow::Result;

/// How often `eventually` probes.
pub const PROBE_EVERY: Duration = Duration::from_millis(250);
/// Default deadline of an "eventually" check.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// Probes every [`PROBE_EVERY`] until `probe` succeeds or `timeout` passes.
pub fn eventually<T>(what: &str, timeout: Duration, probe: impl FnMut() -> Result<T>) -> Result<T> {
    poll(what, timeout, PROBE_EVERY, probe)
}

/// Probes every `every` until `probe` succeeds or `timeout` passes; the
/// last probe error explains a timeout.
pub fn poll<T>(
    what: &str,
    timeout: Duration,
    every: Duration,
    probe: impl FnMut() -> Result<T>,
) -> Result<T> {
    Ok(blue_envtest::eventually(what, timeout, every, probe)?)
}
