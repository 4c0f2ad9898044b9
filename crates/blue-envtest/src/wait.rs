//! The one wait loop: probe until a condition holds or a deadline passes.
//! [`eventually`] is the tests' way in.

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

/// Calls `probe` every `every` until it returns `Ok` or `timeout` passes:
/// an `Err` means "not yet", and the last one (with its causes, as `{:#}`
/// prints them) explains the [`Error::Timeout`].
///
/// ```
/// use std::time::Duration;
/// let mut tries = 0;
/// let third = blue_envtest::eventually("the third try", Duration::from_secs(5), Duration::ZERO, || {
///     tries += 1;
///     if tries < 3 { Err(format!("try {tries}")) } else { Ok(tries) }
/// });
/// assert_eq!(third.unwrap(), 3);
/// ```
pub fn eventually<T, E: std::fmt::Display>(
    what: &str,
    timeout: Duration,
    every: Duration,
    mut probe: impl FnMut() -> Result<T, E>,
) -> Result<T, Error> {
    poll(what, timeout, every, || {
        probe().map_err(|err| Probe::NotYet(format!("{err:#}")))
    })
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
