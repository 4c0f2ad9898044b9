//! The Lease operations of [`ProxyClient`] as raw API requests: GET, POST
//! and a PUT carrying the resourceVersion (a stale one is a 409 Conflict).

use crate::names::object_name;
use crate::{ApiPath, ApiRequest, Error, ErrorKind, Lease, Method, ProxyClient, RawApi};

fn path(namespace: &str, name: Option<&str>) -> Result<ApiPath, Error> {
    let namespace = object_name(namespace, "lease.namespace")?;
    let name = name.map(|n| object_name(n, "lease.name")).transpose()?;
    ApiPath::namespaced("coordination.k8s.io", "v1", namespace, "leases", name, None)
}

fn stored(answer: crate::ApiResponse, operation: &str) -> Result<Lease, Error> {
    let object = answer.body.ok_or_else(|| Error::Decode {
        operation: format!("proxy {operation}"),
    })?;
    Lease::from_object(&object, operation)
}

impl ProxyClient {
    pub(crate) async fn lease_get(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Lease>, Error> {
        match self
            .send(ApiRequest::get(path(namespace, Some(name))?))
            .await
        {
            Ok(answer) => stored(answer, "get").map(Some),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub(crate) async fn lease_create(&self, lease: &Lease) -> Result<Lease, Error> {
        object_name(&lease.name, "lease.name")?;
        let mut body = lease.clone();
        body.resource_version = None;
        let request = ApiRequest::new(Method::Post, path(&lease.namespace, None)?)
            .with_body(body.to_object());
        stored(self.send(request).await?, "create")
    }

    pub(crate) async fn lease_update(&self, lease: &Lease) -> Result<Lease, Error> {
        if lease.resource_version.as_deref().is_none_or(str::is_empty) {
            return Err(Error::InvalidOption {
                field: "lease.resource_version",
                reason: "is required: an unguarded lease update could steal a held lease",
            });
        }
        let request = ApiRequest::new(Method::Put, path(&lease.namespace, Some(&lease.name))?)
            .with_body(lease.to_object());
        stored(self.send(request).await?, "replace")
    }
}
