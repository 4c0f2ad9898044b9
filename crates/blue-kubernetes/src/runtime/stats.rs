//! Counters observable on a running runtime. Numbers only, never error text.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// A snapshot of the runtime's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Lists that ended, successfully or not (every page of one type in one
    /// namespace scope):
    /// each poll without watches, the first list and each resync with them.
    pub polls: u64,
    /// Watch requests the server accepted.
    pub watches: u64,
    /// Watch events received (bookmarks included).
    pub watch_events: u64,
    /// Times a reflector fell back from watching to periodic lists because
    /// its watches kept failing.
    pub watch_fallbacks: u64,
    /// Failed lists, per resource type (`plural.group`).
    pub transport_failures: BTreeMap<String, u64>,
    /// Reconciles that ended with a transport error or a panic of the pass
    /// (not a failed callback: see `failed` and `callback_failures`).
    pub reconcile_errors: u64,
    /// Reconciles that wrote phase Failed (a callback failed, or the
    /// infrastructure was not ready).
    pub failed: u64,
    /// Callback calls that returned an error or panicked.
    pub callback_failures: u64,
    /// Reconciles that found the configuration invalid.
    pub invalid: u64,
    /// Reconciles that ran to a report.
    pub reconciles: u64,
    /// Reconciles that found the identity lock held.
    pub busy: u64,
    /// Reconciles stopped by a write conflict (fenced writes included).
    pub conflicts: u64,
    /// Times this process became leader (leader election only).
    pub leadership_acquired: u64,
    /// Times it stopped being leader (renew deadline passed, or another
    /// holder took the lease).
    pub leadership_lost: u64,
    /// Status and finalizer writes refused because the lease could no
    /// longer be proven held.
    pub fenced_writes: u64,
}

#[derive(Default)]
pub(crate) struct Counters(Mutex<Stats>);

impl Counters {
    pub(crate) fn update(&self, f: impl FnOnce(&mut Stats)) {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()));
    }

    pub(crate) fn snapshot(&self) -> Stats {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
