//! Leader election inside a running runtime: the elector task next to it,
//! and the gate the reflectors and workers check (the fence on writes is
//! part of the controller's client stack, see `client_stack`).

use super::Stats;
use crate::leader::{self, Gate, LeaseElector};
use crate::{Controller, Error};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A running elector.
pub(super) struct Election {
    pub(super) gate: Arc<Gate>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// Starts the elector when `controller` is configured for it.
pub(super) fn begin(controller: &Controller, handle: &Handle) -> Result<Option<Election>, Error> {
    let (Some(settings), Some(gate)) = (&controller.config.leader_election, &controller.gate)
    else {
        return Ok(None);
    };
    let mut elector = LeaseElector::new(settings.clone())?;
    elector.gate = gate.clone();
    gate.export(controller.metrics(), &settings.lease_name);
    let (stop, stopped) = watch::channel(false);
    let client = controller.config.client.clone();
    let now = controller.config.now.clone();
    let task = handle.spawn(leader::run(elector, client, now, stopped));
    Ok(Some(Election {
        gate: gate.clone(),
        stop,
        task,
    }))
}

impl Election {
    /// Stops renewing and releases the lease; call once nothing runs any more.
    pub(super) async fn end(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }

    pub(super) fn fill(&self, stats: &mut Stats) {
        stats.leadership_acquired = self.gate.acquired.load(Ordering::Relaxed);
        stats.leadership_lost = self.gate.lost.load(Ordering::Relaxed);
        stats.fenced_writes = self.gate.fenced_writes.get();
    }
}
