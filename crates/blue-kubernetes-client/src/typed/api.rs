//! [`TypedApi`]: one k8s-openapi type in one namespace (or cluster-wide),
//! over any [`RawApi`].

use super::body::{decode, delete_options, encode, name_of, ListParams};
use super::path;
use crate::{ApiPath, ApiRequest, Error, ErrorKind, Method, PatchType, RawApi, DEFAULT_PAGE_LIMIT};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Preconditions};
use k8s_openapi::{
    ClusterResourceScope, ListableResource, Metadata, NamespaceResourceScope, Resource,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::marker::PhantomData;
use std::time::Duration;

/// Typed requests for objects of the k8s-openapi type `K` (a `ConfigMap`, a
/// `Secret`, a `Deployment`...) in one namespace, or cluster-wide for a
/// cluster-scoped type, over a [`RawApi`]: the transport the controller
/// uses, so the package's requests share its credentials and deadlines.
///
/// The path comes from `K`'s `Resource` constants (group, version, plural)
/// and its scope: [`namespaced`](Self::namespaced) exists only for
/// namespaced types and [`cluster`](Self::cluster) only for cluster-scoped
/// ones. Errors are the transport's, classified as every request's
/// ([`Error::kind`]: `NotFound`, `Conflict`, `Invalid`...; an
/// `AlreadyExists` is classified `Other`, since it does not mean a stale
/// snapshot, and over HTTP is [`Error::Http`] with status 409), and never
/// carry a request or response body.
///
/// ```
/// # async fn example(raw: &dyn blue_kubernetes_client::RawApi) -> Result<(), blue_kubernetes_client::Error> {
/// use blue_kubernetes_client::typed::{preconditions_of, TypedApi};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// let config_maps = TypedApi::<ConfigMap>::namespaced(raw, "dev");
/// let wanted = ConfigMap {
///     metadata: ObjectMeta { name: Some("app".into()), ..ObjectMeta::default() },
///     data: Some([("greeting".to_string(), "hello".to_string())].into()),
///     ..ConfigMap::default()
/// };
/// let mut stored = match config_maps.get_opt("app").await? {
///     None => config_maps.create(&wanted).await?,
///     Some(found) => found,
/// };
/// // A replace carries the resourceVersion it was computed from: a
/// // concurrent change makes it fail with `ErrorKind::Conflict`.
/// stored.data = wanted.data.clone();
/// let stored = config_maps.replace(&stored).await?;
/// // Delete exactly what was read, not a namesake or a newer version.
/// config_maps.delete("app", &preconditions_of(&stored)).await?;
/// # Ok(())
/// # }
/// ```
pub struct TypedApi<'a, K> {
    api: &'a dyn RawApi,
    namespace: Option<String>,
    timeout: Option<Duration>,
    kind: PhantomData<fn() -> K>,
}

impl<'a, K: Resource<Scope = NamespaceResourceScope>> TypedApi<'a, K> {
    /// The objects of the namespaced type `K` in `namespace`. An invalid
    /// namespace fails each request with [`Error::InvalidOption`].
    pub fn namespaced(api: &'a dyn RawApi, namespace: &str) -> Self {
        Self::new(api, Some(namespace.to_owned()))
    }
}

impl<'a, K: Resource<Scope = ClusterResourceScope>> TypedApi<'a, K> {
    /// The objects of the cluster-scoped type `K`.
    pub fn cluster(api: &'a dyn RawApi) -> Self {
        Self::new(api, None)
    }
}

impl<'a, K> TypedApi<'a, K> {
    fn new(api: &'a dyn RawApi, namespace: Option<String>) -> Self {
        Self {
            api,
            namespace,
            timeout: None,
            kind: PhantomData,
        }
    }

