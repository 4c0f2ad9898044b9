//! Fencing: a hook on the controller's client that refuses status and
//! finalizer writes once this process can no longer prove it holds the
//! lease: the leader-election Lease, or with sharding the Lease of the
//! shard the pass runs under.

use super::gate::Gate;
use crate::Clock;
use blue_kubernetes_client::{Call, Error, Hook, Method};
use std::sync::Arc;

/// Reads pass through: a fenced process may look, never write state. The
/// check runs before each write is sent; a write already on its way when
/// the lease expires still carries its resourceVersion, so it fails if the
/// new leader has written the object since.
///
/// Events and Leases pass too. Events are not state (SPEC: a deposed leader
/// "writes no more status or finalizers"), and the pass that meets a
/// refusal reports it as a `Fenced` Warning Event on the resource, which a
/// fenced Event writer could never deliver. The elector needs the Lease
/// calls to win the lease back.
///
/// With sharding there is no process-wide gate: a pass runs inside
/// [`fenced_by`] with its shard's gate, and its writes are checked against
/// that. Writes outside any pass (none today) pass unchecked.
pub(crate) struct Fence {
    pub(crate) gate: Option<Arc<Gate>>,
    pub(crate) now: Clock,
}

tokio::task_local! {
    /// The gate of the shard Lease the current pass runs under.
    static SHARD_GATE: Arc<Gate>;
}

/// Runs `pass` with its writes fenced by `gate` (its shard's), as leader
/// election fences every write by the one Lease. Task-local, so it covers
/// exactly the writes the pass's own task sends.
pub(crate) async fn fenced_by<F: std::future::Future>(gate: Arc<Gate>, pass: F) -> F::Output {
    SHARD_GATE.scope(gate, pass).await
}

#[async_trait::async_trait]
impl Hook for Fence {
    async fn before(&self, call: &Call<'_>) -> Result<(), Error> {
        let operation = match call {
            Call::UpdateStatus { .. } => "replace",
            Call::UpdateFinalizers { .. } => "patch",
            // The connection Secrets the controller keeps are state too.
            Call::Raw { request } if request.method != Method::Get => request.method.as_str(),
            _ => return Ok(()),
        };
        let Some(gate) = SHARD_GATE.try_with(Arc::clone).ok().or(self.gate.clone()) else {
            return Ok(());
        };
        if gate.may_write((self.now)()) {
            return Ok(());
        }
        gate.fenced_writes.inc();
        tracing::warn!(
            operation,
            "write refused: the lease (leader election or the shard's) is no longer provably held"
        );
        Err(Error::Fenced {
            operation: operation.to_owned(),
        })
    }
}
