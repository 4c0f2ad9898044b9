//! Leases from the outside, for the scale-out bench: the shard holders as
//! the API server reports them.

use std::collections::BTreeMap;

use blue_kubernetes_client::Lease;

/// The holder of each shard Lease (`<prefix>-shard-<i>`) by Lease name;
/// released ones are left out.
pub fn shard_holders(leases: &[Lease], prefix: &str) -> BTreeMap<String, String> {
    let prefix = format!("{prefix}-shard-");
    let held = leases.iter().filter(|l| l.name.starts_with(&prefix));
    held.filter_map(|l| Some((l.name.clone(), l.spec.holder()?.to_string())))
        .collect()
}
