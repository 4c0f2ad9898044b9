//! Leases from the outside, for the failover and scale-out checks and the
//! scale-out bench: Lease flags for the example operator, and the holders
//! as the API server reports them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use blue_kubernetes_client::Lease;

use super::wait::poll;
use blue_envtest::Kubectl;

/// The Lease the failover check's operators elect on.
pub const LEASE: &str = "e2e-leader";

/// Short Lease timing, so a failover costs seconds of CI time: 3 s lease,
/// 2 s renew deadline, 0.5 s retry period (with sharding: rounds).
pub const LEASE_MS: u64 = 3_000;
pub const RETRY_MS: u64 = 500;
pub fn timing() -> String {
    format!("--lease-duration-ms {LEASE_MS} --renew-deadline-ms 2000 --retry-period-ms {RETRY_MS}")
}

/// Flags that make the example operator a candidate named `identity` (no
/// spaces: the flags are split at them).
pub fn election_args(identity: &str) -> Vec<String> {
    format!(
        "--leader-elect --lease-name {LEASE} --leader-identity {identity} {}",
        timing()
    )
    .split_whitespace()
    .map(String::from)
    .collect()
}

/// The Lease's current holder (`None` when absent or released).
pub fn holder(kube: &Kubectl) -> Result<Option<String>> {
    Ok(kube.get("lease", LEASE)?.and_then(|lease| {
        lease["spec"]["holderIdentity"]
            .as_str()
            .filter(|h| !h.is_empty())
            .map(str::to_string)
    }))
}

/// Polls (as fast as kubectl allows) until `want` holds the Lease; returns
/// the time since `since`.
pub fn wait_holder(
    kube: &Kubectl,
    want: &str,
    since: Instant,
    timeout: Duration,
) -> Result<Duration> {
    let what = format!("{want} takes the lease");
    poll(&what, timeout, Duration::from_millis(50), || {
        let now = holder(kube)?;
        ensure!(now.as_deref() == Some(want), "holder is {now:?}");
        Ok(since.elapsed())
    })
}

/// The holder of each shard Lease (`<prefix>-shard-<i>`) by Lease name;
/// released ones are left out.
pub fn shard_holders(leases: &[Lease], prefix: &str) -> BTreeMap<String, String> {
    let prefix = format!("{prefix}-shard-");
    let held = leases.iter().filter(|l| l.name.starts_with(&prefix));
    held.filter_map(|l| Some((l.name.clone(), l.spec.holder()?.to_string())))
        .collect()
}
