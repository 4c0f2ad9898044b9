//! [`Client`] for [`ProxyClient`]: the resource operations as API requests.
//!
//! The same guarantees as the per-call transport: the status write is a PUT
//! to `/status` and the finalizer write a merge patch, both carrying the
//! snapshot's `metadata.resourceVersion`, so a concurrent change makes the
//! API server answer 409 Conflict.

use crate::http_status::classify_http;
use crate::names::object_name;
use crate::pagination::{list_all, page_of};
use crate::scope::Scope;
use crate::writes::{finalizers_patch, status_body, Metadata};
use crate::{AccessCheck, ApiResource, Lease};
use crate::{
    ApiRequest, Client, Error, Method, PatchType, ProxyClient, RawApi, ResourceDescriptor,
};
use crate::{ListPage, PageRequest, WatchRequest, WatchStream, DEFAULT_PAGE_LIMIT};
use serde_json::Value;

#[async_trait::async_trait]
impl Client for ProxyClient {
    /// The same request as [`RawApi::send`](crate::RawApi::send).
    async fn send_raw(
        &self,
        request: crate::ApiRequest,
    ) -> Result<crate::ApiResponse, crate::Error> {
        crate::RawApi::send(self, request).await
    }

    /// Every page of [`list_page`](Client::list_page) with
    /// [`DEFAULT_PAGE_LIMIT`]; an expired continue token restarts the list
    /// from the first page once.
    async fn list_resources(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
    ) -> Result<Vec<Value>, Error> {
        list_all(self, descriptor, namespace, DEFAULT_PAGE_LIMIT).await
    }

    /// `GET /apis/G/V/namespaces/NS/PLURAL?limit=N[&continue=TOKEN]`
    /// (`/apis/G/V/PLURAL?...` for every namespace or a cluster-scoped
    /// type). An expired token fails with
    /// [`ErrorKind::Gone`](crate::ErrorKind::Gone).
    async fn list_page(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        page: &PageRequest,
    ) -> Result<ListPage, Error> {
        let mut path = Scope::of_collection(descriptor, namespace)?.path(descriptor, None, None)?;
        if page.limit > 0 {
            path = path.with_query("limit", &page.limit.to_string());
        }
        if let Some(token) = &page.continue_token {
            path = path.with_query("continue", token);
        }
        let list = self.send(ApiRequest::get(path)).await?;
        page_of(list.body).ok_or_else(decode)
    }

    /// `GET .../PLURAL?watch=1&resourceVersion=RV&timeoutSeconds=T[&allowWatchBookmarks=true]`
    /// on a connection of its own; see [`ProxyClient`] for deadlines.
    async fn watch(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        request: &WatchRequest,
    ) -> Result<WatchStream, Error> {
        let path = Scope::of_collection(descriptor, namespace)?.path(descriptor, None, None)?;
        self.open_watch(path, request).await
    }

    /// `GET .../PLURAL/NAME`; `None` when the API server says that object is
    /// not found (a missing type is still an error, as with kubectl).
    async fn get_resource(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        let name = object_name(name, "name")?;
        let scope = Scope::of_object(descriptor, Some(namespace), "namespace")?;
        let request = ApiRequest::get(scope.path(descriptor, Some(name), None)?);
        let (status, body) = self.exchange(&request).await?;
        if status == 404 && names_missing_object(&body, name) {
            return Ok(None);
        }
        if !(200..300).contains(&status) {
            return Err(Error::Http {
                method: "GET",
                status,
                kind: classify_http(status, &body),
            });
        }
        serde_json::from_slice(&body)
            .map(Some)
            .map_err(|_| decode())
    }

    /// `PUT .../PLURAL/NAME/status` with `{apiVersion, kind, metadata: {name,
    /// namespace, uid, resourceVersion}, status}`.
    async fn update_status(
        &self,
        descriptor: &ResourceDescriptor,
        resource: &Value,
        status: &Value,
    ) -> Result<Value, Error> {
        let meta = Metadata::of(descriptor, resource)?;
        let body = status_body(descriptor, resource, status)?;
        let path = meta
            .scope
            .path(descriptor, Some(meta.name), Some("status"))?;
        let request = ApiRequest::new(Method::Put, path).with_body(body);
        self.send(request).await?.body.ok_or_else(decode)
    }

    /// `PATCH .../PLURAL/NAME` (merge patch)
    /// `{"metadata":{"resourceVersion":RV,"finalizers":[...]}}`.
    async fn update_finalizers(
        &self,
        descriptor: &ResourceDescriptor,
        resource: &Value,
        finalizers: &[String],
    ) -> Result<Value, Error> {
        let meta = Metadata::of(descriptor, resource)?;
        let path = meta.scope.path(descriptor, Some(meta.name), None)?;
        let patch = finalizers_patch(&meta, finalizers);
        let request = ApiRequest::new(Method::Patch(PatchType::Merge), path).with_body(patch);
        self.send(request).await?.body.ok_or_else(decode)
    }

    /// `GET /apis/G/V` (`/api/V` for the core group).
    async fn server_resources(
        &self,
        group: &str,
        version: &str,
    ) -> Result<Option<Vec<ApiResource>>, Error> {
        self.discover(group, version).await
    }

    /// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`.
    async fn can_i(&self, check: &AccessCheck) -> Result<bool, Error> {
        self.review(check).await
    }

    /// `POST /api/v1/namespaces/NS/events`.
    async fn create_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        self.write_event(namespace, None, event).await
    }

    /// `PUT /api/v1/namespaces/NS/events/NAME`.
    async fn update_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        let name = event
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        self.write_event(namespace, Some(name), event).await
    }

    async fn get_lease(&self, namespace: &str, name: &str) -> Result<Option<Lease>, Error> {
        self.lease_get(namespace, name).await
    }

    async fn create_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        self.lease_create(lease).await
    }

    async fn update_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        self.lease_update(lease).await
    }
}

/// True when a 404 body is the `Status` of a missing object named `name`
/// (a missing type or path has no such details).
fn names_missing_object(body: &[u8], name: &str) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|status| {
        status["kind"] == "Status"
            && status["reason"] == "NotFound"
            && status["details"]["name"] == name
    })
}

fn decode() -> Error {
    Error::Decode {
        operation: "proxy response".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_missing_object_reads_as_absent() {
        let object =
            br#"{"kind":"Status","reason":"NotFound","details":{"name":"w","kind":"widgets"}}"#;
        assert!(names_missing_object(object, "w"));
        assert!(!names_missing_object(object, "other"));
        let no_type = br#"{"kind":"Status","reason":"NotFound","details":{}}"#;
        assert!(!names_missing_object(no_type, "w"));
        assert!(!names_missing_object(b"404 page not found", "w"));
    }
}
