//! The [`Client`] face of [`FakeCluster`]: counted, faultable, optionally slow.

use super::State;
use super::{FakeCluster, Operation, RecordedCall};
use blue_kubernetes_client::{
    AccessCheck, ApiResource, Client, Error, ErrorKind, LabelSelector, Lease, ListPage,
    PageRequest, ResourceDescriptor, WatchRequest, WatchStream,
};
use serde_json::Value;

fn meta<'a>(resource: &'a Value, field: &str) -> &'a str {
    resource
        .pointer(&format!("/metadata/{field}"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl FakeCluster {
    /// Records the call, waits the latency, then applies any fault.
    async fn begin(
        &self,
        operation: Operation,
        d: &ResourceDescriptor,
        namespace: &str,
        name: Option<&str>,
    ) -> Result<(), Error> {
        let call = RecordedCall::new(operation, d.qualified_plural(), namespace, name);
        self.begin_call(call).await
    }

    /// Records `call`, waits the latency, then applies any fault of its
    /// operation.
    pub(super) async fn begin_call(&self, call: RecordedCall) -> Result<(), Error> {
        let operation = call.operation;
        // Recorded, so a test sees the attempt; refused before anything
        // else, as the transports refuse it before sending.
        let refusal = unsendable(&call);
        let latency = {
            let mut state = self.lock();
            state.log.push(call);
            state.latency
        };
        if let Some(refusal) = refusal {
            return Err(refusal);
        }
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let fault = self.lock().faults.take(operation);
        match fault {
            Some(fault) => Err(fault.error(operation)),
            None => Ok(()),
        }
    }
}

/// The refusal the transports give a call whose name or namespace could
/// read as a flag or change a URL path: such a name never reaches an API
/// server, so the fake does not serve it either.
fn unsendable(call: &RecordedCall) -> Option<Error> {
    let refused = |value: &str| {
        let unsafe_char = |c: char| c.is_whitespace() || c.is_control() || "/?#%\\".contains(c);
        value.is_empty()
            || value.starts_with('-')
            || value == "."
            || value == ".."
            || value.contains(unsafe_char)
    };
    let reason = "is not a valid kubernetes object name";
    if call.name.as_deref().is_some_and(refused) {
        return Some(Error::InvalidOption {
            field: "name",
            reason,
        });
    }
    if !call.namespace.is_empty() && refused(&call.namespace) {
        return Some(Error::InvalidOption {
            field: "namespace",
            reason,
        });
    }
    None
}

/// The descriptor Lease calls are recorded under.
fn leases() -> ResourceDescriptor {
    ResourceDescriptor::new("coordination.k8s.io", "v1", "leases", "Lease")
}

/// The request's label selector; a malformed one is refused with the
/// parser's error (`Invalid`, naming the term), as the API server answers
/// 400 Bad Request.
fn selector(selector: Option<&str>) -> Result<LabelSelector, Error> {
    selector.map_or_else(|| Ok(LabelSelector::default()), LabelSelector::parse)
}

fn refused(operation: Operation, kind: ErrorKind) -> Error {
    Error::kubectl(operation.kubectl_verb(), kind)
}

#[async_trait::async_trait]
impl Client for FakeCluster {
    /// The same request as [`RawApi::send`](blue_kubernetes_client::RawApi::send):
    /// the controller's connection Secrets land among the raw objects.
    async fn send_raw(
        &self,
        request: blue_kubernetes_client::ApiRequest,
    ) -> Result<blue_kubernetes_client::ApiResponse, Error> {
        blue_kubernetes_client::RawApi::send(self, request).await
    }

    async fn list_resources(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
    ) -> Result<Vec<Value>, Error> {
        self.begin(Operation::List, d, namespace, None).await?;
        Ok(self.lock().store.list(d, namespace))
    }

    async fn list_page(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        page: &PageRequest,
    ) -> Result<ListPage, Error> {
        let op = Operation::ListPage;
        self.begin(op, d, namespace, None).await?;
        let selector = selector(page.label_selector.as_deref())?;
        let served = self.lock().store.page(d, namespace, page, &selector);
        served.map_err(|kind| refused(op, kind))
    }

    async fn watch(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        request: &WatchRequest,
    ) -> Result<WatchStream, Error> {
        let op = Operation::Watch;
        self.begin(op, d, namespace, None).await?;
        let selector = selector(request.label_selector.as_deref())?;
        self.open_watch(d, namespace, request, selector)
            .map_err(|kind| refused(op, kind))
    }

    async fn get_resource(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        self.begin(Operation::Get, d, namespace, Some(name)).await?;
        Ok(self.lock().store.get(d, namespace, name))
    }

    async fn get_resource_cached(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        self.lock().cached_reads += 1;
        // Counted, slowed and faulted like any read; only the answer lags.
        let fresh = self.get_resource(d, namespace, name).await?;
        let state = self.lock();
        match &state.lagging_cache {
            Some(objects) => Ok(objects.get(&super::store::key(d, namespace, name)).cloned()),
            None => Ok(fresh),
        }
    }

    async fn update_status(
        &self,
        d: &ResourceDescriptor,
        resource: &Value,
        status: &Value,
    ) -> Result<Value, Error> {
        let op = Operation::UpdateStatus;
        let (namespace, name) = (meta(resource, "namespace"), meta(resource, "name"));
        self.begin(op, d, namespace, Some(name)).await?;
        let mut state = self.lock();
        let written = state.store.write_status(d, resource, status);
        // Like the server's 422, the refusal names no field to the client.
        state.store.last_rejection.clear();
        written.map_err(|kind| refused(op, kind))
    }

    async fn update_finalizers(
        &self,
        d: &ResourceDescriptor,
        resource: &Value,
        finalizers: &[String],
    ) -> Result<Value, Error> {
        let op = Operation::UpdateFinalizers;
        let (namespace, name) = (meta(resource, "namespace"), meta(resource, "name"));
        self.begin(op, d, namespace, Some(name)).await?;
        let written = self.lock().store.write_finalizers(d, resource, finalizers);
        written.map_err(|kind| refused(op, kind))
    }

    async fn server_resources(
        &self,
        group: &str,
        version: &str,
    ) -> Result<Option<Vec<ApiResource>>, Error> {
        Ok(self.discover(group, version))
    }

    async fn can_i(&self, check: &AccessCheck) -> Result<bool, Error> {
        Ok(self.authorize(check))
    }

    async fn create_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        self.events_released().await;
        self.write_event(namespace, event, true)
    }

    async fn update_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        self.events_released().await;
        self.write_event(namespace, event, false)
    }

    async fn get_lease(&self, namespace: &str, name: &str) -> Result<Option<Lease>, Error> {
        self.begin(Operation::GetLease, &leases(), namespace, Some(name))
            .await?;
        Ok(self.lock().leases.get(namespace, name))
    }

    async fn list_leases(&self, namespace: &str) -> Result<Vec<Lease>, Error> {
        self.begin(Operation::ListLeases, &leases(), namespace, None)
            .await?;
        Ok(self.lock().leases.list(namespace))
    }

    async fn create_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        let op = Operation::CreateLease;
        self.begin(op, &leases(), &lease.namespace, Some(&lease.name))
            .await?;
        let mut state = self.lock();
        let State { store, leases, .. } = &mut *state;
        leases
            .create(store, lease)
            .map_err(|kind| refused(op, kind))
    }

    async fn update_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        let op = Operation::UpdateLease;
        self.begin(op, &leases(), &lease.namespace, Some(&lease.name))
            .await?;
        let mut state = self.lock();
        let State { store, leases, .. } = &mut *state;
        leases
            .update(store, lease)
            .map_err(|kind| refused(op, kind))
    }
}
