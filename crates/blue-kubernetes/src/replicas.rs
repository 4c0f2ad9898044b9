//! Running several replicas of one operator: one leader at a time
//! ([`LeaderElectionConfig`]) or the work split into shards
//! ([`ShardingConfig`]), both on `coordination.k8s.io/v1` Leases, and the
//! [`FencingToken`] that lets infrastructure refuse a replica that lost
//! its Lease while its callback ran.

pub use crate::leader::{FencingToken, LeaderElectionConfig};
pub use crate::sharding::ShardingConfig;
