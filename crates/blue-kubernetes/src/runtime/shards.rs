//! Sharding inside a running runtime: the sharding task, and the
//! resources set aside because another replica holds their shard.
//!
//! A pass that finds its shard not held here ends as `NotOwned` and its
//! version is held, like a pass that found nothing to do: no retries spin
//! on a resource another replica handles. It is remembered under its
//! shard, and when this replica gains that shard the hold is dropped and
//! the due rules decide again, so nothing waits for a newer version.

use super::dispatch::{self, book};
use super::key::Key;
use super::Shared;
use crate::sharding::task::{self, Sharder};
use crate::Error;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Resources whose last pass found their shard held elsewhere, by shard.
pub(super) type Parked = Mutex<HashMap<u32, HashSet<Key>>>;

/// A running sharding task.
pub(super) struct Sharding {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// Starts the sharding task when the controller is configured for it.
pub(super) fn begin(shared: &Arc<Shared>, handle: &Handle) -> Result<Option<Sharding>, Error> {
    let controller = &shared.controller;
    let (Some(settings), Some(table)) = (&controller.config.sharding, &controller.shards) else {
        return Ok(None);
    };
    let weak = Arc::downgrade(shared);
    let on_gained: task::OnGained = Arc::new(move |shard| {
        if let Some(shared) = weak.upgrade() {
            unpark(&shared, shard);
        }
    });
    let sharder = Sharder::new(
        settings.clone(),
        table.clone(),
        controller.config.client.clone(),
        controller.config.now.clone(),
        on_gained,
    )?;
    let (stop, stopped) = watch::channel(false);
    let task = handle.spawn(task::run(sharder, stopped));
    Ok(Some(Sharding { stop, task }))
}

impl Sharding {
    /// Gives every shard and the membership slot up; call once nothing
    /// runs any more.
    pub(super) async fn end(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

fn parked(shared: &Shared) -> std::sync::MutexGuard<'_, HashMap<u32, HashSet<Key>>> {
    shared.parked.lock().unwrap_or_else(|e| e.into_inner())
}

/// A pass over `key` found `shard` not held here. Checked again after
/// remembering it: a shard gained meanwhile would not have seen it.
pub(super) fn park(shared: &Shared, key: &Key, shard: u32) {
    parked(shared).entry(shard).or_default().insert(key.clone());
    let now = shared.controller.now();
    if shared
        .controller
        .shards
        .as_ref()
        .is_some_and(|t| t.dispatching(shard, now))
    {
        unpark(shared, shard);
    }
}

/// `shard` is dispatched here now: what was set aside for it is decided
/// again.
pub(super) fn unpark(shared: &Shared, shard: u32) {
    let keys = parked(shared).remove(&shard).unwrap_or_default();
    for key in keys {
        book(shared).cache.unhold(&key);
        dispatch::redecide(shared, key);
    }
}

/// The shards this replica dispatches now, in order.
pub(super) fn owned(shared: &Shared) -> Vec<u32> {
    let Some(table) = &shared.controller.shards else {
        return Vec::new();
    };
    let now = shared.controller.now();
    (0..table.shards())
        .filter(|&s| table.dispatching(s, now))
        .collect()
}