    /// Gives every request this deadline instead of the client's.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

impl<K> TypedApi<'_, K>
where
    K: Resource + Metadata<Ty = ObjectMeta> + Serialize + DeserializeOwned,
{
    /// Reads the object `name`; a missing one fails with [`ErrorKind::NotFound`].
    pub async fn get(&self, name: &str) -> Result<K, Error> {
        self.call(Method::Get, self.object(name)?, None).await
    }

    /// Reads the object `name`, `None` when it does not exist.
    pub async fn get_opt(&self, name: &str) -> Result<Option<K>, Error> {
        match self.get(name).await {
            Ok(found) => Ok(Some(found)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Creates `object` (named by `metadata.name`, or `generateName`);
    /// returns it as stored. A namesake that exists already fails with the
    /// server's `AlreadyExists` (classified [`ErrorKind::Other`]), so a
    /// create never overwrites.
    pub async fn create(&self, object: &K) -> Result<K, Error> {
        let collection = path::collection::<K>(self.namespace.as_deref())?;
        self.call(Method::Post, collection, Some(encode(object)?))
            .await
    }

    /// Replaces the object `metadata.name` with `object`, guarded by its
    /// `metadata.resourceVersion`: if the stored object changed since that
    /// version, the server refuses with [`ErrorKind::Conflict`]. An object
    /// without a resourceVersion is refused before sending
    /// ([`Error::InvalidOption`]): an unguarded replace would overwrite
    /// whatever changed meanwhile.
    pub async fn replace(&self, object: &K) -> Result<K, Error> {
        if object.metadata().resource_version.is_none() {
            return Err(Error::InvalidOption {
                field: "metadata.resourceVersion",
                reason: "a replace must carry the resourceVersion it was computed from",
            });
        }
        let path = self.object(name_of(object)?)?;
        self.call(Method::Put, path, Some(encode(object)?)).await
    }

    /// Applies a JSON merge patch (RFC 7386) to the object `name`: objects
    /// merge key by key, `null` removes a key, anything else replaces. A
    /// `metadata.resourceVersion` in the patch guards it like a replace.
    pub async fn merge_patch(&self, name: &str, patch: &Value) -> Result<K, Error> {
        let method = Method::Patch(PatchType::Merge);
        self.call(method, self.object(name)?, Some(patch.clone()))
            .await
    }

    /// Server-side apply of `object` (the fields this `field_manager`
    /// wants) to the object `metadata.name`, creating it if absent. Fields
    /// another manager owns fail with [`ErrorKind::Conflict`] unless
    /// `force` takes them over. Needs a transport that can send apply
    /// patches: not the per-call kubectl one ([`Error::Unsupported`]).
    pub async fn apply(&self, object: &K, field_manager: &str, force: bool) -> Result<K, Error> {
        let mut path = self
            .object(name_of(object)?)?
            .with_query("fieldManager", field_manager);
        if force {
            path = path.with_query("force", "true");
        }
        let method = Method::Patch(PatchType::Apply);
        self.call(method, path, Some(encode(object)?)).await
    }

    /// Deletes the object `name` if `preconditions` hold (uid and
    /// resourceVersion, each where set; [`preconditions_of`](super::preconditions_of)
    /// takes both from an object read), else [`ErrorKind::Conflict`]. A
    /// missing object is [`ErrorKind::NotFound`]. Success means deleted or,
    /// with finalizers, marked for deletion.
    pub async fn delete(&self, name: &str, preconditions: &Preconditions) -> Result<(), Error> {
        let mut request = ApiRequest::new(Method::Delete, self.object(name)?);
        if let Some(options) = delete_options(preconditions) {
            request = request.with_body(options);
        }
        self.send(request).await.map(drop)
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: ApiPath,
        body: Option<Value>,
    ) -> Result<T, Error> {
        let mut request = ApiRequest::new(method, path);
        request.body = body;
        decode::<K, T>(method, self.send(request).await?)
    }

    async fn send(&self, mut request: ApiRequest) -> Result<crate::ApiResponse, Error> {
        request.timeout = self.timeout;
        self.api.send(request).await
    }

    fn object(&self, name: &str) -> Result<ApiPath, Error> {
        path::object::<K>(self.namespace.as_deref(), name)
    }
}

impl<K> TypedApi<'_, K>
where
    K: ListableResource + Metadata<Ty = ObjectMeta> + Serialize + DeserializeOwned,
{
    /// Every object `params` selects, read page by page
    /// ([`DEFAULT_PAGE_LIMIT`] a page). A continue token that expired
    /// between pages fails with [`ErrorKind::Gone`]: list again.
    pub async fn list(&self, params: &ListParams) -> Result<Vec<K>, Error> {
        let mut items = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut path = path::collection::<K>(self.namespace.as_deref())?
                .with_query("limit", &DEFAULT_PAGE_LIMIT.to_string());
            if let Some(labels) = &params.label_selector {
                path = path.with_query("labelSelector", labels);
            }
            if let Some(fields) = &params.field_selector {
                path = path.with_query("fieldSelector", fields);
            }
            if let Some(token) = &token {
                path = path.with_query("continue", token);
            }
            let page: k8s_openapi::List<K> = self.call(Method::Get, path, None).await?;
            items.extend(page.items);
            match page.metadata.continue_ {
                Some(next) if !next.is_empty() => token = Some(next),
                _ => return Ok(items),
            }
        }
    }
}

impl<K> Clone for TypedApi<'_, K> {
    fn clone(&self) -> Self {
        Self {
            api: self.api,
            namespace: self.namespace.clone(),
            timeout: self.timeout,
            kind: PhantomData,
        }
    }
}

impl<K: Resource> std::fmt::Debug for TypedApi<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedApi")
            .field("kind", &K::KIND)
            .field("namespace", &self.namespace)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
