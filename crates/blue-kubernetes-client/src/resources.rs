//! [`Client`] for [`KubectlClient`]: the resource operations as kubectl
//! commands (the cluster-level ones are in `cluster_calls`).
//!
//! Both writes carry the snapshot's `metadata.resourceVersion`, so the API
//! server rejects them with 409 Conflict when the object changed since the
//! snapshot was read (optimistic concurrency, verified against a real
//! kube-apiserver, see `notes/kubectl.md`).

use crate::cluster_calls;
use crate::{
    AccessCheck, ApiResource, Client, Error, KubectlClient, Lease, RequestOptions,
    ResourceDescriptor,
};
use serde_json::{json, Value};

#[async_trait::async_trait]
impl Client for KubectlClient {
    /// `kubectl get <plural>.<version>.<group> -n NS -o json`, returning `items`.
    async fn list_resources(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
    ) -> Result<Vec<Value>, Error> {
        let namespace = object_name(namespace, "namespace")?;
        let args = [
            "get",
            &descriptor.versioned_plural(),
            "-n",
            namespace,
            "-o",
            "json",
        ];
        let list = self.request(&args, RequestOptions::default()).await?;
        list_items(list.into_json()).ok_or_else(|| decode("get"))
    }

    /// `kubectl get <plural>.<version>.<group> NAME -n NS --ignore-not-found -o json`.
    async fn get_resource(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        let namespace = object_name(namespace, "namespace")?;
        let name = object_name(name, "name")?;
        let args = [
            "get",
            &descriptor.versioned_plural(),
            name,
            "-n",
            namespace,
            "--ignore-not-found",
            "-o",
            "json",
        ];
        let object = self.request(&args, RequestOptions::default()).await?;
        Ok(object.into_json())
    }

    /// `kubectl replace --raw /apis/G/V/namespaces/NS/PLURAL/NAME/status -f -`
    /// with `{apiVersion, kind, metadata: {name, namespace, uid,
    /// resourceVersion}, status}` as the input document.
    async fn update_status(
        &self,
        descriptor: &ResourceDescriptor,
        resource: &Value,
        status: &Value,
    ) -> Result<Value, Error> {
        let meta = Metadata::of(resource)?;
        let body = status_body(descriptor, resource, status)?;
        let path = format!(
            "/apis/{}/{}/namespaces/{}/{}/{}/status",
            descriptor.group, descriptor.version, meta.namespace, descriptor.plural, meta.name
        );
        let args = ["replace", "--raw", &path, "-f", "-"];
        let options = RequestOptions::default().with_input(body.to_string());
        self.request(&args, options)
            .await?
            .into_json()
            .ok_or_else(|| decode("replace"))
    }

    /// `kubectl patch <plural>.<version>.<group> NAME -n NS --type=merge -p
    /// {"metadata":{"resourceVersion":RV,"finalizers":[...]}} -o json`.
    async fn update_finalizers(
        &self,
        descriptor: &ResourceDescriptor,
        resource: &Value,
        finalizers: &[String],
    ) -> Result<Value, Error> {
        let meta = Metadata::of(resource)?;
        let patch = finalizers_patch(&meta, finalizers);
        let args = [
            "patch",
            &descriptor.versioned_plural(),
            meta.name,
            "-n",
            meta.namespace,
            "--type=merge",
            "-p",
            &patch.to_string(),
            "-o",
            "json",
        ];
        self.request(&args, RequestOptions::default())
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

    async fn create_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        self.lease_create(lease).await
    }

    async fn update_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        self.lease_update(lease).await
    }
}

/// The metadata both writes need, validated.
pub(crate) struct Metadata<'a> {
    pub(crate) name: &'a str,
    pub(crate) namespace: &'a str,
    pub(crate) resource_version: &'a str,
}

/// The `items` of a list answer; `None` when it has none (not a list).
pub(crate) fn list_items(list: Option<Value>) -> Option<Vec<Value>> {
    match list? {
        Value::Object(mut list) => match list.remove("items")? {
            Value::Array(items) => Some(items),
            _ => None,
        },
        _ => None,
    }
}

/// The body of a status write: `{apiVersion, kind, metadata: {name,
/// namespace, uid, resourceVersion}, status}`, the same for every transport.
pub(crate) fn status_body(
    descriptor: &ResourceDescriptor,
    resource: &Value,
    status: &Value,
) -> Result<Value, Error> {
    let meta = Metadata::of(resource)?;
    let uid = metadata_field(resource, "uid", "resource.metadata.uid")?;
    Ok(json!({
        "apiVersion": descriptor.api_version(),
        "kind": descriptor.kind,
        "metadata": {
            "name": meta.name,
            "namespace": meta.namespace,
            "uid": uid,
            "resourceVersion": meta.resource_version,
        },
        "status": status,
    }))
}

/// The merge patch of a finalizer write, guarded by the snapshot's
/// resourceVersion: `{"metadata":{"resourceVersion":RV,"finalizers":[...]}}`.
pub(crate) fn finalizers_patch(meta: &Metadata<'_>, finalizers: &[String]) -> Value {
    json!({
        "metadata": {
            "resourceVersion": meta.resource_version,
            "finalizers": finalizers,
        }
    })
}

impl<'a> Metadata<'a> {
    pub(crate) fn of(resource: &'a Value) -> Result<Self, Error> {
        Ok(Self {
            name: object_name(
                metadata_field(resource, "name", "resource.metadata.name")?,
                "resource.metadata.name",
            )?,
            namespace: object_name(
                metadata_field(resource, "namespace", "resource.metadata.namespace")?,
                "resource.metadata.namespace",
            )?,
            resource_version: metadata_field(
                resource,
                "resourceVersion",
                "resource.metadata.resourceVersion",
            )?,
        })
    }
}

/// A non-empty string at `metadata.<key>`; a write without it would either
/// hit the wrong object or lose its optimistic-concurrency guard.
pub(crate) fn metadata_field<'a>(
    resource: &'a Value,
    key: &str,
    field: &'static str,
) -> Result<&'a str, Error> {
    resource
        .get("metadata")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or(Error::InvalidOption {
            field,
            reason: "is missing, empty or not a string",
        })
}

/// Names and namespaces end up in argv and in a URL path: refuse anything
/// that could read as a flag or change the path. Kubernetes names never
/// contain these characters, so valid objects are unaffected.
pub(crate) fn object_name<'a>(value: &'a str, field: &'static str) -> Result<&'a str, Error> {
    let unsafe_char = |c: char| c.is_whitespace() || c.is_control() || "/?#%\\".contains(c);
    if value.is_empty()
        || value.starts_with('-')
        || value == "."
        || value == ".."
        || value.contains(unsafe_char)
    {
        return Err(Error::InvalidOption {
            field,
            reason: "is not a valid kubernetes object name",
        });
    }
    Ok(value)
}

pub(crate) fn decode(operation: &str) -> Error {
    Error::Decode {
        operation: operation.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_escape_argv_or_the_path_are_refused() {
        for bad in ["", "-o=yaml", "a/b", "..", "a b", "a?b", "a%2Fb"] {
            assert!(object_name(bad, "name").is_err(), "{bad:?}");
        }
        for good in ["w", "my-widget.v2", "default"] {
            assert_eq!(object_name(good, "name").unwrap(), good);
        }
    }

    #[test]
    fn missing_metadata_names_the_field() {
        let resource = json!({"metadata": {"name": "w", "namespace": "default"}});
        let err = Metadata::of(&resource).err().unwrap();
        assert!(matches!(
            err,
            Error::InvalidOption {
                field: "resource.metadata.resourceVersion",
                ..
            }
        ));
    }
}
