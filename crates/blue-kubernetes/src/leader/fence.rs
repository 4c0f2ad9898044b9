//! Fencing: the controller's client, refusing status and finalizer writes
//! once this process can no longer prove it holds the lease.

use super::gate::Gate;
use crate::telemetry::{EventType, Telemetry};
use crate::Clock;
use blue_kubernetes_client::{AccessCheck, ApiResource, Client, Error, Lease, ResourceDescriptor};
use blue_kubernetes_client::{ListPage, PageRequest, WatchRequest, WatchStream};
use serde_json::Value;
use std::sync::Arc;

/// Reads pass through: a fenced process may look, never write. The check
/// runs before each write is sent; a write already on its way when the
/// lease expires still carries its resourceVersion, so it fails if the new
/// leader has written the object since.
pub(crate) struct FencedClient {
    pub(crate) inner: Arc<dyn Client>,
    pub(crate) gate: Arc<Gate>,
    pub(crate) now: Clock,
    /// Refused status and finalizer writes become a Warning Event on the
    /// resource (Events are not state: they stay allowed, and rate-limited).
    pub(crate) telemetry: Arc<Telemetry>,
}

impl FencedClient {
    /// [`check`](Self::check) for a write to `resource`, reported on it.
    async fn check_write(
        &self,
        operation: &str,
        descriptor: &ResourceDescriptor,
        resource: &Value,
    ) -> Result<(), Error> {
        let refused = self.check(operation);
        if refused.is_err() {
            if let Some(events) = &self.telemetry.events {
                let message = format!(
                    "{} write refused: this replica can no longer prove it holds the leader-election lease",
                    if operation == "patch" { "finalizer" } else { "status" }
                );
                events.record(descriptor, resource, EventType::Warning, "Fenced", message);
            }
        }
        refused
    }

    fn check(&self, operation: &str) -> Result<(), Error> {
        if self.gate.may_write((self.now)()) {
            return Ok(());
        }
        Gate::count(&self.gate.fenced_writes);
        self.gate.fenced_metric.inc();
        tracing::warn!(
            operation,
            "write refused: the leader-election lease is no longer provably held"
        );
        Err(Error::Fenced {
            operation: operation.to_owned(),
        })
    }
}

#[async_trait::async_trait]
impl Client for FencedClient {
    async fn list_resources(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
    ) -> Result<Vec<Value>, Error> {
        self.inner.list_resources(descriptor, namespace).await
    }

    async fn list_page(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        page: &PageRequest,
    ) -> Result<ListPage, Error> {
        self.inner.list_page(descriptor, namespace, page).await
    }

    async fn watch(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        request: &WatchRequest,
    ) -> Result<WatchStream, Error> {
        self.inner.watch(descriptor, namespace, request).await
    }

    async fn get_resource(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        self.inner.get_resource(descriptor, namespace, name).await
    }

    async fn update_status(
        &self,
        descriptor: &ResourceDescriptor,
        resource: &Value,
        status: &Value,
    ) -> Result<Value, Error> {
        self.check_write("replace", descriptor, resource).await?;
        self.inner.update_status(descriptor, resource, status).await
    }

    async fn update_finalizers(
        &self,
        descriptor: &ResourceDescriptor,
        resource: &Value,
        finalizers: &[String],
    ) -> Result<Value, Error> {
        self.check_write("patch", descriptor, resource).await?;
        self.inner
            .update_finalizers(descriptor, resource, finalizers)
            .await
    }

    // The elector uses the unfenced client; these only pass through.
    async fn get_lease(&self, namespace: &str, name: &str) -> Result<Option<Lease>, Error> {
        self.inner.get_lease(namespace, name).await
    }

    async fn create_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        self.inner.create_lease(lease).await
    }

    async fn update_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        self.inner.update_lease(lease).await
    }

    async fn server_resources(
        &self,
        group: &str,
        version: &str,
    ) -> Result<Option<Vec<ApiResource>>, Error> {
        self.inner.server_resources(group, version).await
    }

    async fn can_i(&self, check: &AccessCheck) -> Result<bool, Error> {
        self.inner.can_i(check).await
    }

    async fn create_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        self.check("create")?;
        self.inner.create_event(namespace, event).await
    }

    async fn update_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        self.check("replace")?;
        self.inner.update_event(namespace, event).await
    }
}
