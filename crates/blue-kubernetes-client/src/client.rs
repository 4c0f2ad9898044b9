//! The operations the controller needs from a cluster.

use crate::{AccessCheck, ApiRequest, ApiResource, ApiResponse, Error, Lease, ResourceDescriptor};
use crate::{ListPage, PageRequest, WatchRequest, WatchStream};
use serde_json::Value;

/// What the controller needs from a cluster.
///
/// Implemented by [`KubectlClient`](crate::KubectlClient),
/// [`ProxyClient`](crate::ProxyClient), `KubeClient` (feature `kube`),
/// [`Layered`](crate::Layered) and the testkit's `FakeCluster`. Both writes carry the
/// `metadata.resourceVersion` of the `resource` they are given, so a
/// concurrent change makes them fail with
/// [`ErrorKind::Conflict`](crate::ErrorKind::Conflict).
///
/// # Capabilities, and how the trait grows
/// Four methods are required: reading and writing the managed resources
/// ([`list_resources`](Client::list_resources),
/// [`get_resource`](Client::get_resource),
/// [`update_status`](Client::update_status),
/// [`update_finalizers`](Client::update_finalizers)). Every other
/// capability has a default, so a client of your own (an in-memory store
/// in a test, say) implements only what it serves:
///
/// - paging and watching ([`list_page`](Client::list_page),
///   [`watch`](Client::watch)): by default one page without a
///   resourceVersion, and no watch, so the controller lists periodically;
/// - discovery and access checks ([`server_resources`](Client::server_resources),
///   [`can_i`](Client::can_i)), used by the startup preflight;
/// - Events ([`create_event`](Client::create_event),
///   [`update_event`](Client::update_event));
/// - raw requests ([`send_raw`](Client::send_raw)), for the objects the
///   controller keeps beside a resource (connection Secrets);
/// - Leases for leader election and sharding ([`get_lease`](Client::get_lease),
///   [`list_leases`](Client::list_leases) and the rest), where an update
///   carries the resourceVersion it was computed from.
///
/// The defaults of the last four fail with [`Error::Unsupported`]: the
/// preflight reports the check as not possible, Events are dropped (and
/// counted), leader election cannot acquire. **Rule:** a method added to
/// this trait always comes with a default, so a new capability never
/// breaks an implementation outside this crate.
///
/// ```
/// use blue_kubernetes_client::{Client, Error, ResourceDescriptor};
/// use serde_json::Value;
///
/// /// Serves nothing but an empty cluster: four methods are enough.
/// struct Empty;
///
/// #[async_trait::async_trait]
/// impl Client for Empty {
///     async fn list_resources(&self, _: &ResourceDescriptor, _: &str) -> Result<Vec<Value>, Error> {
///         Ok(Vec::new())
///     }
///     async fn get_resource(&self, _: &ResourceDescriptor, _: &str, _: &str) -> Result<Option<Value>, Error> {
///         Ok(None)
///     }
///     async fn update_status(&self, _: &ResourceDescriptor, r: &Value, _: &Value) -> Result<Value, Error> {
///         Ok(r.clone())
///     }
///     async fn update_finalizers(&self, _: &ResourceDescriptor, r: &Value, _: &[String]) -> Result<Value, Error> {
///         Ok(r.clone())
///     }
/// }
/// ```
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait Client: Send + Sync {
    /// Lists every object of `descriptor` in `namespace` (`""`: every
    /// namespace; ignored for a cluster-scoped type).
    async fn list_resources(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
    ) -> Result<Vec<Value>, Error>;

    /// Reads one page of the objects of `descriptor` in `namespace` (`""`:
    /// every namespace, or a cluster-scoped type), with the list's
    /// resourceVersion to watch from.
    ///
    /// The default reads everything at once through
    /// [`list_resources`](Client::list_resources) and reports no
    /// resourceVersion, so nothing can be watched from it.
    async fn list_page(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        page: &PageRequest,
    ) -> Result<ListPage, Error> {
        let _ = page;
        Ok(ListPage {
            items: self.list_resources(descriptor, namespace).await?,
            resource_version: None,
            continue_token: None,
        })
    }

    /// Streams the changes to objects of `descriptor` in `namespace` (`""`
    /// as for [`list_page`](Client::list_page)) after
    /// `request.resource_version`.
    ///
    /// The default fails with [`Error::Unsupported`]: the caller lists
    /// periodically instead.
    async fn watch(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        request: &WatchRequest,
    ) -> Result<WatchStream, Error> {
        let _ = (descriptor, namespace, request);
        Err(crate::watch::unsupported_watch())
    }

    /// Reads one object; `None` when it does not exist. `namespace` is
    /// required for a namespaced type and ignored for a cluster-scoped one.
    async fn get_resource(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, Error>;

    /// Reads one object as the API server's watch cache holds it
    /// (`resourceVersion=0`): no etcd read, so much cheaper for the server,
    /// but possibly a version older than the newest, or none for an object
    /// created a moment ago. Use it only where every write that follows is
    /// guarded by the object's resourceVersion (a stale read then ends in
    /// Conflict, never in an effect), and confirm an absence with
    /// [`get_resource`](Client::get_resource).
    ///
    /// The default reads through [`get_resource`](Client::get_resource).
    async fn get_resource_cached(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        self.get_resource(descriptor, namespace, name).await
    }

    /// Replaces the status of `resource` (guarded by its resourceVersion) and
    /// returns the updated object.
    async fn update_status(
        &self,
        descriptor: &ResourceDescriptor,
        resource: &Value,
        status: &Value,
    ) -> Result<Value, Error>;

    /// Sets `metadata.finalizers` of `resource` (guarded by its
    /// resourceVersion) and returns the updated object.
    async fn update_finalizers(
        &self,
        descriptor: &ResourceDescriptor,
        resource: &Value,
        finalizers: &[String],
    ) -> Result<Value, Error>;

    /// Discovery: the resources `group`/`version` serves; `None` when the
    /// server does not serve that group/version at all (e.g. the CRD is not
    /// installed, or serves other versions).
    async fn server_resources(
        &self,
        group: &str,
        version: &str,
    ) -> Result<Option<Vec<ApiResource>>, Error> {
        let _ = (group, version);
        Err(Error::Unsupported {
            operation: "discovery",
        })
    }

    /// Asks the authorizer whether the caller may do what `check` names
    /// (a `SelfSubjectAccessReview`); `Ok(false)` is a clear "no".
    async fn can_i(&self, check: &AccessCheck) -> Result<bool, Error> {
        let _ = check;
        Err(Error::Unsupported {
            operation: "access_review",
        })
    }

    /// Creates a core/v1 `Event` in `namespace` and returns it as stored.
    async fn create_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        let _ = (namespace, event);
        Err(Error::Unsupported {
            operation: "create_event",
        })
    }

    /// Replaces the core/v1 `Event` named by `event.metadata.name` in
    /// `namespace` (e.g. to raise its `count`) and returns it as stored.
    async fn update_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        let _ = (namespace, event);
        Err(Error::Unsupported {
            operation: "update_event",
        })
    }

    /// Reads the `coordination.k8s.io/v1` Lease `namespace/name`; `None`
    /// when it does not exist.
    async fn get_lease(&self, namespace: &str, name: &str) -> Result<Option<Lease>, Error> {
        let _ = (namespace, name);
        Err(Error::Unsupported {
            operation: "get_lease",
        })
    }

    /// Lists every `coordination.k8s.io/v1` Lease in `namespace` in one
    /// request (one consistent snapshot), where reading them one by one
    /// takes a request each: how the sharding roster reads every
    /// membership slot and shard Lease per round.
    ///
    /// The default fails with [`Error::Unsupported`]: the roster then
    /// reads the Leases it needs one by one with [`get_lease`](Client::get_lease).
    async fn list_leases(&self, namespace: &str) -> Result<Vec<Lease>, Error> {
        let _ = namespace;
        Err(Error::Unsupported {
            operation: "list_leases",
        })
    }

    /// Creates `lease` and returns it as stored. Fails when a Lease of that
    /// name exists already (the API server's `AlreadyExists`).
    async fn create_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        let _ = lease;
        Err(Error::Unsupported {
            operation: "create_lease",
        })
    }

    /// Replaces `lease` (guarded by its resourceVersion, which it must
    /// carry) and returns it as stored; a stale version fails with
    /// [`ErrorKind::Conflict`](crate::ErrorKind::Conflict).
    async fn update_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        let _ = lease;
        Err(Error::Unsupported {
            operation: "update_lease",
        })
    }

    /// Sends one raw request (e.g. for the connection Secrets the
    /// controller keeps for packages), as [`RawApi::send`](crate::RawApi::send)
    /// does; a non-2xx answer is an error classified like any other.
    ///
    /// The default fails with [`Error::Unsupported`]: packages that declare
    /// connection details cannot run on such a client.
    async fn send_raw(&self, request: ApiRequest) -> Result<ApiResponse, Error> {
        let _ = request;
        Err(Error::Unsupported { operation: "raw" })
    }

    /// Gives `lease` up: clears the holder and shortens the duration to one
    /// second, guarded by its resourceVersion, so a waiting candidate takes
    /// over at its next attempt instead of after a full lease duration.
    async fn release_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        let mut released = lease.clone();
        released.spec.holder_identity = None;
        released.spec.lease_duration_seconds = Some(1);
        self.update_lease(&released).await
    }
}
