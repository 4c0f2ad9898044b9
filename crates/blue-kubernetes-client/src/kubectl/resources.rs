//! [`Client`] for [`KubectlClient`]: the resource operations as kubectl
//! commands (the cluster-level ones are in `cluster_calls`, the shared write
//! bodies in `writes`).
//!
//! Both writes carry the snapshot's `metadata.resourceVersion`, so the API
//! server rejects them with 409 Conflict when the object changed since the
//! snapshot was read (optimistic concurrency, verified against a real
//! kube-apiserver, see `notes/kubectl.md`).

use super::cluster_calls;
use super::request::decode;
use crate::names::object_name;
use crate::scope::Scope;
use crate::writes::{finalizers_patch, status_write, Metadata};
use crate::{
    AccessCheck, ApiResource, Client, Error, KubectlClient, Lease, ListPage, PageRequest,
    RequestParams, ResourceDescriptor,
};
use serde_json::Value;

#[async_trait::async_trait]
impl Client for KubectlClient {
    /// The same request as [`RawApi::send`](crate::RawApi::send).
    async fn send_raw(
        &self,
        request: crate::ApiRequest,
    ) -> Result<crate::ApiResponse, crate::Error> {
        crate::RawApi::send(self, request).await
    }

    /// `kubectl get <plural>.<version>.<group> -n NS -o json`, returning
    /// `items`; `--all-namespaces` instead of `-n NS` when `namespace` is
    /// `""`, neither for a cluster-scoped type. kubectl reads the list in
    /// pages of 500 itself (`--chunk-size`).
    async fn list_resources(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
    ) -> Result<Vec<Value>, Error> {
        self.list_selected(descriptor, namespace, None).await
    }

    /// Every object in one page, as [`list_resources`](Client::list_resources)
    /// reads them (kubectl pages internally), with `--selector=S` for a
    /// label selector. No resourceVersion: kubectl
    /// prints its pages as one `List` without the list's version, and this
    /// transport does not watch anyway. A continue token is refused, since
    /// this transport never hands one out.
    async fn list_page(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        page: &PageRequest,
    ) -> Result<ListPage, Error> {
        if page.continue_token.is_some() {
            return Err(Error::InvalidOption {
                field: "continue_token",
                reason: "the kubectl transport returns every object in the first page",
            });
        }
        let selector = page.label_selector.as_deref();
        Ok(ListPage {
            items: self.list_selected(descriptor, namespace, selector).await?,
            resource_version: None,
            continue_token: None,
        })
    }

    /// `kubectl get <plural>.<version>.<group> NAME -n NS --ignore-not-found
    /// -o json` (no `-n` for a cluster-scoped type).
    async fn get_resource(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        let scope = Scope::of_object(descriptor, Some(namespace), "namespace")?;
        let name = object_name(name, "name")?;
        let plural = descriptor.versioned_plural();
        let mut args = vec!["get", plural.as_str(), name];
        args.extend(scope.kubectl_flags());
        args.extend(["--ignore-not-found", "-o", "json"]);
        let object = self.request(&args, RequestParams::default()).await?;
        Ok(object.into_json())
    }

    /// `kubectl replace --raw /apis/G/V/namespaces/NS/PLURAL/NAME/status -f -`
    /// (`/apis/G/V/PLURAL/NAME/status` for a cluster-scoped type) with
    /// `{apiVersion, kind, metadata: {name, namespace, uid, resourceVersion},
    /// status}` as the input document.
    async fn update_status(
        &self,
        descriptor: &ResourceDescriptor,
        resource: &Value,
        status: &Value,
    ) -> Result<Value, Error> {
        let (path, body) = status_write(descriptor, resource, status)?;
        let args = ["replace", "--raw", path.as_str(), "-f", "-"];
        let options = RequestParams::default().with_input(body.to_string());
        self.request(&args, options)
            .await?
            .into_json()
            .ok_or_else(|| decode("replace"))
    }

    /// `kubectl patch <plural>.<version>.<group> NAME -n NS --type=merge -p
    /// {"metadata":{"resourceVersion":RV,"finalizers":[...]}} -o json` (no
    /// `-n` for a cluster-scoped type).
    async fn update_finalizers(
        &self,
        descriptor: &ResourceDescriptor,
        resource: &Value,
        finalizers: &[String],
    ) -> Result<Value, Error> {
        let meta = Metadata::of(descriptor, resource)?;
        let patch = finalizers_patch(&meta, finalizers).to_string();
        let plural = descriptor.versioned_plural();
        let mut args = vec!["patch", plural.as_str(), meta.name];
        args.extend(meta.scope.kubectl_flags());
        args.extend(["--type=merge", "-p", patch.as_str(), "-o", "json"]);
        self.request(&args, RequestParams::default())
            .await?
            .into_json()
            .ok_or_else(|| decode("patch"))
    }

    /// `kubectl get --raw /apis/G/V` (`/api/v1` for the core group).
    async fn server_resources(
        &self,
        group: &str,
        version: &str,
    ) -> Result<Option<Vec<ApiResource>>, Error> {
        cluster_calls::server_resources(self, group, version).await
    }

    /// `kubectl create --raw /apis/authorization.k8s.io/v1/selfsubjectaccessreviews -f -`.
    async fn can_i(&self, check: &AccessCheck) -> Result<bool, Error> {
        cluster_calls::can_i(self, check).await
    }

    /// `kubectl create --raw /api/v1/namespaces/NS/events -f -`.
    async fn create_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        let namespace = object_name(namespace, "namespace")?;
        cluster_calls::create_event(self, namespace, event).await
    }

    /// `kubectl replace --raw /api/v1/namespaces/NS/events/NAME -f -`.
    async fn update_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        let namespace = object_name(namespace, "namespace")?;
        let name = event
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = object_name(name, "event.metadata.name")?;
        cluster_calls::update_event(self, namespace, name, event).await
    }

    async fn get_lease(&self, namespace: &str, name: &str) -> Result<Option<Lease>, Error> {
        self.lease_get(namespace, name).await
    }

    async fn list_leases(&self, namespace: &str) -> Result<Vec<Lease>, Error> {
        self.lease_list(namespace).await
    }

    async fn create_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        self.lease_create(lease).await
    }

    async fn update_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        self.lease_update(lease).await
    }
}

impl KubectlClient {
    /// `kubectl get <plural>.<version>.<group> [-n NS | --all-namespaces]
    /// [--selector=S] -o json`, returning `items`.
    async fn list_selected(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        selector: Option<&str>,
    ) -> Result<Vec<Value>, Error> {
        let scope = Scope::of_collection(descriptor, namespace)?;
        let plural = descriptor.versioned_plural();
        // One argument, so a selector can never be read as a flag.
        let selector = selector.map(|s| format!("--selector={s}"));
        let mut args = vec!["get", plural.as_str()];
        args.extend(scope.kubectl_flags());
        args.extend(selector.as_deref());
        args.extend(["-o", "json"]);
        let list = self.request(&args, RequestParams::default()).await?;
        list_items(list.into_json()).ok_or_else(|| decode("get"))
    }
}

/// The `items` of a list answer; `None` when it has none (not a list).
fn list_items(list: Option<Value>) -> Option<Vec<Value>> {
    match list? {
        Value::Object(mut list) => match list.remove("items")? {
            Value::Array(items) => Some(items),
            _ => None,
        },
        _ => None,
    }
}
