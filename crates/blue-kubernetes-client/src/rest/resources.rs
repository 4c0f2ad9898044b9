//! The resource operations as API requests, and [`rest_client!`], which
//! implements [`Client`](crate::Client) and [`RawApi`](crate::RawApi) for
//! a transport with them.
//!
//! The same guarantees as the per-call transport: the status write is a PUT
//! to `/status` and the finalizer write a merge patch, both carrying the
//! snapshot's `metadata.resourceVersion`, so a concurrent change makes the
//! API server answer 409 Conflict.

use super::{decode, exchange, refused, send, HttpTransport};
use crate::names::object_name;
use crate::scope::Scope;
use crate::writes::{finalizers_patch, status_write, Metadata};
use crate::{ApiRequest, Error, ListPage, Method, PageRequest, PatchType, ResourceDescriptor};
use serde_json::Value;

/// Implements [`Client`](crate::Client) and [`RawApi`](crate::RawApi) for
/// an [`HttpTransport`] with the requests of this module: written once
/// for every HTTP transport, and still a plain `impl Client for X` in each
/// transport's documentation.
macro_rules! rest_client {
    ($transport:ty) => {
        #[async_trait::async_trait]
        impl $crate::RawApi for $transport {
            async fn send(
                &self,
                request: $crate::ApiRequest,
            ) -> Result<$crate::ApiResponse, $crate::Error> {
                $crate::rest::send(self, request).await
            }
        }

        #[async_trait::async_trait]
        impl $crate::Client for $transport {
            /// The same request as [`RawApi::send`](crate::RawApi::send).
            async fn send_raw(
                &self,
                request: $crate::ApiRequest,
            ) -> Result<$crate::ApiResponse, $crate::Error> {
                $crate::rest::send(self, request).await
            }

            /// Every page of [`list_page`](crate::Client::list_page) with
            /// [`DEFAULT_PAGE_LIMIT`](crate::DEFAULT_PAGE_LIMIT); an expired
            /// continue token restarts the list from the first page once.
            async fn list_resources(
                &self,
                descriptor: &$crate::ResourceDescriptor,
                namespace: &str,
            ) -> Result<Vec<serde_json::Value>, $crate::Error> {
                let limit = $crate::DEFAULT_PAGE_LIMIT;
                $crate::pagination::list_all(self, descriptor, namespace, limit).await
            }

            /// `GET /apis/G/V/namespaces/NS/PLURAL?limit=N[&continue=TOKEN][&labelSelector=S]`
            /// (`/apis/G/V/PLURAL?...` for every namespace or a
            /// cluster-scoped type). An expired token fails with
            /// [`ErrorKind::Gone`](crate::ErrorKind::Gone).
            async fn list_page(
                &self,
                descriptor: &$crate::ResourceDescriptor,
                namespace: &str,
                page: &$crate::PageRequest,
            ) -> Result<$crate::ListPage, $crate::Error> {
                $crate::rest::resources::list_page(self, descriptor, namespace, page).await
            }

            /// `GET .../PLURAL?watch=1&resourceVersion=RV&timeoutSeconds=T[&allowWatchBookmarks=true][&labelSelector=S]`,
            /// its events decoded as they arrive; the request deadline
            /// covers only the response headers.
            async fn watch(
                &self,
                descriptor: &$crate::ResourceDescriptor,
                namespace: &str,
                request: &$crate::WatchRequest,
            ) -> Result<$crate::WatchStream, $crate::Error> {
                $crate::rest::watch(self, descriptor, namespace, request).await
            }

            /// `GET .../PLURAL/NAME`; `None` when the API server says that
            /// object is not found (a missing type is still an error, as
            /// with kubectl).
            async fn get_resource(
                &self,
                descriptor: &$crate::ResourceDescriptor,
                namespace: &str,
                name: &str,
            ) -> Result<Option<serde_json::Value>, $crate::Error> {
                $crate::rest::resources::get_resource(self, descriptor, namespace, name, false)
                    .await
            }

            /// `GET .../PLURAL/NAME?resourceVersion=0`: served from the API
            /// server's watch cache.
            async fn get_resource_cached(
                &self,
                descriptor: &$crate::ResourceDescriptor,
                namespace: &str,
                name: &str,
            ) -> Result<Option<serde_json::Value>, $crate::Error> {
                $crate::rest::resources::get_resource(self, descriptor, namespace, name, true).await
            }

            /// `PUT .../PLURAL/NAME/status` with `{apiVersion, kind,
            /// metadata: {name, namespace, uid, resourceVersion}, status}`.
            async fn update_status(
                &self,
                descriptor: &$crate::ResourceDescriptor,
                resource: &serde_json::Value,
                status: &serde_json::Value,
            ) -> Result<serde_json::Value, $crate::Error> {
                $crate::rest::resources::update_status(self, descriptor, resource, status).await
            }

            /// `PATCH .../PLURAL/NAME` (merge patch)
            /// `{"metadata":{"resourceVersion":RV,"finalizers":[...]}}`.
            async fn update_finalizers(
                &self,
                descriptor: &$crate::ResourceDescriptor,
                resource: &serde_json::Value,
                finalizers: &[String],
            ) -> Result<serde_json::Value, $crate::Error> {
                $crate::rest::resources::update_finalizers(self, descriptor, resource, finalizers)
                    .await
            }

            /// `GET /apis/G/V` (`/api/V` for the core group).
            async fn server_resources(
                &self,
                group: &str,
                version: &str,
            ) -> Result<Option<Vec<$crate::ApiResource>>, $crate::Error> {
                $crate::rest::discover(self, group, version).await
            }

            /// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`.
            async fn can_i(&self, check: &$crate::AccessCheck) -> Result<bool, $crate::Error> {
                $crate::rest::review(self, check).await
            }

            /// `POST /api/v1/namespaces/NS/events`.
            async fn create_event(
                &self,
                namespace: &str,
                event: &serde_json::Value,
            ) -> Result<serde_json::Value, $crate::Error> {
                $crate::rest::write_event(self, namespace, None, event).await
            }

            /// `PUT /api/v1/namespaces/NS/events/NAME`.
            async fn update_event(
                &self,
                namespace: &str,
                event: &serde_json::Value,
            ) -> Result<serde_json::Value, $crate::Error> {
                let name = event
                    .pointer("/metadata/name")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default();
                $crate::rest::write_event(self, namespace, Some(name), event).await
            }

            async fn get_lease(
                &self,
                namespace: &str,
                name: &str,
            ) -> Result<Option<$crate::Lease>, $crate::Error> {
                $crate::rest::lease_get(self, namespace, name).await
            }

            async fn list_leases(
                &self,
                namespace: &str,
            ) -> Result<Vec<$crate::Lease>, $crate::Error> {
                $crate::rest::lease_list(self, namespace).await
            }

            async fn create_lease(
                &self,
                lease: &$crate::Lease,
            ) -> Result<$crate::Lease, $crate::Error> {
                $crate::rest::lease_create(self, lease).await
            }

            async fn update_lease(
                &self,
                lease: &$crate::Lease,
            ) -> Result<$crate::Lease, $crate::Error> {
                $crate::rest::lease_update(self, lease).await
            }
        }
    };
}
pub(crate) use rest_client;

