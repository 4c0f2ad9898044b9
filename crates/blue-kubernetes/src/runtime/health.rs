//! Liveness and readiness of a running runtime, for `/healthz` and `/readyz`.

use crate::Clock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Poll cycles that may pass without progress before the runtime is not live.
pub const STALE_POLLS: u64 = 3;

/// Whether the runtime is alive and ready, judged on the controller's clock.
///
/// - live: the poller completed a cycle (or, on a standby replica without
///   the leader-election lease, passed a tick) within the last
///   [`STALE_POLLS`] poll intervals, whatever the lists returned;
/// - ready: every package type has been listed successfully at least once,
///   or this replica is a standby (so a rolling update can proceed).
pub struct Health {
    clock: Clock,
    poll_ms: u64,
    last_progress_ms: AtomicU64,
    listed: Vec<AtomicBool>,
    standby: AtomicBool,
}

impl Health {
    pub(crate) fn new(clock: Clock, poll_ms: u64, types: usize) -> Self {
        let now = clock();
        Self {
            clock,
            poll_ms,
            last_progress_ms: AtomicU64::new(now),
            listed: (0..types).map(|_| AtomicBool::new(false)).collect(),
            standby: AtomicBool::new(false),
        }
    }

    pub(crate) fn poll_completed(&self) {
        self.standby.store(false, Ordering::Relaxed);
        self.last_progress_ms
            .store((self.clock)(), Ordering::Relaxed);
    }

    /// A tick passed without the lease: alive, waiting to lead.
    pub(crate) fn standing_by(&self) {
        self.standby.store(true, Ordering::Relaxed);
        self.last_progress_ms
            .store((self.clock)(), Ordering::Relaxed);
    }

    pub(crate) fn listed(&self, index: usize) {
        if let Some(flag) = self.listed.get(index) {
            flag.store(true, Ordering::Relaxed);
        }
    }

    /// The poller made progress within the last [`STALE_POLLS`] intervals.
    pub fn is_live(&self) -> bool {
        let since = (self.clock)().saturating_sub(self.last_progress_ms.load(Ordering::Relaxed));
        since <= STALE_POLLS.saturating_mul(self.poll_ms)
    }

    /// Every package type was listed successfully at least once, or this
    /// replica is standing by for the leader-election lease.
    pub fn is_ready(&self) -> bool {
        self.standby.load(Ordering::Relaxed)
            || self.listed.iter().all(|f| f.load(Ordering::Relaxed))
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
