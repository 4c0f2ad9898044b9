//! A [`Client`] wrapper that counts and times every request by operation and
//! error class (never by object, never with text).

use super::Metrics;
use blue_kubernetes_client::{AccessCheck, ApiResource, Client, Error, Lease, ResourceDescriptor};
use blue_kubernetes_client::{ListPage, PageRequest, WatchRequest, WatchStream};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

pub(crate) struct Instrumented {
    inner: Arc<dyn Client>,
    metrics: Arc<Metrics>,
}

impl Instrumented {
    pub(crate) fn new(inner: Arc<dyn Client>, metrics: Arc<Metrics>) -> Self {
        Self { inner, metrics }
    }

    async fn timed<T>(
        &self,
        operation: &'static str,
        call: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        let started = tokio::time::Instant::now();
        let result = call.await;
        let class = match &result {
            Ok(_) => "ok".to_string(),
            Err(e) => e.kind().to_string().replace(' ', "_"),
        };
        self.metrics
            .requests
            .get_or_create(&[("operation", operation.into()), ("result", class)])
            .inc();
        self.metrics
            .request_time
            .get_or_create(&[("operation", operation.into())])
            .observe(started.elapsed().as_secs_f64());
        result
    }
}

#[async_trait::async_trait]
impl Client for Instrumented {
    async fn list_resources(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
    ) -> Result<Vec<Value>, Error> {
        self.timed("list", self.inner.list_resources(d, namespace))
            .await
    }

    async fn list_page(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        page: &PageRequest,
    ) -> Result<ListPage, Error> {
        self.timed("list", self.inner.list_page(d, namespace, page))
            .await
    }

    /// Counts and times opening the stream, not its lifetime.
    async fn watch(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        request: &WatchRequest,
    ) -> Result<WatchStream, Error> {
        self.timed("watch", self.inner.watch(d, namespace, request))
            .await
    }

    async fn get_resource(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        self.timed("get", self.inner.get_resource(d, namespace, name))
            .await
    }

    async fn update_status(
        &self,
        d: &ResourceDescriptor,
        resource: &Value,
        status: &Value,
    ) -> Result<Value, Error> {
        self.timed(
            "update_status",
            self.inner.update_status(d, resource, status),
        )
        .await
    }

    async fn update_finalizers(
        &self,
        d: &ResourceDescriptor,
        resource: &Value,
        finalizers: &[String],
    ) -> Result<Value, Error> {
        let call = self.inner.update_finalizers(d, resource, finalizers);
        self.timed("update_finalizers", call).await
    }

    async fn server_resources(
        &self,
        group: &str,
        version: &str,
    ) -> Result<Option<Vec<ApiResource>>, Error> {
        self.timed("discovery", self.inner.server_resources(group, version))
            .await
    }

    async fn can_i(&self, check: &AccessCheck) -> Result<bool, Error> {
        self.timed("access_review", self.inner.can_i(check)).await
    }

    async fn create_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        self.timed("create_event", self.inner.create_event(namespace, event))
            .await
    }

    async fn update_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        self.timed("update_event", self.inner.update_event(namespace, event))
            .await
    }

    async fn get_lease(&self, namespace: &str, name: &str) -> Result<Option<Lease>, Error> {
        self.timed("get_lease", self.inner.get_lease(namespace, name))
            .await
    }

    async fn create_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        self.timed("create_lease", self.inner.create_lease(lease))
            .await
    }

    async fn update_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        self.timed("update_lease", self.inner.update_lease(lease))
            .await
    }

    async fn release_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        self.timed("release_lease", self.inner.release_lease(lease))
            .await
    }
}
