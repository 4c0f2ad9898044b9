//! One generic layer over a client: a [`Hook`] sees every call before it
//! is sent (and may refuse it) and after it returns.
//!
//! [`Layered`] implements every [`Client`] and [`RawApi`] method once, so a
//! decorator (metrics, fencing, an audit, a fault injector) is a hook of a
//! few lines instead of a wrapper that forwards each method by hand and
//! silently loses one it forgets (`list_page`, `watch`). Layers nest: a
//! `Layered` is a `Client`, so the outermost hook runs first.

mod call;

pub use call::{Answer, Call};

use crate::{AccessCheck, ApiRequest, ApiResource, ApiResponse, Client, Error, Lease, RawApi};
use crate::{ListPage, PageRequest, ResourceDescriptor, WatchRequest, WatchStream};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Sees the calls of a [`Layered`] client. Both methods default to doing
/// nothing, so a hook overrides only what it needs.
#[async_trait::async_trait]
pub trait Hook: Send + Sync {
    /// Runs before `call` is sent; an error refuses it: the inner client
    /// never sees the call, the caller gets the error, and
    /// [`after`](Hook::after) does not run.
    async fn before(&self, call: &Call<'_>) -> Result<(), Error> {
        let _ = call;
        Ok(())
    }

    /// Runs when the inner client has answered `call`, with its answer (or
    /// error) and how long it took.
    fn after(&self, call: &Call<'_>, result: Result<Answer<'_>, &Error>, elapsed: Duration) {
        let _ = (call, result, elapsed);
    }
}

#[async_trait::async_trait]
impl<H: Hook + ?Sized> Hook for Arc<H> {
    async fn before(&self, call: &Call<'_>) -> Result<(), Error> {
        (**self).before(call).await
    }

    fn after(&self, call: &Call<'_>, result: Result<Answer<'_>, &Error>, elapsed: Duration) {
        (**self).after(call, result, elapsed)
    }
}

/// A [`Client`] (and [`RawApi`]) that runs `hook` around every call of an
/// inner client. Layers nest (a `Layered` is a `Client`): the outermost
/// hook runs first, and a call it refuses never reaches the inner ones.
///
/// ```
/// use blue_kubernetes_client::{Answer, Call, Client, Error, Hook, Layered};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// /// Counts failed requests; refuses Event writes.
/// #[derive(Default)]
/// struct Quiet(AtomicU64);
///
/// #[async_trait::async_trait]
/// impl Hook for Quiet {
///     async fn before(&self, call: &Call<'_>) -> Result<(), Error> {
///         match call {
///             Call::CreateEvent { .. } | Call::UpdateEvent { .. } => {
///                 Err(Error::Unsupported { operation: "event" })
///             }
///             _ => Ok(()),
///         }
///     }
///
///     fn after(&self, _: &Call<'_>, result: Result<Answer<'_>, &Error>, _: Duration) {
///         if result.is_err() {
///             self.0.fetch_add(1, Ordering::Relaxed);
///         }
///     }
/// }
///
/// fn quiet(inner: Arc<dyn Client>) -> Arc<dyn Client> {
///     Arc::new(Layered::new(inner, Quiet::default()))
/// }
/// ```
pub struct Layered<H> {
    client: Arc<dyn Client>,
    raw: Option<Arc<dyn RawApi>>,
    hook: H,
}

impl<H: Hook> Layered<H> {
    /// `client` with `hook` around its calls. Raw requests fail with
    /// [`Error::Unsupported`] unless [`with_raw_api`](Self::with_raw_api)
    /// names where they go.
    pub fn new(client: Arc<dyn Client>, hook: H) -> Self {
        Self {
            client,
            raw: None,
            hook,
        }
    }

    /// Sends raw requests to `raw`, with the same hook around them.
    pub fn with_raw_api(mut self, raw: Arc<dyn RawApi>) -> Self {
        self.raw = Some(raw);
        self
    }

    /// The hook.
    pub fn hook(&self) -> &H {
        &self.hook
    }

    async fn run<T: Answered>(
        &self,
        call: Call<'_>,
        send: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        self.hook.before(&call).await?;
        let started = tokio::time::Instant::now();
        let result = send.await;
        let answer = result.as_ref().map(Answered::answer);
        self.hook.after(&call, answer, started.elapsed());
        result
    }
}

impl<H> std::fmt::Debug for Layered<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Layered")
            .field("raw", &self.raw.is_some())
            .finish_non_exhaustive()
    }
}

/// What a successful call returns, as hooks see it.
trait Answered {
    fn answer(&self) -> Answer<'_>;
}

impl Answered for Vec<Value> {
    fn answer(&self) -> Answer<'_> {
        Answer::Objects(self)
    }
}

impl Answered for ListPage {
    fn answer(&self) -> Answer<'_> {
        Answer::Page(self)
    }
}

impl Answered for WatchStream {
    fn answer(&self) -> Answer<'_> {
        Answer::Stream
    }
}

impl Answered for Option<Value> {
    fn answer(&self) -> Answer<'_> {
        Answer::Object(self.as_ref())
    }
}

impl Answered for Value {
    fn answer(&self) -> Answer<'_> {
        Answer::Written(self)
    }
}

