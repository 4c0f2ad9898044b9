//! The migration's own Lease: one migration at a time in the cluster,
//! whoever runs it (an operator replica with the runner's flag, or the
//! one-shot command as a Job), and every migration write fenced by it.

use super::error::MigrationError;
use crate::clock::Clock;
use crate::leader::{self, Fence, Gate, LeaseElector};
use crate::replicas::LeaderElectionConfig;
use blue_kubernetes_client::Client;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How often a candidate looks whether its elector won the Lease.
const LOOK_MS: u64 = 100;

/// The Lease, held: the elector renews it until [`Held::release`].
pub(crate) struct Held {
    gate: Arc<Gate>,
    fence: Fence,
    clock: Clock,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Held {
    /// Runs an elector for `settings` until it holds the Lease; `None`
    /// when `stop` fired first (the elector is stopped then).
    pub(crate) async fn acquire(
        client: Arc<dyn Client>,
        settings: &LeaderElectionConfig,
        clock: Clock,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<Option<Self>, MigrationError> {
        let elector = LeaseElector::new(settings.clone())
            .map_err(|e| MigrationError::Settings(e.to_string()))?;
        let gate = elector.gate.clone();
        let (stopper, stopped) = watch::channel(false);
        let task = tokio::spawn(leader::run(elector, client, clock.clone(), stopped));
        let mut held = Self {
            fence: Fence::pass(gate.clone(), clock.clone()),
            gate,
            clock,
            stop: stopper,
            task,
        };
        loop {
            if *stop.borrow() {
                held.release().await;
                return Ok(None);
            }
            if held.gate.may_dispatch((held.clock)()) {
                // The fence of this term: a Lease lost and won back does
                // not reopen it.
                held.fence = Fence::pass(held.gate.clone(), held.clock.clone());
                return Ok(Some(held));
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(LOOK_MS)) => {}
                _ = stop.changed() => {}
            }
        }
    }

    /// `client` with its writes refused once this hold cannot be proven.
    pub(crate) fn fenced(&self, client: Arc<dyn Client>) -> Arc<dyn Client> {
        self.fence.clone().around(client)
    }

    /// Whether to send another write: the Lease is held in the term it
    /// was won in, with time to spare (before the renew deadline, as for
    /// a leader's new work; the fence itself allows writes until the
    /// lease duration).
    pub(crate) fn may_write(&self) -> bool {
        self.fence.holds() && self.gate.may_dispatch((self.clock)())
    }

    /// Stops renewing and gives the Lease up, so another candidate (a
    /// replica, the Job) takes over at its next attempt.
    pub(crate) async fn release(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}
