//! The Lease operations as raw API requests: GET (of one or of the
//! collection), POST and a PUT carrying the resourceVersion (a stale one is
//! a 409 Conflict).

use super::{decode, send, HttpTransport};
use crate::names::object_name;
use crate::{ApiPath, ApiRequest, ApiResponse, Error, ErrorKind, Lease, Method};

fn path(namespace: &str, name: Option<&str>) -> Result<ApiPath, Error> {
    let namespace = object_name(namespace, "lease.namespace")?;
    let name = name.map(|n| object_name(n, "lease.name")).transpose()?;
    ApiPath::namespaced("coordination.k8s.io", "v1", namespace, "leases", name, None)
}

fn stored<T: HttpTransport>(answer: ApiResponse, operation: &str) -> Result<Lease, Error> {
    let object = answer.body.ok_or_else(|| decode::<T>(operation))?;
    Lease::from_object(&object, operation)
}

pub(crate) async fn lease_get<T: HttpTransport>(
    transport: &T,
    namespace: &str,
    name: &str,
) -> Result<Option<Lease>, Error> {
    let request = ApiRequest::get(path(namespace, Some(name))?);
    match send(transport, request).await {
        Ok(answer) => stored::<T>(answer, "get").map(Some),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

pub(crate) async fn lease_list<T: HttpTransport>(
    transport: &T,
    namespace: &str,
) -> Result<Vec<Lease>, Error> {
    let request = ApiRequest::get(path(namespace, None)?);
    let list = send(transport, request).await?.body;
    let items = list.as_ref().and_then(|l| l["items"].as_array());
    let items = items.ok_or_else(|| decode::<T>("list"))?;
    items
        .iter()
        .map(|item| Lease::from_object(item, "list"))
        .collect()
}

pub(crate) async fn lease_create<T: HttpTransport>(
    transport: &T,
    lease: &Lease,
) -> Result<Lease, Error> {
    object_name(&lease.name, "lease.name")?;
    let mut body = lease.clone();
    body.resource_version = None;
    let request =
        ApiRequest::new(Method::Post, path(&lease.namespace, None)?).with_body(body.to_object());
    stored::<T>(send(transport, request).await?, "create")
}

pub(crate) async fn lease_update<T: HttpTransport>(
    transport: &T,
    lease: &Lease,
) -> Result<Lease, Error> {
    if lease.resource_version.as_deref().is_none_or(str::is_empty) {
        return Err(Error::InvalidOption {
            field: "lease.resource_version",
            reason: "is required: an unguarded lease update could steal a held lease",
        });
    }
    let request = ApiRequest::new(Method::Put, path(&lease.namespace, Some(&lease.name))?)
        .with_body(lease.to_object());
    stored::<T>(send(transport, request).await?, "replace")
}
