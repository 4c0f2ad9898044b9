//! The runtime's side of leader election: the elector task, the fenced
//! client the reconciles write through, and the gate the poller and
//! workers check.

use super::Stats;
use crate::leader::{self, FencedClient, Gate, LeaseElector};
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

/// Starts the elector when `controller` is configured for it, and returns
/// the controller the runtime must use: its client is fenced by the gate.
pub(super) fn begin(
    controller: Controller,
    handle: &Handle,
) -> Result<(Controller, Option<Election>), Error> {
    let Some(settings) = controller.config.leader_election.clone() else {
        return Ok((controller, None));
    };
    let elector = LeaseElector::new(settings)?;
    let gate = elector.gate.clone();
    let mut config = (*controller.config).clone();
    let raw = config.client.clone();
    config.client = Arc::new(FencedClient {
        inner: raw.clone(),
        gate: gate.clone(),
        now: config.now.clone(),
    });
    let (stop, stopped) = watch::channel(false);
    let task = handle.spawn(leader::run(elector, raw, config.now.clone(), stopped));
    let fenced = Controller {
        config: Arc::new(config),
        telemetry: controller.telemetry.clone(),
    };
    Ok((fenced, Some(Election { gate, stop, task })))
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
        stats.fenced_writes = self.gate.fenced_writes.load(Ordering::Relaxed);
    }
}
