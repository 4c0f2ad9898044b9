//! The auditing client: every call goes to the [`FakeCluster`] between the
//! audit's checks (`audit.rs`). A pass's calls yield first (so concurrent
//! reconciles on one current-thread runtime interleave at every cluster
//! call) and are counted, and a failed one marks where the pass must stop;
//! the cache's pages and watches are only counted, events only checked,
//! and discovery, access checks and Leases pass through.
//!
//! Each method is a check before, the call, and a check after, so that the
//! audit fits any wrapper that sees a call before and its result after.

use crate::audit::Audit;
use blue_kubernetes_client::{
    AccessCheck, ApiResource, Client, Error, Lease, ListPage, PageRequest, ResourceDescriptor,
    WatchRequest, WatchStream,
};
use blue_testkit::Operation;
use serde_json::Value;

#[async_trait::async_trait]
impl Client for Audit {
    async fn list_resources(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
    ) -> Result<Vec<Value>, Error> {
        self.begin(Operation::List).await;
        let result = self.cluster.list_resources(d, namespace).await;
        self.end(&result);
        result
    }

    // Counted, not audited as a pass's calls: a failed page or watch is no
    // reconcile's failure.
    async fn list_page(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        page: &PageRequest,
    ) -> Result<ListPage, Error> {
        self.count(Operation::ListPage).await;
        self.cluster.list_page(d, namespace, page).await
    }

    async fn watch(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        request: &WatchRequest,
    ) -> Result<WatchStream, Error> {
        self.count(Operation::Watch).await;
        self.cluster.watch(d, namespace, request).await
    }

    async fn get_resource(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        self.begin(Operation::Get).await;
        let result = self.cluster.get_resource(d, namespace, name).await;
        self.end(&result);
        result
    }

    async fn update_status(
        &self,
        d: &ResourceDescriptor,
        resource: &Value,
        status: &Value,
    ) -> Result<Value, Error> {
        self.begin(Operation::UpdateStatus).await;
        self.audit_status_write(resource, status);
        let result = self.cluster.update_status(d, resource, status).await;
        self.end(&result);
        self.audit_status_written(resource, status, &result);
        result
    }

    async fn update_finalizers(
        &self,
        d: &ResourceDescriptor,
        resource: &Value,
        finalizers: &[String],
    ) -> Result<Value, Error> {
        self.begin(Operation::UpdateFinalizers).await;
        let pending = self.audit_finalizers_write(d, resource, finalizers);
        let result = self
            .cluster
            .update_finalizers(d, resource, finalizers)
            .await;
        self.end(&result);
        self.audit_written(pending, &result);
        result
    }

    async fn server_resources(
        &self,
        group: &str,
        version: &str,
    ) -> Result<Option<Vec<ApiResource>>, Error> {
        self.cluster.server_resources(group, version).await
    }

    async fn can_i(&self, check: &AccessCheck) -> Result<bool, Error> {
        self.cluster.can_i(check).await
    }

    async fn create_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        self.audit_event(event);
        self.cluster.create_event(namespace, event).await
    }

    async fn update_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        self.audit_event(event);
        self.cluster.update_event(namespace, event).await
    }

    // The model runs without leader election.
    async fn get_lease(&self, namespace: &str, name: &str) -> Result<Option<Lease>, Error> {
        self.cluster.get_lease(namespace, name).await
    }

    async fn create_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        self.cluster.create_lease(lease).await
    }

    async fn update_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        self.cluster.update_lease(lease).await
    }
}
