//! The controller's client, assembled in one place.
//!
//! ```text
//! Fence (only with leader election: refuses status, finalizer and
//!   │    Secret writes once the lease cannot be proven held; each pass
//!   │    adds the fence it started under, the leader's or its shard's)
//!   └─ RequestMetrics (counts and times every request that is sent)
//!        └─ OwnWrites (only with cached related kinds: marks each write
//!             │        to their objects, for reads that see their writes)
//!             └─ the transport from `Config::client`
//! ```
//!
//! [`controller`](crate::controller) builds this once and stores it in the
//! controller's config; every user of the cluster takes that one client:
//! the reflectors and pollers, the passes, the Event writer, the startup
//! preflight and the elector. A refused write never reaches the request
//! metrics: it was never sent.

use crate::cached::{ObjectStore, OwnWrites};
use crate::leader::Fence;
use crate::telemetry::{Metrics, RequestMetrics};
use blue_kubernetes_client::{Client, Layered};
use std::sync::Arc;

/// `transport` wrapped in the controller's hooks, outermost first.
pub(crate) fn client_stack(
    transport: Arc<dyn Client>,
    metrics: &Arc<Metrics>,
    fence: Option<Fence>,
    objects: &Arc<ObjectStore>,
) -> Arc<dyn Client> {
    let transport: Arc<dyn Client> = match objects.any_cached() {
        true => Arc::new(Layered::new(transport, OwnWrites(objects.clone()))),
        false => transport,
    };
    let measured: Arc<dyn Client> =
        Arc::new(Layered::new(transport, RequestMetrics(metrics.clone())));
    match fence {
        Some(fence) => Arc::new(Layered::new(measured, fence)),
        None => measured,
    }
}