pub(crate) async fn list_page<T: HttpTransport>(
    transport: &T,
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
    if let Some(selector) = &page.label_selector {
        path = path.with_query("labelSelector", selector);
    }
    let list = send(transport, ApiRequest::get(path)).await?;
    crate::pagination::page_of(list.body).ok_or_else(|| decode::<T>("response"))
}

pub(crate) async fn get_resource<T: HttpTransport>(
    transport: &T,
    descriptor: &ResourceDescriptor,
    namespace: &str,
    name: &str,
    cached: bool,
) -> Result<Option<Value>, Error> {
    let name = object_name(name, "name")?;
    let scope = Scope::of_object(descriptor, Some(namespace), "namespace")?;
    let mut path = scope.path(descriptor, Some(name), None)?;
    if cached {
        path = path.with_query("resourceVersion", "0");
    }
    let request = ApiRequest::get(path);
    let (status, body) = exchange(transport, &request).await?;
    if status == 404 && names_missing_object(&body, name) {
        return Ok(None);
    }
    if !(200..300).contains(&status) {
        return Err(refused("GET", status, &body));
    }
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|_| decode::<T>("response"))
}

pub(crate) async fn update_status<T: HttpTransport>(
    transport: &T,
    descriptor: &ResourceDescriptor,
    resource: &Value,
    status: &Value,
) -> Result<Value, Error> {
    let (path, body) = status_write(descriptor, resource, status)?;
    let request = ApiRequest::new(Method::Put, path).with_body(body);
    let stored = send(transport, request).await?;
    stored.body.ok_or_else(|| decode::<T>("response"))
}

pub(crate) async fn update_finalizers<T: HttpTransport>(
    transport: &T,
    descriptor: &ResourceDescriptor,
    resource: &Value,
    finalizers: &[String],
) -> Result<Value, Error> {
    let meta = Metadata::of(descriptor, resource)?;
    let path = meta.scope.path(descriptor, Some(meta.name), None)?;
    let patch = finalizers_patch(&meta, finalizers);
    let request = ApiRequest::new(Method::Patch(PatchType::Merge), path).with_body(patch);
    let stored = send(transport, request).await?;
    stored.body.ok_or_else(|| decode::<T>("response"))
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
