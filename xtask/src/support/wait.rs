//! The one wait loop: probe until a condition holds or a deadline passes,
//! stopping early on Ctrl-C.

use std::time::{Duration, Instant};

use anyhow::Result;

use super::interrupt;

/// How often `eventually` probes.
pub const PROBE_EVERY: Duration = Duration::from_millis(250);
/// Default deadline of an "eventually" check.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// Probes every [`PROBE_EVERY`] until `probe` succeeds or `timeout` passes.
pub fn eventually<T>(what: &str, timeout: Duration, probe: impl FnMut() -> Result<T>) -> Result<T> {
    poll(what, timeout, PROBE_EVERY, probe)
}

/// Marks a probe error that ends the wait at once (e.g. the awaited
/// process died) instead of meaning "not yet".
#[derive(Debug)]
pub struct GiveUp;

impl std::fmt::Display for GiveUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("gave up waiting")
    }
}

/// Probes every `every` until `probe` succeeds or `timeout` passes. A probe
/// error means "not yet" (unless it carries [`GiveUp`]); the last one
/// explains a timeout.
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
            Err(err) if err.is::<GiveUp>() => return Err(err),
            Err(err) => err,
        };
        if Instant::now() >= deadline {
            return Err(last.context(format!("not reached within {timeout:?}: {what}")));
        }
        if interrupt::sleep(every) {
            return Err(last.context(format!("interrupted while waiting: {what}")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::{anyhow, ensure};

    #[test]
    fn a_probe_error_means_not_yet_unless_it_gives_up() {
        let mut tries = 0;
        let got = poll(
            "three tries",
            Duration::from_secs(5),
            Duration::ZERO,
            || {
                tries += 1;
                ensure!(tries == 3, "try {tries}");
                Ok(tries)
            },
        );
        assert_eq!(got.unwrap(), 3);

        let mut tries = 0;
        let err = poll("never", Duration::from_secs(5), Duration::ZERO, || {
            tries += 1;
            Err::<(), _>(anyhow!("the process died").context(GiveUp))
        })
        .unwrap_err();
        assert_eq!(tries, 1);
        assert!(format!("{err:#}").contains("the process died"));

        let err = poll("nothing", Duration::ZERO, Duration::ZERO, || {
            Err::<(), _>(anyhow!("not yet"))
        })
        .unwrap_err();
        assert!(format!("{err:#}").contains("not reached within 0ns: nothing"));
    }
}
