//! Optional leader election on a `coordination.k8s.io/v1` Lease: the
//! settings, the elector state machine, the gate the runtime checks, the
//! write fence, and the task that runs the elector next to the runtime.

mod elector;
mod fence;
mod gate;
mod settings;
mod token;

pub(crate) use elector::Takeover;
pub use elector::{ElectionStep, LeaseElector};
pub use settings::LeaderElectionConfig;
pub use token::FencingToken;

pub(crate) use fence::Fence;
pub(crate) use gate::Gate;

use crate::clock::Clock;
use blue_kubernetes_client::Client;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Runs `elector` every retry period (a follower also right at the
/// holder's expiry) until `stop` fires, then releases the lease. The runtime fires `stop` only after its workers have drained, so
/// the lease is held (and renewed) while in-flight callbacks finish.
pub(crate) async fn run(
    mut elector: LeaseElector,
    client: Arc<dyn Client>,
    now: Clock,
    mut stop: watch::Receiver<bool>,
) {
    let lease = format!(
        "{}/{}",
        elector.settings().lease_namespace,
        elector.settings().lease_name
    );
    let mut leading = false;
    let mut failing = false;
    loop {
        let step = elector.step(client.as_ref(), &now).await;
        match elector.last_failure() {
            Some(kind) if !failing => {
                tracing::warn!(%lease, %kind, "leader election: reading or writing the lease fails; retrying");
            }
            None if failing => {
                tracing::info!(%lease, "leader election: the lease is reachable again")
            }
            _ => {}
        }
        failing = elector.last_failure().is_some();
        let now_leading = elector.may_dispatch(now());
        if now_leading && !leading {
            Gate::count(&elector.gate.acquired);
            elector.gate.leading.set(1);
            tracing::info!(%lease, identity = %elector.settings().identity, "leadership acquired");
        } else if leading && !now_leading {
            Gate::count(&elector.gate.lost);
            elector.gate.leading.set(0);
            let why = match step {
                ElectionStep::Lost => "another holder has the lease",
                _ => "no renewal within the renew deadline",
            };
            tracing::warn!(%lease, why, "leadership lost: no new work; writes fenced once the lease expires");
        }
        leading = now_leading;
        let wait = Duration::from_millis(elector.next_attempt_in_ms(now()));
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.changed() => break,
        }
        if *stop.borrow() {
            break;
        }
    }
    match elector.release(client.as_ref()).await {
        Ok(true) => tracing::info!(%lease, "leadership released"),
        Ok(false) => {}
        Err(e) => tracing::warn!(%lease, error = %e, "releasing the lease failed"),
    }
}
