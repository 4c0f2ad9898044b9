//! The two guarded writes' bodies, the same for every transport: a status
//! write and a finalizer patch, each carrying the snapshot's
//! `metadata.resourceVersion` so a stale snapshot is a 409 Conflict.

use crate::names::object_name;
use crate::scope::Scope;
use crate::{ApiPath, Error, ResourceDescriptor};
use serde_json::{json, Value};

/// The metadata both writes need, validated.
pub(crate) struct Metadata<'a> {
    pub(crate) name: &'a str,
    /// The object's namespace, or [`Scope::Cluster`] for a cluster-scoped type.
    pub(crate) scope: Scope<'a>,
    pub(crate) resource_version: &'a str,
}

impl<'a> Metadata<'a> {
    /// The namespace is required for (and only read for) a namespaced type.
    pub(crate) fn of(descriptor: &ResourceDescriptor, resource: &'a Value) -> Result<Self, Error> {
        let namespace = metadata_field(resource, "namespace", "resource.metadata.namespace");
        Ok(Self {
            name: object_name(
                metadata_field(resource, "name", "resource.metadata.name")?,
                "resource.metadata.name",
            )?,
            scope: Scope::of_object(descriptor, namespace.ok(), "resource.metadata.namespace")?,
            resource_version: metadata_field(
                resource,
                "resourceVersion",
                "resource.metadata.resourceVersion",
            )?,
        })
    }
}

/// A status write's path (the object's `/status` subresource) and body:
/// `{apiVersion, kind, metadata: {name, namespace, uid, resourceVersion},
/// status}`.
pub(crate) fn status_write(
    descriptor: &ResourceDescriptor,
    resource: &Value,
    status: &Value,
) -> Result<(ApiPath, Value), Error> {
    let meta = Metadata::of(descriptor, resource)?;
    let path = meta
        .scope
        .path(descriptor, Some(meta.name), Some("status"))?;
    let uid = metadata_field(resource, "uid", "resource.metadata.uid")?;
    let mut metadata = json!({
        "name": meta.name,
        "uid": uid,
        "resourceVersion": meta.resource_version,
    });
    if let Some(namespace) = meta.scope.namespace() {
        metadata["namespace"] = json!(namespace);
    }
    let body = json!({
        "apiVersion": descriptor.api_version(),
        "kind": descriptor.kind,
        "metadata": metadata,
        "status": status,
    });
    Ok((path, body))
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

/// A non-empty string at `metadata.<key>`; a write without it would either
/// hit the wrong object or lose its optimistic-concurrency guard.
fn metadata_field<'a>(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_metadata_names_the_field() {
        let resource = json!({"metadata": {"name": "w", "namespace": "default"}});
        let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
        let err = Metadata::of(&widgets, &resource).err().unwrap();
        assert!(matches!(
            err,
            Error::InvalidOption {
                field: "resource.metadata.resourceVersion",
                ..
            }
        ));
    }
}
