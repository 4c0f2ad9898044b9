//! The Lease operations of [`KubectlClient`] as raw API requests:
//! `get --raw` (of one or of the collection), `create --raw ... -f -` and
//! `replace --raw ... -f -`.
//!
//! Raw requests keep kubectl from second-guessing the body (no client-side
//! apply logic, no defaulting), so the resourceVersion sent is exactly the
//! one the elector computed from, and a stale one is a 409 Conflict.

use crate::names::object_name;
use crate::{Error, ErrorKind, KubectlClient, Lease, RequestParams};

fn collection(namespace: &str) -> Result<String, Error> {
    let namespace = object_name(namespace, "lease.namespace")?;
    Ok(format!(
        "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    ))
}

fn item(namespace: &str, name: &str) -> Result<String, Error> {
    let name = object_name(name, "lease.name")?;
    Ok(format!("{}/{name}", collection(namespace)?))
}

impl KubectlClient {
    /// `kubectl get --raw /apis/coordination.k8s.io/v1/namespaces/NS/leases/NAME`.
    pub(crate) async fn lease_get(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Lease>, Error> {
        let path = item(namespace, name)?;
        match self
            .request(&["get", "--raw", &path], RequestParams::default())
            .await
        {
            Ok(response) => match response.into_json() {
                Some(object) => Lease::from_object(&object, "get").map(Some),
                None => Err(Error::Decode {
                    operation: "get".into(),
                }),
            },
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `kubectl get --raw /apis/coordination.k8s.io/v1/namespaces/NS/leases`.
    pub(crate) async fn lease_list(&self, namespace: &str) -> Result<Vec<Lease>, Error> {
        let path = collection(namespace)?;
        let response = self
            .request(&["get", "--raw", &path], RequestParams::default())
            .await?;
        let decode = || Error::Decode {
            operation: "list".into(),
        };
        let list = response.into_json().ok_or_else(decode)?;
        let items = list["items"].as_array().ok_or_else(decode)?;
        items
            .iter()
            .map(|item| Lease::from_object(item, "list"))
            .collect()
    }

    /// `kubectl create --raw .../namespaces/NS/leases -f -` (a POST).
    pub(crate) async fn lease_create(&self, lease: &Lease) -> Result<Lease, Error> {
        let path = collection(&lease.namespace)?;
        object_name(&lease.name, "lease.name")?;
        let mut body = lease.clone();
        body.resource_version = None;
        self.lease_write("create", &path, &body).await
    }

    /// `kubectl replace --raw .../namespaces/NS/leases/NAME -f -` (a PUT
    /// carrying the resourceVersion).
    pub(crate) async fn lease_update(&self, lease: &Lease) -> Result<Lease, Error> {
        if lease.resource_version.as_deref().is_none_or(str::is_empty) {
            return Err(Error::InvalidOption {
                field: "lease.resource_version",
                reason: "is required: an unguarded lease update could steal a held lease",
            });
        }
        let path = item(&lease.namespace, &lease.name)?;
        self.lease_write("replace", &path, lease).await
    }

    async fn lease_write(&self, verb: &str, path: &str, lease: &Lease) -> Result<Lease, Error> {
        let options = RequestParams::default().with_input(lease.to_object().to_string());
        let stored = self
            .request(&[verb, "--raw", path, "-f", "-"], options)
            .await?
            .into_json()
            .ok_or_else(|| Error::Decode {
                operation: verb.to_owned(),
            })?;
        Lease::from_object(&stored, verb)
    }
}
