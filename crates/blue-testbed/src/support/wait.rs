//! Waiting as xtask waits: blue-envtest's wait loop (probe until a
//! condition holds or a deadline passes), with `anyhow` errors kept whole,
//! a [`GiveUp`] marker ending the wait, and stopping early on Ctrl-C.

use std::time::Duration;

use anyhow::{anyhow, Result};

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

/// How a wait ended before its deadline.
enum Ended<T> {
    Reached(T),
    GaveUp(anyhow::Error),
    Interrupted,
}

/// Probes every `every` until `probe` succeeds or `timeout` passes. A probe
/// error means "not yet" (unless it carries [`GiveUp`]); the last one
/// explains a timeout. The loop is blue-envtest's; this adds what xtask
/// needs around it: the last error kept whole (causes and all), a
/// [`GiveUp`] ending the wait, and Ctrl-C noticed before the next probe.
pub fn poll<T>(
    what: &str,
    timeout: Duration,
    every: Duration,
    mut probe: impl FnMut() -> Result<T>,
) -> Result<T> {
    let mut last: Option<anyhow::Error> = None;
    let ended = blue_envtest::eventually(what, timeout, every, || {
        if last.is_some() && interrupt::requested() {
            return Ok(Ended::Interrupted);
        }
        match probe() {
            Ok(v) => Ok(Ended::Reached(v)),
            Err(err) if err.is::<GiveUp>() => Ok(Ended::GaveUp(err)),
            Err(err) => {
                let text = format!("{err:#}");
                last = Some(err);
                Err(text)
            }
        }
    });
    // Only after a failed probe can the wait time out or be interrupted;
    // blue-envtest's own error (its timeout) is replaced by the probe's.
    let last = || last.unwrap_or_else(|| anyhow!("no probe ran"));
    match ended {
        Ok(Ended::Reached(v)) => Ok(v),
        Ok(Ended::GaveUp(err)) => Err(err),
        Ok(Ended::Interrupted) => Err(last().context(format!("interrupted while waiting: {what}"))),
        Err(_) => Err(last().context(format!("not reached within {timeout:?}: {what}"))),
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
