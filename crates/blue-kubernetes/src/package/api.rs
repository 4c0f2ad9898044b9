//! The package's handle on the Kubernetes API, behind the pass's fence.

use crate::cached::ObjectStore;
use blue_kubernetes_client::{ApiRequest, ApiResponse, Client, ResourceDescriptor};
use serde_json::Value;
use std::sync::Arc;

/// The package's handle on the Kubernetes API: the controller's client
/// behind the fence of the pass, so a replica that can no longer prove it
/// holds its lease (leader election or the resource's shard) has its
/// writes refused, like the controller's own.
#[derive(Clone)]
pub struct Api {
    client: Arc<dyn Client>,
    objects: Option<Arc<ObjectStore>>,
}

impl Api {
    pub(crate) fn new(client: Arc<dyn Client>) -> Self {
        Self {
            client,
            objects: None,
        }
    }

    /// This handle with the controller's cached related objects.
    pub(crate) fn with_objects(mut self, objects: Arc<ObjectStore>) -> Self {
        self.objects = Some(objects);
        self
    }

    /// Reads one object of a related kind declared
    /// [`cached`](crate::related::Related::cached) from the controller's
    /// cache: no request, yet it sees every write this process made to the
    /// object (through this handle, a connection, or the controller), as it
    /// waits for the watch to deliver that write (at most
    /// [`Config::cached_read_wait_ms`](crate::Config::cached_read_wait_ms),
    /// then it reads the API server). A kind not cached, a scope not
    /// watched yet (or after a watch gap), and a context without a runtime
    /// read the API server, as [`get`](Self::get) does. `None` when it does
    /// not exist.
    ///
    /// ```no_run
    /// # async fn demo(api: &blue_kubernetes::package::Api) -> Result<(), blue_kubernetes_client::Error> {
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// let config_maps = ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap");
    /// let cm = api.cached(&config_maps, "default", "web-settings").await?;
    /// # let _ = cm; Ok(()) }
    /// ```
    pub async fn cached(
        &self,
        kind: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, blue_kubernetes_client::Error> {
        match &self.objects {
            Some(objects) => objects.read(&*self.client, kind, namespace, name).await,
            None => self.get(kind, namespace, name).await,
        }
    }

    /// Reads one object; `None` when it does not exist.
    pub async fn get(
        &self,
        kind: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, blue_kubernetes_client::Error> {
        self.client.get_resource(kind, namespace, name).await
    }

    /// Sends any request (reads and writes alike) through the fence.
    pub async fn send(
        &self,
        request: ApiRequest,
    ) -> Result<ApiResponse, blue_kubernetes_client::Error> {
        self.client.send_raw(request).await
    }

    /// The fenced client itself, for what the two methods above do not cover.
    pub fn client(&self) -> &Arc<dyn Client> {
        &self.client
    }
}

/// The handle is a [`RawApi`](blue_kubernetes_client::RawApi), for code
/// written against one (the typed helpers of the client crate included).
#[async_trait::async_trait]
impl blue_kubernetes_client::RawApi for Api {
    async fn send(
        &self,
        request: ApiRequest,
    ) -> Result<ApiResponse, blue_kubernetes_client::Error> {
        self.client.send_raw(request).await
    }
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api").finish_non_exhaustive()
    }
}
