//! The shards as the runtime sees them: per shard, the gate its Lease
//! moves (reused from leader election), whether it is being given up, and
//! how many passes run under it.
//!
//! Admission and the drain check take one lock per shard, so once a shard
//! is marked draining and found idle no pass can start under it: the
//! release that follows can never overtake a running callback.

use crate::leader::Gate;
use crate::replicas::FencingToken;
use crate::telemetry::{Metrics, ShardMetrics};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

#[derive(Debug, Default)]
struct State {
    draining: bool,
    running: usize,
}

#[derive(Debug)]
struct Slot {
    gate: Arc<Gate>,
    state: Mutex<State>,
}

/// Every shard's gate and drain state, shared by the passes and the
/// sharding task.
#[derive(Debug)]
pub(crate) struct ShardTable {
    slots: Vec<Slot>,
    /// Woken when the last pass of a draining shard ends.
    pub(crate) drained: Notify,
    pub(crate) metrics: ShardMetrics,
}

/// One pass admitted under a shard; dropping it ends the pass's claim.
#[derive(Debug)]
pub(crate) struct Permit {
    table: Arc<ShardTable>,
    shard: u32,
    /// The shard Lease's gate: the pass's writes are fenced by it.
    pub(crate) gate: Arc<Gate>,
    /// The fencing token of the shard Lease's ownership the pass was
    /// admitted under.
    pub(crate) token: Option<FencingToken>,
}

impl ShardTable {
    pub(crate) fn new(shards: u32, metrics: &Metrics) -> Self {
        let metrics = ShardMetrics::registered(metrics);
        let slots = (0..shards)
            .map(|_| Slot {
                gate: Arc::new(Gate::counting_into(metrics.fenced.clone())),
                state: Mutex::default(),
            })
            .collect();
        Self {
            slots,
            drained: Notify::new(),
            metrics,
        }
    }

    pub(crate) fn shards(&self) -> u32 {
        self.slots.len() as u32
    }

    pub(crate) fn gate(&self, shard: u32) -> &Arc<Gate> {
        &self.slots[shard as usize].gate
    }

    fn state(&self, shard: u32) -> MutexGuard<'_, State> {
        let slot = &self.slots[shard as usize];
        slot.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A pass under `shard` may start at `now_ms`: the Lease is held within
    /// its renew deadline and the shard is not being given up. `None`
    /// (counted as refused) otherwise.
    pub(crate) fn admit(self: &Arc<Self>, shard: u32, now_ms: u64) -> Option<Permit> {
        let gate = self.gate(shard).clone();
        let mut state = self.state(shard);
        if state.draining || !gate.may_dispatch(now_ms) {
            drop(state);
            self.metrics.refused.inc();
            return None;
        }
        state.running += 1;
        drop(state);
        Some(Permit {
            table: self.clone(),
            shard,
            token: gate.token(now_ms),
            gate,
        })
    }

    /// Whether `shard` may dispatch now (held, fresh, not draining).
    pub(crate) fn dispatching(&self, shard: u32, now_ms: u64) -> bool {
        !self.state(shard).draining && self.gate(shard).may_dispatch(now_ms)
    }

    /// Marks `shard` as being given up (or kept, `false`); returns whether
    /// it was draining before.
    pub(crate) fn set_draining(&self, shard: u32, draining: bool) -> bool {
        std::mem::replace(&mut self.state(shard).draining, draining)
    }

    /// Whether no pass runs under `shard` (checked under its lock: with
    /// draining set, none can start after a `true`).
    pub(crate) fn idle(&self, shard: u32) -> bool {
        self.state(shard).running == 0
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut state = self.table.state(self.shard);
        state.running -= 1;
        let drained = state.draining && state.running == 0;
        drop(state);
        if drained {
            self.table.drained.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draining_shard_admits_nothing_and_reports_idle_once_its_passes_end() {
        let table = Arc::new(ShardTable::new(2, &Metrics::new()));
        assert!(table.admit(1, 0).is_none(), "no lease, no pass");
        table.gate(1).renewed(0, 10_000, 15_000);
        let permit = table.admit(1, 5).expect("held lease admits");
        assert_eq!(permit.token, None, "no token was won");
        table.set_draining(1, true);
        assert!(table.admit(1, 6).is_none());
        assert!(!table.idle(1));
        drop(permit);
        assert!(table.idle(1));
        assert_eq!(table.metrics.refused.get(), 2);
    }
}
