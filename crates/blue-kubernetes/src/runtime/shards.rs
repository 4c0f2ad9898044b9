//! Sharding inside a running runtime: the sharding task next to it.
//!
//! A pass that finds its shard not held here ends as `NotOwned` and its
//! version is held, like a pass that found nothing to do: no retries spin
//! on a resource another replica handles. The book parks it under its
//! shard, and when this replica gains that shard the hold is dropped and
//! the due rules decide again, so nothing waits for a newer version.

use super::Shared;
use crate::sharding::task::{self, Sharder};
use crate::Error;
use std::sync::Arc;
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::JoinHandle;

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
            super::dispatch::shard_gained(&shared, shard);
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
