//! Leader election from the outside, shared by the failover e2e check and
//! the failover benchmark: election flags for the example operator and the
//! Lease's holder as the API server reports it.

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};

use crate::support::kube::Kube;
use crate::support::wait::poll;

/// The Lease the e2e and bench operators elect on.
pub const LEASE: &str = "e2e-leader";

/// Short election timing, so a failover costs seconds of CI time.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// `--lease-duration-ms`.
    pub lease_ms: u64,
    /// `--renew-deadline-ms`.
    pub renew_ms: u64,
    /// `--retry-period-ms`.
    pub retry_ms: u64,
}

/// What the e2e and the bench use: 3 s lease, 2 s renew deadline, 0.5 s retry.
pub const SHORT: Timing = Timing {
    lease_ms: 3_000,
    renew_ms: 2_000,
    retry_ms: 500,
};

/// Flags that make the example operator a candidate named `identity` (no
/// spaces: the flags are split at them).
pub fn election_args(identity: &str, timing: Timing) -> Vec<String> {
    let Timing {
        lease_ms,
        renew_ms,
        retry_ms,
    } = timing;
    format!(
        "--leader-elect --lease-name {LEASE} --leader-identity {identity} \
         --lease-duration-ms {lease_ms} --renew-deadline-ms {renew_ms} --retry-period-ms {retry_ms}"
    )
    .split_whitespace()
    .map(String::from)
    .collect()
}

/// The Lease's current holder (`None` when absent or released).
pub fn holder(kube: &Kube) -> Result<Option<String>> {
    Ok(kube.get("lease", LEASE)?.and_then(|lease| {
        lease["spec"]["holderIdentity"]
            .as_str()
            .filter(|h| !h.is_empty())
            .map(str::to_string)
    }))
}

/// Polls (as fast as kubectl allows) until `want` holds the Lease; returns
/// the time since `since`.
pub fn wait_holder(kube: &Kube, want: &str, since: Instant, timeout: Duration) -> Result<Duration> {
    let what = format!("{want} takes the lease");
    poll(&what, timeout, Duration::from_millis(50), || {
        let now = holder(kube)?;
        ensure!(now.as_deref() == Some(want), "holder is {now:?}");
        Ok(since.elapsed())
    })
}
