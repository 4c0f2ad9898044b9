//! The one wait loop: probe until a condition holds or a deadline passes.

use std::thread;
use std::time::{Duration, Instant};

use crate::Error;

/// Why a probe did not succeed.
pub(crate) enum Probe {
    /// Not yet: try again (the text explains a timeout).
    NotYet(String),
    /// Never: stop waiting (e.g. the awaited process died).
    GiveUp(Error),
}

/// Probes every `every` until `probe` succeeds, gives up, or `timeout`
/// passes ([`Error::Timeout`] with the last reason).
pub(crate) fn poll<T>(
    what: &str,
    timeout: Duration,
    every: Duration,
    mut probe: impl FnMut() -> Result<T, Probe>,
) -> Result<T, Error> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match probe() {
            Ok(v) => return Ok(v),
            Err(Probe::GiveUp(err)) => return Err(err),
            Err(Probe::NotYet(last)) => last,
        };
        if Instant::now() >= deadline {
            return Err(Error::Timeout {
                what: what.to_string(),
                timeout_secs: timeout.as_secs(),
                last,
            });
        }
        thread::sleep(every);
    }
}