impl Answered for Option<Vec<ApiResource>> {
    fn answer(&self) -> Answer<'_> {
        Answer::Resources(self.as_deref())
    }
}

impl Answered for bool {
    fn answer(&self) -> Answer<'_> {
        Answer::Allowed(*self)
    }
}

impl Answered for Option<Lease> {
    fn answer(&self) -> Answer<'_> {
        Answer::Lease(self.as_ref())
    }
}

impl Answered for Vec<Lease> {
    fn answer(&self) -> Answer<'_> {
        Answer::Leases(self)
    }
}

impl Answered for Lease {
    fn answer(&self) -> Answer<'_> {
        Answer::Lease(Some(self))
    }
}

impl Answered for ApiResponse {
    fn answer(&self) -> Answer<'_> {
        Answer::Raw(self)
    }
}

#[async_trait::async_trait]
impl<H: Hook> Client for Layered<H> {
    async fn list_resources(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
    ) -> Result<Vec<Value>, Error> {
        let call = Call::List {
            descriptor,
            namespace,
        };
        let send = self.client.list_resources(descriptor, namespace);
        self.run(call, send).await
    }

    async fn list_page(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        page: &PageRequest,
    ) -> Result<ListPage, Error> {
        let call = Call::ListPage {
            descriptor,
            namespace,
            page,
        };
        let send = self.client.list_page(descriptor, namespace, page);
        self.run(call, send).await
    }

    async fn watch(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        request: &WatchRequest,
    ) -> Result<WatchStream, Error> {
        let call = Call::Watch {
            descriptor,
            namespace,
            request,
        };
        let send = self.client.watch(descriptor, namespace, request);
        self.run(call, send).await
    }

    async fn get_resource(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        let call = Call::Get {
            descriptor,
            namespace,
            name,
        };
        let send = self.client.get_resource(descriptor, namespace, name);
        self.run(call, send).await
    }

    async fn get_resource_cached(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        // Hooks see a read like any other: what they guard (fencing,
        // counting, faults) does not depend on where the server reads from.
        let call = Call::Get {
            descriptor,
            namespace,
            name,
        };
        let send = self.client.get_resource_cached(descriptor, namespace, name);
        self.run(call, send).await
    }

    async fn update_status(
        &self,
        descriptor: &ResourceDescriptor,
        resource: &Value,
        status: &Value,
    ) -> Result<Value, Error> {
        let call = Call::UpdateStatus {
            descriptor,
            resource,
            status,
        };
        let send = self.client.update_status(descriptor, resource, status);
        self.run(call, send).await
    }

    async fn update_finalizers(
        &self,
        descriptor: &ResourceDescriptor,
        resource: &Value,
        finalizers: &[String],
    ) -> Result<Value, Error> {
        let call = Call::UpdateFinalizers {
            descriptor,
            resource,
            finalizers,
        };
        let send = self
            .client
            .update_finalizers(descriptor, resource, finalizers);
        self.run(call, send).await
    }

    async fn server_resources(
        &self,
        group: &str,
        version: &str,
    ) -> Result<Option<Vec<ApiResource>>, Error> {
        let call = Call::ServerResources { group, version };
        self.run(call, self.client.server_resources(group, version))
            .await
    }

    async fn can_i(&self, check: &AccessCheck) -> Result<bool, Error> {
        self.run(Call::CanI { check }, self.client.can_i(check))
            .await
    }

    async fn create_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        let call = Call::CreateEvent { namespace, event };
        self.run(call, self.client.create_event(namespace, event))
            .await
    }

    async fn update_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        let call = Call::UpdateEvent { namespace, event };
        self.run(call, self.client.update_event(namespace, event))
            .await
    }

    async fn get_lease(&self, namespace: &str, name: &str) -> Result<Option<Lease>, Error> {
        let call = Call::GetLease { namespace, name };
        self.run(call, self.client.get_lease(namespace, name)).await
    }

    async fn list_leases(&self, namespace: &str) -> Result<Vec<Lease>, Error> {
        let call = Call::ListLeases { namespace };
        self.run(call, self.client.list_leases(namespace)).await
    }

    async fn create_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        self.run(Call::CreateLease { lease }, self.client.create_lease(lease))
            .await
    }

    async fn update_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        self.run(Call::UpdateLease { lease }, self.client.update_lease(lease))
            .await
    }

    async fn send_raw(&self, request: ApiRequest) -> Result<ApiResponse, Error> {
        let call = Call::Raw { request: &request };
        self.run(call, self.client.send_raw(request.clone())).await
    }

    async fn release_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        self.run(
            Call::ReleaseLease { lease },
            self.client.release_lease(lease),
        )
        .await
    }
}

#[async_trait::async_trait]
impl<H: Hook> RawApi for Layered<H> {
    async fn send(&self, request: ApiRequest) -> Result<ApiResponse, Error> {
        let Some(raw) = &self.raw else {
            return Err(Error::Unsupported { operation: "raw" });
        };
        let call = Call::Raw { request: &request };
        self.run(call, raw.send(request.clone())).await
    }
}

#[cfg(test)]
mod tests;
