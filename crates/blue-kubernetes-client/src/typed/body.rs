//! Objects to request bodies and answers back to objects. A body that does
//! not decode is an [`Error::Decode`] naming the operation, never the text.

use crate::{ApiResponse, Error, Method};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Preconditions};
use k8s_openapi::{Metadata, Resource};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// `object` as a request body (k8s-openapi writes `apiVersion` and `kind`).
pub(super) fn encode<T: Serialize>(object: &T) -> Result<Value, Error> {
    serde_json::to_value(object).map_err(|_| Error::InvalidOption {
        field: "body",
        reason: "the object does not serialize to json",
    })
}

/// The answer's body as a `T`, for a request of `method` on `K`.
pub(super) fn decode<K: Resource, T: DeserializeOwned>(
    method: Method,
    answer: ApiResponse,
) -> Result<T, Error> {
    answer
        .body
        .and_then(|body| serde_json::from_value(body).ok())
        .ok_or_else(|| Error::Decode {
            operation: format!("{} {}", method.as_str(), K::KIND),
        })
}

/// `metadata.name` of `object`, which a replace or apply names in its path.
pub(super) fn name_of<K: Metadata<Ty = ObjectMeta>>(object: &K) -> Result<&str, Error> {
    match object.metadata().name.as_deref() {
        Some(name) if !name.is_empty() => Ok(name),
        _ => Err(Error::InvalidOption {
            field: "metadata.name",
            reason: "the object must be named",
        }),
    }
}

/// Preconditions that hold only for exactly `object` as it was read: its
/// uid (not a namesake created since) and its resourceVersion (not changed
/// since). Give them to [`TypedApi::delete`](super::TypedApi::delete).
///
/// ```
/// use blue_kubernetes_client::typed::preconditions_of;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// let read = ConfigMap {
///     metadata: ObjectMeta { uid: Some("u-1".into()), resource_version: Some("42".into()), ..ObjectMeta::default() },
///     ..ConfigMap::default()
/// };
/// let exactly = preconditions_of(&read);
/// assert_eq!(exactly.uid.as_deref(), Some("u-1"));
/// assert_eq!(exactly.resource_version.as_deref(), Some("42"));
/// ```
pub fn preconditions_of<K: Metadata<Ty = ObjectMeta>>(object: &K) -> Preconditions {
    let meta = object.metadata();
    Preconditions {
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
    }
}

/// The `DeleteOptions` body of a delete with `preconditions`, or none when
/// there are none.
pub(super) fn delete_options(preconditions: &Preconditions) -> Option<Value> {
    if preconditions.uid.is_none() && preconditions.resource_version.is_none() {
        return None;
    }
    Some(serde_json::json!({
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "preconditions": preconditions,
    }))
}

/// Which objects [`TypedApi::list`](super::TypedApi::list) returns: start
/// from `ListParams::default()` (all of them) and chain the setters.
///
/// ```
/// use blue_kubernetes_client::typed::ListParams;
/// let mine = ListParams::default().with_labels("app.kubernetes.io/managed-by=my-operator");
/// assert_eq!(mine.label_selector.as_deref(), Some("app.kubernetes.io/managed-by=my-operator"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListParams {
    /// A `labelSelector`, e.g. `app=web,tier!=cache`.
    pub label_selector: Option<String>,
    /// A `fieldSelector`, e.g. `metadata.name=app`.
    pub field_selector: Option<String>,
}

impl ListParams {
    /// Sets [`label_selector`](ListParams::label_selector).
    pub fn with_labels(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Sets [`field_selector`](ListParams::field_selector).
    pub fn with_fields(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }
}
