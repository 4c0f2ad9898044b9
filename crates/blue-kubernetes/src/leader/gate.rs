//! The leadership gate the poller, the workers and the write fence check.
//!
//! It holds deadlines on the controller's clock rather than a flag, so the
//! moment a deadline passes counts even while the elector is stuck in a
//! slow request: no renewal within the renew deadline stops dispatching,
//! and the lease's expiry stops writes.

use super::FencingToken;
use crate::telemetry::Tally;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

#[derive(Debug, Default)]
pub(crate) struct Gate {
    /// Dispatch only before this instant (ms); 0 when not leading.
    dispatch_until: AtomicU64,
    /// Status and finalizer writes only before this instant (ms).
    write_until: AtomicU64,
    /// Counts the times the lease was held anew: after a revoke or a
    /// lapse. A pass's fence is the term it started in; a later term is
    /// another hold, with possibly another owner in between.
    term: AtomicU64,
    pub(crate) acquired: AtomicU64,
    pub(crate) lost: AtomicU64,
    /// Exported as `leader_election_master_status` (controller-runtime's
    /// name): 1 while this process leads, else 0.
    pub(crate) leading: Gauge,
    /// Status and finalizer writes refused; exported as
    /// `blue_leader_election_fenced_writes_total` and read back into
    /// `Stats`, so the fact is counted once.
    pub(crate) fenced_writes: Tally,
    /// The token of this process's ownership of the Lease, set when it
    /// wins it: the fencing token callbacks receive. A lock, as the token
    /// is two words that must be read together.
    token: Mutex<Option<FencingToken>>,
}

impl Gate {
    /// A gate whose refused writes count into `fenced` (shared by the
    /// shards' gates).
    pub(crate) fn counting_into(fenced: prometheus_client::metrics::counter::Counter) -> Self {
        Self {
            fenced_writes: Tally::exporting(fenced),
            ..Self::default()
        }
    }

    /// A successful acquire or renew whose request started at `started_ms`:
    /// nobody else can take over before `started_ms + lease_duration`.
    pub(crate) fn renewed(&self, started_ms: u64, renew_deadline_ms: u64, lease_duration_ms: u64) {
        let before = self.write_until.swap(
            started_ms.saturating_add(lease_duration_ms),
            Ordering::SeqCst,
        );
        // A hold that lapsed before this renewal began is a new term:
        // someone else may have held the lease in the gap.
        if before <= started_ms {
            self.term.fetch_add(1, Ordering::SeqCst);
        }
        self.dispatch_until.store(
            started_ms.saturating_add(renew_deadline_ms),
            Ordering::SeqCst,
        );
    }

    /// The lease is provably someone else's (a lost conflict, another
    /// holder) or was released: stop dispatching and writing at once.
    pub(crate) fn revoke(&self) {
        self.dispatch_until.store(0, Ordering::SeqCst);
        self.write_until.store(0, Ordering::SeqCst);
        self.term.fetch_add(1, Ordering::SeqCst);
    }

    /// The current term (see the field); compare, never interpret.
    pub(crate) fn term(&self) -> u64 {
        self.term.load(Ordering::SeqCst)
    }

    pub(crate) fn may_dispatch(&self, now_ms: u64) -> bool {
        now_ms < self.dispatch_until.load(Ordering::SeqCst)
    }

    /// The instant (ms) writes stop; 0 when not leading.
    pub(crate) fn write_deadline(&self) -> u64 {
        self.write_until.load(Ordering::SeqCst)
    }

    pub(crate) fn may_write(&self, now_ms: u64) -> bool {
        now_ms < self.write_until.load(Ordering::SeqCst)
    }

    /// The fencing token while writes are allowed at `now_ms`.
    pub(crate) fn token(&self, now_ms: u64) -> Option<FencingToken> {
        let token = *self.token.lock().unwrap_or_else(|e| e.into_inner());
        token.filter(|_| self.may_write(now_ms))
    }

    /// The token of the ownership just won (or kept).
    pub(crate) fn set_token(&self, token: FencingToken) {
        *self.token.lock().unwrap_or_else(|e| e.into_inner()) = Some(token);
    }

    pub(crate) fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl Gate {
    /// Leadership and fencing on `/metrics`, beside the log lines and
    /// Stats.
    pub(crate) fn export(&self, metrics: &crate::telemetry::Metrics, lease_name: &str) {
        let status = Family::<[(&'static str, String); 1], Gauge, _>::new_with_constructor(
            SharedGauge(self.leading.clone()),
        );
        // Created now, so the series reads 0 before the first acquisition.
        drop(status.get_or_create(&[("name", lease_name.to_owned())]));
        metrics.register(
            "leader_election_master_status",
            "1 while this process holds the leader-election lease, else 0",
            status,
        );
        metrics.register(
            "blue_leader_election_fenced_writes",
            "status and finalizer writes refused because the lease could not be proven held",
            self.fenced_writes.exported(),
        );
    }
}

/// Hands the family the gate's own gauge, so the elector sets one value.
#[derive(Clone, Debug)]
struct SharedGauge(Gauge);

impl MetricConstructor<Gauge> for SharedGauge {
    fn new_metric(&self) -> Gauge {
        self.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_stops_at_the_renew_deadline_and_writes_at_the_lease_expiry() {
        let gate = Gate::default();
        assert!(!gate.may_dispatch(0) && !gate.may_write(0));
        gate.renewed(1_000, 10_000, 15_000);
        assert!(gate.may_dispatch(10_999) && gate.may_write(10_999));
        assert!(!gate.may_dispatch(11_000) && gate.may_write(11_000));
        assert!(gate.may_write(15_999) && !gate.may_write(16_000));
        gate.revoke();
        assert!(!gate.may_dispatch(1_000) && !gate.may_write(1_000));
    }

    #[test]
    fn a_new_term_starts_after_a_revoke_or_a_lapse_but_not_with_a_renewal() {
        let gate = Gate::default();
        gate.renewed(1_000, 10_000, 15_000);
        let first = gate.term();
        gate.renewed(5_000, 10_000, 15_000);
        assert_eq!(gate.term(), first, "renewed in time");
        gate.renewed(20_000, 10_000, 15_000);
        assert_ne!(gate.term(), first, "lapsed at 20,000 before this renewal");
        let second = gate.term();
        gate.revoke();
        assert_ne!(gate.term(), second);
    }
}
