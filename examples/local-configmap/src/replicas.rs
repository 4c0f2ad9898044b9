//! How this replica takes part among several: what the startup line says
//! about it, and the name the audit gives it.

use blue_kubernetes::replicas::{LeaderElectionConfig, ShardingConfig};

/// The startup line's note: `; leader election on lease NS/NAME as ID`,
/// `; sharded (N shards) on leases NS/NAME-* as ID` (the scale-out e2e
/// waits for `sharded (N shards)`), or nothing for a single replica.
pub fn startup_note(
    election: Option<&LeaderElectionConfig>,
    sharding: Option<&ShardingConfig>,
) -> String {
    match (sharding, election) {
        (Some(s), _) => format!(
            "; sharded ({} shards) on leases {}/{}-* as {}",
            s.shards, s.lease.lease_namespace, s.lease.lease_name, s.lease.identity
        ),
        (None, Some(e)) => format!(
            "; leader election on lease {}/{} as {}",
            e.lease_namespace, e.lease_name, e.identity
        ),
        (None, None) => String::new(),
    }
}

/// The replica's name in the audit: its Lease holder identity (sharding's,
/// else the election's), else `fallback` (`--leader-identity`), else a
/// fresh one as the Leases would have.
pub fn audit_name(
    election: Option<&LeaderElectionConfig>,
    sharding: Option<&ShardingConfig>,
    fallback: Option<&str>,
) -> String {
    match (sharding, election, fallback) {
        (Some(s), _, _) => s.lease.identity.clone(),
        (None, Some(e), _) => e.identity.clone(),
        (None, None, Some(name)) => name.to_string(),
        (None, None, None) => LeaderElectionConfig::unique_identity(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_startup_note_says_sharded_with_the_shard_count_and_identity() {
        let mut s = ShardingConfig::new("op", "infra").with_shards(3);
        s.lease.identity = "pod-1".into();
        assert_eq!(
            startup_note(None, Some(&s)),
            "; sharded (3 shards) on leases infra/op-* as pod-1"
        );
        let mut e = LeaderElectionConfig::new("op", "infra");
        e.identity = "pod-2".into();
        assert_eq!(
            startup_note(Some(&e), None),
            "; leader election on lease infra/op as pod-2"
        );
        assert_eq!(startup_note(None, None), "");
    }

    #[test]
    fn the_audit_names_a_replica_by_its_lease_identity_first() {
        let mut s = ShardingConfig::new("op", "infra");
        s.lease.identity = "shard-holder".into();
        let mut e = LeaderElectionConfig::new("op", "infra");
        e.identity = "leader".into();
        assert_eq!(audit_name(Some(&e), Some(&s), Some("flag")), "shard-holder");
        assert_eq!(audit_name(Some(&e), None, Some("flag")), "leader");
        assert_eq!(audit_name(None, None, Some("flag")), "flag");
        assert_ne!(audit_name(None, None, None), audit_name(None, None, None));
    }
}
