//! Leader election inside a running runtime: the elector task and the
//! gate the poller and workers check (the fence on writes is part of the
//! controller's client stack, see `client_stack`).

use crate::leader::{self, Gate, LeaseElector};
use crate::runtime::Stats;
use crate::{Controller, Error};
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A running elector.
pub(crate) struct Election {
    pub(crate) gate: Arc<Gate>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// Starts the elector when `controller` is configured for it. Its writes
/// are fenced already: the controller's client stack checks the gate the
/// elector moves.
pub(crate) fn begin(controller: &Controller, handle: &Handle) -> Result<Option<Election>, Error> {
    let (Some(settings), Some(gate)) = (&controller.config.leader_election, &controller.gate)
    else {
        return Ok(None);
    };
    let mut elector = LeaseElector::new(settings.clone())?;
    elector.gate = gate.clone();
    export_metrics(controller, &settings.lease_name, gate);
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

/// Leadership and fencing on `/metrics`, beside the log lines and Stats.
fn export_metrics(controller: &Controller, lease_name: &str, gate: &Gate) {
    let metrics = controller.metrics();
    let status = Family::<[(&'static str, String); 1], Gauge, _>::new_with_constructor(
        SharedGauge(gate.leading.clone()),
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
        gate.fenced_writes.exported(),
    );
}

/// Hands the family the gate's own gauge, so the elector sets one value.
#[derive(Clone, Debug)]
struct SharedGauge(Gauge);

impl MetricConstructor<Gauge> for SharedGauge {
    fn new_metric(&self) -> Gauge {
        self.0.clone()
    }
}

impl Election {
    /// Stops renewing and releases the lease; call once nothing runs any more.
    pub(crate) async fn end(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }

    pub(crate) fn fill(&self, stats: &mut Stats) {
        stats.leadership_acquired = self.gate.acquired.load(Ordering::Relaxed);
        stats.leadership_lost = self.gate.lost.load(Ordering::Relaxed);
        stats.fenced_writes = self.gate.fenced_writes.get();
    }
}
