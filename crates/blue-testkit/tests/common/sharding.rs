//! What the sharding tests share (`sharding.rs`, `sharding_idle_cost.rs`
//! and the model's `sharding_world.rs`): settings, identities, shards.

use super::NS;
use blue_kubernetes::replicas::ShardingConfig;
use std::sync::{Mutex, MutexGuard};

/// The profile of widget `name` in [`NS`].
pub fn profile(name: &str) -> String {
    format!("{NS}--{name}")
}

/// A replica's settings: Leases named after `lease_name` in [`NS`],
/// `shards` shards, `max_members` slots, identity `replica`; the timing
/// is the caller's to set.
pub fn settings(lease_name: &str, shards: u32, max_members: u32, replica: &str) -> ShardingConfig {
    let mut s = ShardingConfig::new(lease_name, NS)
        .with_shards(shards)
        .with_max_members(max_members);
    s.lease.identity = replica.into();
    s
}

/// The state identity of `profile` in a test's own `system` (no other
/// test's, so the process-wide identity lock never couples two tests).
pub fn identity(system: &str, profile: &str) -> Vec<Option<String>> {
    vec![Some(system.into()), Some(profile.into())]
}

/// The shard `settings` puts `profile`'s identity (in `system`) in.
pub fn shard_of(settings: &ShardingConfig, system: &str, profile: &str) -> u32 {
    settings.shard_of(&identity(system, profile))
}

/// Locks `m`, past a panic of another holder (a failed test's).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
