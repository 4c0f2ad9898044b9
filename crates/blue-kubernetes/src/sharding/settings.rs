//! Sharding settings and their validation.

use crate::Error;

use crate::replicas::LeaderElectionConfig;

/// Opt-in scale-out: several replicas share the work. Resources are split
/// into [`shards`](Self::shards) by their state identity; each replica
/// holds a membership Lease, shards are assigned to the live members, and a
/// replica dispatches a resource only while it holds the Lease of its
/// shard. Set [`Config::sharding`](crate::Config::sharding) to use it.
///
/// Exclusive with [`Config::leader_election`](crate::Config::leader_election):
/// a sharded replica is its shards' leader already, so setting both is a
/// configuration error naming both fields.
///
/// The Leases live in [`lease.lease_namespace`](LeaderElectionConfig::lease_namespace)
/// and are named after [`lease.lease_name`](LeaderElectionConfig::lease_name):
/// `<name>-member-<k>` for the membership slots (`k` below
/// [`max_members`](Self::max_members)) and `<name>-shard-<i>` for the
/// shards. Lease duration, renew deadline and identity mean what they mean
/// for leader election; the retry period is the length of a round. A
/// replica's right to its shards rides on its membership slot: a slot
/// renewal that started at `s` lets it dispatch them until `s` + renew
/// deadline and write until `s` + lease duration (the shard Leases are
/// taken once, by a guarded write, and not renewed).
///
/// Defaults and what they give: lease duration 15 s, renew deadline 10 s
/// (leader election's), rounds of 2.5 s.
/// - Idle cost, per replica: one list of the namespace's Leases and one
///   renewal of its slot per round, whatever the number of replicas,
///   shards or resources: 2 requests / 2.5 s = 0.8 a second (the target is
///   at most 1). A round of `r` ms costs `2000 / r` requests a second, so
///   rounds shorter than 2 s break the target.
/// - A graceful scale-down (or a rebalance) hands a shard over within one
///   round, 2.5 s, after its longest running callback (target: 3 s plus
///   that callback): the old owner releases it as soon as the callbacks
///   end, and the new owner takes it at its next round.
/// - A killed replica's shards dispatch elsewhere within a lease duration
///   plus one round, 17.5 s (target: lease duration + 5 s): its last
///   renewal is seen within a round, and the others look again the moment
///   its slot expires.
/// - Renewals have the renew deadline minus one round (7.5 s) to fail
///   transiently before a replica stops dispatching.
///
/// A client without [`Client::list_leases`](blue_kubernetes_client::Client::list_leases)
/// makes each round read every slot (and the shards that may be taken)
/// one by one instead: `max_members` + 1 requests a round.
///
/// ```
/// use blue_kubernetes::replicas::ShardingConfig;
/// let sharding = ShardingConfig::new("my-operator", "infra");
/// assert_eq!(sharding.shards, 32);
/// assert_eq!(sharding.max_members, 8);
/// assert_eq!(sharding.lease.lease_duration_ms, 15_000);
/// assert_eq!(sharding.lease.renew_deadline_ms, 10_000);
/// assert_eq!(sharding.lease.retry_period_ms, 2_500);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShardingConfig {
    /// Names, namespace, identity and timing of every Lease, as for leader
    /// election.
    pub lease: LeaderElectionConfig,
    /// How many shards the work is split into (default 32, 1 to 1024).
    /// Every replica must use the same number: changing it moves every
    /// resource, so change it with one replica running.
    pub shards: u32,
    /// How many membership slots exist, i.e. the most replicas that can
    /// take part (default 8, 1 to 64). Read in one list each round, so
    /// they cost nothing more; a client that cannot list reads every one
    /// each round.
    pub max_members: u32,
}

crate::package::setters::setters!(ShardingConfig {
    /// Sets [`lease`](ShardingConfig::lease).
    with_lease(lease: LeaderElectionConfig),
    /// Sets [`shards`](ShardingConfig::shards).
    with_shards(shards: u32),
    /// Sets [`max_members`](ShardingConfig::max_members).
    with_max_members(max_members: u32),
});

