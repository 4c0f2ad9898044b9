//! The cluster-level calls: discovery, access reviews and Events, as raw
//! API requests.

use super::{decode, send, HttpTransport};
use crate::names::object_name;
use crate::{AccessCheck, ApiPath, ApiRequest, ApiResource, Error, ErrorKind, Method};
use serde_json::Value;

/// `GET /api/V` or `/apis/G/V`; `None` when that group/version is not served.
pub(crate) async fn discover<T: HttpTransport>(
    transport: &T,
    group: &str,
    version: &str,
) -> Result<Option<Vec<ApiResource>>, Error> {
    let path = match group {
        "" => ApiPath::new(["api", version])?,
        group => ApiPath::new(["apis", group, version])?,
    };
    let list = match send(transport, ApiRequest::get(path)).await {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        other => other?.body,
    };
    let resources = list
        .and_then(|mut l| l.get_mut("resources").map(Value::take))
        .ok_or_else(|| decode::<T>("GET"))?;
    serde_json::from_value(resources)
        .map(Some)
        .map_err(|_| decode::<T>("GET"))
}

/// `POST` of a `SelfSubjectAccessReview`; its `status.allowed`.
pub(crate) async fn review<T: HttpTransport>(
    transport: &T,
    check: &AccessCheck,
) -> Result<bool, Error> {
    let path = ApiPath::parse("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")?;
    let request = ApiRequest::new(Method::Post, path).with_body(check.review());
    let review = send(transport, request)
        .await?
        .body
        .ok_or_else(|| decode::<T>("POST"))?;
    review
        .pointer("/status/allowed")
        .and_then(Value::as_bool)
        .ok_or_else(|| decode::<T>("POST"))
}

/// `POST /api/v1/namespaces/NS/events`, or with `name` a `PUT` of it.
pub(crate) async fn write_event<T: HttpTransport>(
    transport: &T,
    namespace: &str,
    name: Option<&str>,
    event: &Value,
) -> Result<Value, Error> {
    let namespace = object_name(namespace, "namespace")?;
    let (method, path) = match name {
        None => (
            Method::Post,
            ApiPath::namespaced("", "v1", namespace, "events", None, None)?,
        ),
        Some(name) => {
            let name = object_name(name, "event.metadata.name")?;
            let path = ApiPath::namespaced("", "v1", namespace, "events", Some(name), None)?;
            (Method::Put, path)
        }
    };
    send(
        transport,
        ApiRequest::new(method, path).with_body(event.clone()),
    )
    .await?
    .body
    .ok_or_else(|| decode::<T>(method.as_str()))
}
