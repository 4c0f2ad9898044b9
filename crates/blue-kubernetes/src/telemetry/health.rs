//! Liveness and readiness of a running runtime, for `/healthz` and `/readyz`.

use crate::clock::Clock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Poll intervals a reflector may go without progress before the runtime
/// is not live.
pub(crate) const STALE_POLLS: u64 = 3;

/// Whether the runtime is alive and ready, judged on the controller's clock.
///
/// - live: every reflector made progress within the last 3 (`STALE_POLLS`)
///   poll intervals: a list completed (whatever it returned), a watch
///   delivered an event or is open and waiting (checked every interval),
///   or it waited out a backoff or, on a standby replica without the
///   leader-election lease, a tick. A list or watch request that hangs
///   makes it not live;
/// - ready: every reflector has listed successfully at least once, or this
///   replica is a standby (so a rolling update can proceed); and the
///   admission webhook, where one runs, serves.
pub struct Health {
    clock: Clock,
    poll_ms: u64,
    progress_ms: Vec<AtomicU64>,
    listed: Vec<AtomicBool>,
    standby: AtomicBool,
    /// Other parts of the process that must be ready too (the admission
    /// webhook's server while it serves).
    gates: std::sync::Mutex<Vec<std::sync::Arc<AtomicBool>>>,
}

impl Health {
    pub(crate) fn new(clock: Clock, poll_ms: u64, reflectors: usize) -> Self {
        let now = clock();
        Self {
            clock,
            poll_ms,
            progress_ms: (0..reflectors).map(|_| AtomicU64::new(now)).collect(),
            listed: (0..reflectors).map(|_| AtomicBool::new(false)).collect(),
            standby: AtomicBool::new(false),
            gates: std::sync::Mutex::default(),
        }
    }

    /// Reflector `index` made progress.
    pub(crate) fn progressed(&self, index: usize) {
        if let Some(at) = self.progress_ms.get(index) {
            at.store((self.clock)(), Ordering::Relaxed);
        }
    }

    /// A tick passed without the lease: alive, waiting to lead.
    pub(crate) fn standing_by(&self, index: usize) {
        self.standby.store(true, Ordering::Relaxed);
        self.progressed(index);
    }

    /// Reflector `index` listed successfully, so this process leads (or
    /// acts alone).
    pub(crate) fn listed(&self, index: usize) {
        self.standby.store(false, Ordering::Relaxed);
        self.progressed(index);
        if let Some(flag) = self.listed.get(index) {
            flag.store(true, Ordering::Relaxed);
        }
    }

    /// Every reflector made progress within the last 3 (`STALE_POLLS`)
    /// intervals.
    pub fn is_live(&self) -> bool {
        let now = (self.clock)();
        let stale = STALE_POLLS.saturating_mul(self.poll_ms);
        self.progress_ms
            .iter()
            .all(|at| now.saturating_sub(at.load(Ordering::Relaxed)) <= stale)
    }

    /// Every reflector listed successfully at least once, or this replica
    /// is standing by for the leader-election lease.
    pub fn is_ready(&self) -> bool {
        let gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        gates.iter().all(|g| g.load(Ordering::Relaxed))
            && (self.standby.load(Ordering::Relaxed)
                || self.listed.iter().all(|f| f.load(Ordering::Relaxed)))
    }

    /// Readiness also waits for `ready` (the webhook server serving).
    #[cfg(feature = "webhook")]
    pub(crate) fn gate(&self, ready: std::sync::Arc<AtomicBool>) {
        let mut gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        gates.push(ready);
    }
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health")
            .field("live", &self.is_live())
            .field("ready", &self.is_ready())
            .finish()
    }
}

#[cfg(all(test, feature = "webhook"))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn readiness_waits_for_the_webhook_while_it_serves() {
        let health = Health::new(Arc::new(|| 0), 500, 1);
        health.listed(0);
        assert!(health.is_ready());
        let serving = Arc::new(AtomicBool::new(true));
        health.gate(serving.clone());
        assert!(health.is_ready());
        serving.store(false, Ordering::Relaxed);
        assert!(!health.is_ready());
    }
}
