//! Fencing: a hook on the controller's client that refuses status and
//! finalizer writes once this process can no longer prove it holds the
//! lease.

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
pub(crate) struct Fence {
    pub(crate) gate: Arc<Gate>,
    pub(crate) now: Clock,
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
        if self.gate.may_write((self.now)()) {
            return Ok(());
        }
        self.gate.fenced_writes.inc();
        tracing::warn!(
            operation,
            "write refused: the leader-election lease is no longer provably held"
        );
        Err(Error::Fenced {
            operation: operation.to_owned(),
        })
    }
}
