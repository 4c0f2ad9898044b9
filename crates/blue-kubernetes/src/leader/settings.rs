//! Leader-election settings and their validation.

use crate::Error;
use std::hash::{BuildHasher, Hasher};

/// Opt-in leader election on a `coordination.k8s.io/v1` Lease: only the
/// process holding the Lease lists, schedules and reconciles.
///
/// The defaults match controller-runtime: a 15 s lease, a 10 s renew
/// deadline and a 2 s retry period. Set [`Config::leader_election`](crate::Config::leader_election)
/// to use it; without it the controller behaves as a single process.
///
/// Besides the Lease's spec, the elector keeps the last
/// [`FencingToken`](crate::replicas::FencingToken) it issued in the annotation
/// `blue.kubernetes/fencing-token`, written in the same guarded write that
/// acquires the Lease; the Lease's `leaseTransitions` is kept for the tools
/// that show it, and the token does not rest on it.
///
/// ```
/// use blue_kubernetes::replicas::LeaderElectionConfig;
/// let election = LeaderElectionConfig::new("my-operator", "infra");
/// assert_eq!(election.lease_duration_ms, 15_000);
/// assert_eq!(election.renew_deadline_ms, 10_000);
/// assert_eq!(election.retry_period_ms, 2_000);
/// assert!(!election.identity.is_empty());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaderElectionConfig {
    /// Name of the Lease (a DNS-1123 subdomain).
    pub lease_name: String,
    /// Namespace of the Lease (a DNS-1123 label).
    pub lease_namespace: String,
    /// This process's holder identity; unique per process (default: the
    /// host name plus a random suffix, so a restarted pod is a new holder).
    pub identity: String,
    /// How long others wait, from the last change they observed, before
    /// taking over an unrenewed lease (default 15000, > `renew_deadline_ms`).
    pub lease_duration_ms: u64,
    /// How long the leader keeps dispatching without a successful renewal
    /// (default 10000, > `retry_period_ms`).
    pub renew_deadline_ms: u64,
    /// How often the leader renews and followers try to acquire
    /// (default 2000, > 0).
    pub retry_period_ms: u64,
}

crate::package::setters::setters!(LeaderElectionConfig {
    /// Sets [`identity`](LeaderElectionConfig::identity).
    with_identity(identity: String),
    /// Sets [`lease_duration_ms`](LeaderElectionConfig::lease_duration_ms).
    with_lease_duration_ms(lease_duration_ms: u64),
    /// Sets [`renew_deadline_ms`](LeaderElectionConfig::renew_deadline_ms).
    with_renew_deadline_ms(renew_deadline_ms: u64),
    /// Sets [`retry_period_ms`](LeaderElectionConfig::retry_period_ms).
    with_retry_period_ms(retry_period_ms: u64),
});

impl LeaderElectionConfig {
    /// Settings for Lease `lease_namespace/lease_name` with the defaults and
    /// a fresh [`unique_identity`](Self::unique_identity).
    pub fn new(lease_name: impl Into<String>, lease_namespace: impl Into<String>) -> Self {
        Self {
            lease_name: lease_name.into(),
            lease_namespace: lease_namespace.into(),
            identity: Self::unique_identity(),
            lease_duration_ms: 15_000,
            renew_deadline_ms: 10_000,
            retry_period_ms: 2_000,
        }
    }

    /// `<host name>-<8 random hex digits>`: the pod name in Kubernetes,
    /// made unique so two processes on one host never share an identity.
    ///
    /// ```
    /// let a = blue_kubernetes::replicas::LeaderElectionConfig::unique_identity();
    /// let b = blue_kubernetes::replicas::LeaderElectionConfig::unique_identity();
    /// assert_ne!(a, b);
    /// ```
    pub fn unique_identity() -> String {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "blue-kubernetes".to_owned());
        // RandomState is seeded from the OS per instance: random enough to
        // tell processes apart without another dependency.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        format!("{host}-{:08x}", hasher.finish() as u32)
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        let invalid = |field, reason| Err(Error::InvalidConfig { field, reason });
        if !is_dns_subdomain(&self.lease_name) {
            return invalid("leader_election.lease_name", "must be a DNS-1123 subdomain");
        }
        if !crate::domain::names::is_dns_label(&self.lease_namespace) {
            return invalid(
                "leader_election.lease_namespace",
                "must be a DNS-1123 label",
            );
        }
        if self.identity.is_empty()
            || self.identity.len() > 253
            || self
                .identity
                .contains(|c: char| c.is_whitespace() || c.is_control())
        {
            return invalid(
                "leader_election.identity",
                "must be 1 to 253 characters without whitespace",
            );
        }
        if self.retry_period_ms == 0 {
            return invalid(
                "leader_election.retry_period_ms",
                "must be greater than zero",
            );
        }
        if self.renew_deadline_ms <= self.retry_period_ms {
            return invalid(
                "leader_election.renew_deadline_ms",
                "must be greater than retry_period_ms",
            );
        }
        if self.lease_duration_ms <= self.renew_deadline_ms {
            return invalid(
                "leader_election.lease_duration_ms",
                "must be greater than renew_deadline_ms",
            );
        }
        if self.lease_duration_ms > i32::MAX as u64 * 1000 {
            return invalid("leader_election.lease_duration_ms", "is too large");
        }
        Ok(())
    }

    /// The duration recorded in the Lease, in whole seconds rounded up.
    pub(crate) fn lease_duration_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration_ms.div_ceil(1000)).unwrap_or(i32::MAX)
    }
}

fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(crate::domain::names::is_dns_label)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(e: LeaderElectionConfig) -> &'static str {
        match e.validate() {
            Err(Error::InvalidConfig { field, .. }) => field,
            other => panic!("expected invalid config, got {other:?}"),
        }
    }

    #[test]
    fn defaults_are_valid() {
        LeaderElectionConfig::new("op.example.com", "infra")
            .validate()
            .unwrap();
    }

    #[test]
    fn each_invalid_setting_names_its_field() {
        let ok = LeaderElectionConfig::new("op", "infra");
        type Breakage = fn(&mut LeaderElectionConfig);
        let cases: [(&str, Breakage); 7] = [
            ("leader_election.lease_name", |e| {
                e.lease_name = "Op_1".into()
            }),
            ("leader_election.lease_namespace", |e| {
                e.lease_namespace = "a.b".into()
            }),
            ("leader_election.identity", |e| e.identity = "a b".into()),
            ("leader_election.retry_period_ms", |e| e.retry_period_ms = 0),
            ("leader_election.renew_deadline_ms", |e| {
                e.renew_deadline_ms = e.retry_period_ms
            }),
            ("leader_election.lease_duration_ms", |e| {
                e.lease_duration_ms = e.renew_deadline_ms
            }),
            ("leader_election.lease_name", |e| e.lease_name.clear()),
        ];
        for (field, break_it) in cases {
            let mut e = ok.clone();
            break_it(&mut e);
            assert_eq!(field_of(e), field);
        }
    }

    #[test]
    fn the_recorded_duration_rounds_up_to_whole_seconds() {
        let mut e = LeaderElectionConfig::new("op", "infra");
        e.lease_duration_ms = 2_500;
        assert_eq!(e.lease_duration_seconds(), 3);
    }
}