impl ShardingConfig {
    /// Sharding with Leases named after `lease_name` in `lease_namespace`,
    /// the defaults, and a fresh [`LeaderElectionConfig::unique_identity`].
    pub fn new(lease_name: impl Into<String>, lease_namespace: impl Into<String>) -> Self {
        Self {
            lease: LeaderElectionConfig::new(lease_name, lease_namespace)
                .with_retry_period_ms(2_500),
            shards: 32,
            max_members: 8,
        }
    }

    /// The shard of a resource whose state identity (what the package's
    /// `identity` callback returns) is `identity`: equal identities always
    /// share one. A resource whose identity cannot be computed is in
    /// shard 0.
    ///
    /// ```
    /// let sharding = blue_kubernetes::replicas::ShardingConfig::new("op", "infra");
    /// let id = [Some("db".to_string()), Some("main".to_string())];
    /// assert!(sharding.shard_of(&id) < sharding.shards);
    /// assert_eq!(sharding.shard_of(&id), sharding.shard_of(&id.clone()));
    /// ```
    pub fn shard_of(&self, identity: &[Option<String>]) -> u32 {
        super::shard_of(Some(identity), self.shards)
    }

    /// The name of the Lease of shard `shard` (`<lease_name>-shard-<shard>`).
    pub fn shard_lease_name(&self, shard: u32) -> String {
        self.shard_lease(shard).lease_name
    }

    /// The Lease of membership slot `slot`.
    pub(crate) fn member_lease(&self, slot: u32) -> LeaderElectionConfig {
        let mut lease = self.lease.clone();
        lease.lease_name = format!("{}-member-{slot}", self.lease.lease_name);
        lease
    }

    /// The Lease of shard `shard`.
    pub(crate) fn shard_lease(&self, shard: u32) -> LeaderElectionConfig {
        let mut lease = self.lease.clone();
        lease.lease_name = format!("{}-shard-{shard}", self.lease.lease_name);
        lease
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        let invalid = |field, reason| Err(Error::InvalidConfig { field, reason });
        if !(1..=1024).contains(&self.shards) {
            return invalid("sharding.shards", "must be 1 to 1024");
        }
        if !(1..=64).contains(&self.max_members) {
            return invalid("sharding.max_members", "must be 1 to 64");
        }
        // The longest names derived must be valid Lease names too.
        let longest = [
            self.member_lease(self.max_members - 1),
            self.shard_lease(self.shards - 1),
        ];
        for lease in longest {
            lease.validate().map_err(|e| match e {
                Error::InvalidConfig { field, reason } => Error::InvalidConfig {
                    field: sharding_field(field),
                    reason,
                },
                other => other,
            })?;
        }
        Ok(())
    }
}

/// `leader_election.x` as `sharding.lease.x`, so the error names the field
/// that was set.
fn sharding_field(field: &'static str) -> &'static str {
    match field {
        "leader_election.lease_name" => "sharding.lease.lease_name",
        "leader_election.lease_namespace" => "sharding.lease.lease_namespace",
        "leader_election.identity" => "sharding.lease.identity",
        "leader_election.retry_period_ms" => "sharding.lease.retry_period_ms",
        "leader_election.renew_deadline_ms" => "sharding.lease.renew_deadline_ms",
        "leader_election.lease_duration_ms" => "sharding.lease.lease_duration_ms",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(s: &ShardingConfig) -> &'static str {
        match s.validate() {
            Err(Error::InvalidConfig { field, .. }) => field,
            other => panic!("expected invalid config, got {other:?}"),
        }
    }

    #[test]
    fn defaults_are_valid() {
        ShardingConfig::new("op.example.com", "infra")
            .validate()
            .unwrap();
    }

    #[test]
    fn invalid_settings_name_their_sharding_field() {
        let ok = ShardingConfig::new("op", "infra");
        assert_eq!(field_of(&ok.clone().with_shards(0)), "sharding.shards");
        assert_eq!(
            field_of(&ok.clone().with_max_members(65)),
            "sharding.max_members"
        );
        let mut s = ok.clone();
        s.lease.retry_period_ms = 0;
        assert_eq!(field_of(&s), "sharding.lease.retry_period_ms");
        let mut s = ok;
        s.lease.lease_name = "x".repeat(250);
        assert_eq!(field_of(&s), "sharding.lease.lease_name");
    }
}
