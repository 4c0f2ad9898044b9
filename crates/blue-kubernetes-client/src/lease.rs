//! `coordination.k8s.io/v1` Leases, typed: what leader election reads and
//! writes.
//!
//! Only the fields leader election uses are kept. Times are the API's
//! `MicroTime` text (RFC 3339 with microseconds); electors compare records,
//! never these times against their own clock, so clock skew between
//! machines does not matter.

use crate::Error;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// `apiVersion` of a Lease.
pub const LEASE_API_VERSION: &str = "coordination.k8s.io/v1";

/// A Lease object: where it lives, the version it was read at, its
/// identity and annotations (an elector may keep durable state there, in
/// the same guarded write), and its spec.
///
/// ```
/// use blue_kubernetes_client::{Lease, LeaseSpec};
/// let lease = Lease::new("default", "my-operator", LeaseSpec {
///     holder_identity: Some("pod-a-1f2e".into()),
///     lease_duration_seconds: Some(15),
///     ..LeaseSpec::default()
/// });
/// assert_eq!(lease.to_object()["spec"]["holderIdentity"], "pod-a-1f2e");
/// assert!(lease.resource_version.is_none());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.resourceVersion`: `None` for a Lease to create; an update
    /// carries the version it was computed from, so a stale one fails with
    /// [`ErrorKind::Conflict`](crate::ErrorKind::Conflict).
    pub resource_version: Option<String>,
    /// `metadata.uid`: assigned by the API server when the Lease is
    /// created, so a Lease deleted and created again has a new one. `None`
    /// for a Lease to create.
    pub uid: Option<String>,
    /// `metadata.annotations`. Sent back on every update, so a replace
    /// keeps what others stored there.
    pub annotations: BTreeMap<String, String>,
    /// `spec`.
    pub spec: LeaseSpec,
}

/// The `spec` of a Lease (`coordination.k8s.io/v1` `LeaseSpec`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseSpec {
    /// Who holds the lease; `None` (or empty) when released.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_identity: Option<String>,
    /// How long a holder may go without renewing before others may take over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_duration_seconds: Option<i32>,
    /// When the current holder acquired it (`MicroTime` text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acquire_time: Option<String>,
    /// When the current holder last renewed it (`MicroTime` text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_time: Option<String>,
    /// How many times the holder changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_transitions: Option<i32>,
}

impl LeaseSpec {
    /// The holder, treating an empty identity as none (how other electors
    /// release).
    ///
    /// ```
    /// use blue_kubernetes_client::LeaseSpec;
    /// let released = LeaseSpec { holder_identity: Some(String::new()), ..LeaseSpec::default() };
    /// assert_eq!(released.holder(), None);
    /// ```
    pub fn holder(&self) -> Option<&str> {
        self.holder_identity.as_deref().filter(|h| !h.is_empty())
    }
}

impl Lease {
    /// A Lease to create (no resourceVersion).
    pub fn new(namespace: impl Into<String>, name: impl Into<String>, spec: LeaseSpec) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
            resource_version: None,
            uid: None,
            annotations: BTreeMap::new(),
            spec,
        }
    }

    /// The API object: `{apiVersion, kind, metadata: {name, namespace,
    /// resourceVersion?, uid?, annotations?}, spec}`. A uid sent with an
    /// update is a precondition: the API server refuses it if the Lease
    /// was created again meanwhile.
    pub fn to_object(&self) -> Value {
        let mut metadata = json!({"name": self.name, "namespace": self.namespace});
        if let Some(rv) = &self.resource_version {
            metadata["resourceVersion"] = json!(rv);
        }
        if let Some(uid) = &self.uid {
            metadata["uid"] = json!(uid);
        }
        if !self.annotations.is_empty() {
            metadata["annotations"] = json!(self.annotations);
        }
        json!({
            "apiVersion": LEASE_API_VERSION,
            "kind": "Lease",
            "metadata": metadata,
            "spec": self.spec,
        })
    }

    /// Reads a Lease from an API object. `operation` names the request in
    /// the [`Error::Decode`] a malformed object produces.
    ///
    /// ```
    /// use blue_kubernetes_client::Lease;
    /// let object = serde_json::json!({
    ///     "metadata": {"name": "op", "namespace": "default", "resourceVersion": "7"},
    ///     "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}
    /// });
    /// let lease = Lease::from_object(&object, "get").unwrap();
    /// assert_eq!(lease.resource_version.as_deref(), Some("7"));
    /// assert_eq!(lease.spec.holder(), Some("a"));
    /// ```
    pub fn from_object(object: &Value, operation: &str) -> Result<Self, Error> {
        let decode = || Error::Decode {
            operation: operation.to_owned(),
        };
        let meta = |key: &str| object["metadata"][key].as_str().map(str::to_owned);
        let spec = match object.get("spec") {
            None | Some(Value::Null) => LeaseSpec::default(),
            Some(spec) => serde_json::from_value(spec.clone()).map_err(|_| decode())?,
        };
        let annotations = match &object["metadata"]["annotations"] {
            Value::Null => BTreeMap::new(),
            given => serde_json::from_value(given.clone()).map_err(|_| decode())?,
        };
        Ok(Self {
            namespace: meta("namespace").ok_or_else(decode)?,
            name: meta("name").ok_or_else(decode)?,
            resource_version: meta("resourceVersion"),
            uid: meta("uid"),
            annotations,
            spec,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_the_api_object() {
        let mut lease = Lease::new(
            "ns",
            "l",
            LeaseSpec {
                holder_identity: Some("a".into()),
                lease_duration_seconds: Some(15),
                acquire_time: Some("2026-01-01T00:00:00.000000Z".into()),
                renew_time: Some("2026-01-01T00:00:02.000000Z".into()),
                lease_transitions: Some(3),
            },
        );
        lease.resource_version = Some("9".into());
        lease.uid = Some("6f1c".into());
        lease
            .annotations
            .insert("example.com/note".into(), "kept".into());
        assert_eq!(
            Lease::from_object(&lease.to_object(), "get").unwrap(),
            lease
        );
    }

    #[test]
    fn a_malformed_object_is_a_decode_error_without_its_text() {
        let object =
            json!({"metadata": {"name": "l", "namespace": "ns"}, "spec": {"holderIdentity": 5}});
        let err = Lease::from_object(&object, "get").unwrap_err();
        assert!(matches!(err, Error::Decode { .. }));
        assert!(Lease::from_object(&json!({}), "get").is_err());
    }
}
