//! Fencing: a hook on a client that refuses writes once this process can
//! no longer prove it holds the lease: the leader-election Lease, or with
//! sharding the Lease of the shard a pass runs under.
//!
//! The fence a pass runs under is carried explicitly, in the client the
//! pass and its connection write through (see [`Fence::pass`]), never in
//! a task-local: a write from a task the package spawned, or from a
//! blocking callback on another thread, is checked like one the pass
//! makes itself.

use super::gate::Gate;
use crate::clock::Clock;
use blue_kubernetes_client::{Call, Client, Error, Hook, Layered, Method};
use std::sync::Arc;

/// Reads pass through: a fenced process may look, never write state. The
/// check runs before each write is sent, in memory (no request); a write
/// already on its way when the lease expires still carries its
/// resourceVersion, so it fails if the new owner has written the object
/// since.
///
/// Events and Leases pass too: the elector needs the Lease calls to win
/// the lease back, and Events are held back earlier, when a pass records
/// them (an Event queued while the fence held may still go out after it
/// was lost; the one Warning that reports a refused write is sent
/// regardless, or its users would never learn why status stopped moving).
#[derive(Clone)]
pub(crate) struct Fence {
    gate: Arc<Gate>,
    /// The term the fence was taken in; `None`: any term of the gate (the
    /// process-wide leader fence on the controller's own client).
    term: Option<u64>,
    now: Clock,
}

impl Fence {
    /// The process-wide fence of leader election: every write of the
    /// controller's client while the lease is held.
    pub(crate) fn leader(gate: Arc<Gate>, now: Clock) -> Self {
        Self {
            gate,
            term: None,
            now,
        }
    }

    /// The fence that holds now on `gate`, for one pass: its writes pass
    /// only while the lease is held in the term the pass started in, so a
    /// lease lost and won back does not reopen it.
    pub(crate) fn pass(gate: Arc<Gate>, now: Clock) -> Self {
        Self {
            term: Some(gate.term()),
            gate,
            now,
        }
    }

    /// `client` with its writes checked against this fence.
    pub(crate) fn around(self, client: Arc<dyn Client>) -> Arc<dyn Client> {
        Arc::new(Layered::new(client, self))
    }

    /// Whether writes may still be made under this fence.
    pub(crate) fn holds(&self) -> bool {
        self.term.is_none_or(|term| term == self.gate.term()) && self.gate.may_write((self.now)())
    }
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
        if self.holds() {
            return Ok(());
        }
        self.gate.fenced_writes.inc();
        tracing::warn!(
            operation,
            "write refused: the lease (leader election or the shard's) is no longer provably held"
        );
        Err(Error::Fenced {
            operation: operation.to_owned(),
        })
    }
}
