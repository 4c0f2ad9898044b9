//! What the API server asks: an `admission.k8s.io/v1` AdmissionReview's
//! request, as far as a validating webhook reads it.

use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;

/// An AdmissionReview as the API server sends it: read in one pass
/// straight into the request (its object stays JSON), the rest of the
/// review (`userInfo`, `options`, ...) skipped unread.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Review<'a> {
    #[serde(default, borrow)]
    api_version: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    request: Option<AdmissionRequest>,
}

/// The request of the `admission.k8s.io/v1` AdmissionReview `body`;
/// `None` when `body` is not one or has no request.
pub(super) fn from_review(body: &[u8]) -> Option<AdmissionRequest> {
    let review: Review<'_> = serde_json::from_slice(body).ok()?;
    let versioned = review.api_version.as_deref() == Some("admission.k8s.io/v1")
        && review.kind.as_deref() == Some("AdmissionReview");
    review.request.filter(|_| versioned)
}

/// The operation an admission request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
#[non_exhaustive]
pub enum Operation {
    /// A new object.
    Create,
    /// A changed object (`kubectl apply` of an existing one, a finalizer
    /// added or removed).
    Update,
    /// An object deleted: never validated.
    Delete,
    /// A connection to a subresource (`exec`, `attach`): never validated.
    Connect,
}

/// The resource a request is about (`request.resource`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct GroupVersionResource {
    /// API group (`""` for the core group).
    #[serde(default)]
    pub group: String,
    /// API version.
    #[serde(default)]
    pub version: String,
    /// Plural resource name.
    #[serde(default)]
    pub resource: String,
}

/// One admission request: an AdmissionReview's `request`.
///
/// Built by the webhook from what the API server sends, or by a test
/// with [`create`](Self::create), [`update`](Self::update) and
/// [`delete`](Self::delete).
///
/// ```
/// use blue_kubernetes::admission::{AdmissionRequest, Operation};
/// let object = serde_json::json!({
///     "apiVersion": "example.com/v1", "kind": "Widget",
///     "metadata": {"name": "w", "namespace": "default"},
///     "spec": {"config": {"size": 3}}
/// });
/// let request = AdmissionRequest::create(object);
/// assert_eq!(request.operation, Operation::Create);
/// assert_eq!(request.namespace, "default");
/// ```
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AdmissionRequest {
    /// Identifies the request; the answer repeats it.
    #[serde(default)]
    pub uid: String,
    /// The resource, at the version the webhook is registered for.
    #[serde(default)]
    pub resource: GroupVersionResource,
    /// `status` for the status subresource, empty for the object itself.
    #[serde(default)]
    pub sub_resource: String,
    /// What is done to the object.
    pub operation: Operation,
    /// The object's namespace (empty when cluster-scoped).
    #[serde(default)]
    pub namespace: String,
    /// The object as it would be stored (CREATE and UPDATE).
    #[serde(default)]
    pub object: Option<Value>,
    /// The object as it is stored now (UPDATE and DELETE).
    #[serde(default)]
    pub old_object: Option<Value>,
}

impl AdmissionRequest {
    fn new(operation: Operation, object: Option<Value>, old_object: Option<Value>) -> Self {
        let of = object.as_ref().or(old_object.as_ref());
        let namespace = of
            .and_then(|o| o.pointer("/metadata/namespace"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        Self {
            uid: String::new(),
            resource: GroupVersionResource::default(),
            sub_resource: String::new(),
            operation,
            namespace,
            object,
            old_object,
        }
    }

    /// A CREATE of `object`, for the package whose kind `object` is.
    pub fn create(object: Value) -> Self {
        Self::new(Operation::Create, Some(object), None)
    }

    /// An UPDATE of `old` to `new`.
    pub fn update(old: Value, new: Value) -> Self {
        Self::new(Operation::Update, Some(new), Some(old))
    }

    /// A DELETE of `old`.
    pub fn delete(old: Value) -> Self {
        Self::new(Operation::Delete, None, Some(old))
    }

    /// The same request for the status subresource.
    pub fn of_status(mut self) -> Self {
        self.sub_resource = "status".into();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_is_read_in_one_pass_and_anything_else_is_no_request() {
        let review = br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s\/v1",
            "request":{"uid":"u","operation":"CREATE","namespace":"ns",
            "userInfo":{"username":"admin","groups":["a"]},"options":{"kind":"CreateOptions"},
            "object":{"metadata":{"name":"w"}},"oldObject":null,"dryRun":false}}"#;
        let escaped = String::from_utf8_lossy(review).replace(r"k8s\/v1", r"k8s.io\/v1");
        let request = from_review(escaped.as_bytes()).expect("a request");
        assert_eq!(
            (request.uid.as_str(), request.operation),
            ("u", Operation::Create)
        );
        assert_eq!(request.object.unwrap()["metadata"]["name"], "w");
        assert!(request.old_object.is_none());
        for body in [
            &review[..],
            br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"operation":"CREATE"}}"#,
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"ConversionReview","request":{"operation":"CREATE"}}"#,
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}"#,
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"PATCH"}}"#,
            br#"{"apiVersion":1,"kind":"AdmissionReview","request":{"operation":"CREATE"}}"#,
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}} x"#,
        ] {
            assert!(from_review(body).is_none(), "{}", String::from_utf8_lossy(body));
        }
    }
}
