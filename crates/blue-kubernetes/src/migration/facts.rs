//! What the CRD and discovery say about a kind's storage, read from their
//! JSON without I/O: the version stored at, `status.storedVersions`, the
//! CRD's generation and resourceVersion, and discovery's
//! `storageVersionHash`.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// One reading of a kind's CRD and of discovery, taken together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Facts {
    /// The version with `storage: true`; `None` when the CRD names none
    /// (or is not installed).
    pub(crate) storage: Option<String>,
    /// `status.storedVersions`: every version objects may still be
    /// stored at.
    pub(crate) stored_versions: Vec<String>,
    /// `metadata.generation`: moves with every change of the CRD's spec,
    /// the storage flag's included.
    pub(crate) generation: i64,
    /// `metadata.resourceVersion`, the guard of the status write.
    pub(crate) resource_version: String,
    /// The `storageVersionHash` discovery reports for the kind's plural;
    /// `None` when the group/version is not served or has no hash.
    pub(crate) discovered_hash: Option<String>,
}

impl Facts {
    /// `crd` (a `CustomResourceDefinition` as the API server returns it)
    /// and `discovery` (the `APIResourceList` of one served version of
    /// its group) for the resource `plural`.
    pub(crate) fn read(crd: &Value, discovery: Option<&Value>, plural: &str) -> Self {
        let versions = crd["spec"]["versions"].as_array();
        let storage = versions
            .into_iter()
            .flatten()
            .find(|v| v["storage"] == Value::Bool(true))
            .and_then(|v| v["name"].as_str())
            .map(str::to_owned);
        let stored_versions = crd["status"]["storedVersions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        Self {
            storage,
            stored_versions,
            generation: crd["metadata"]["generation"].as_i64().unwrap_or(0),
            resource_version: crd["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            discovered_hash: discovery.and_then(|list| discovered_hash(list, plural)),
        }
    }
}

/// The `storageVersionHash` of `plural` in an `APIResourceList`.
///
/// Kubernetes 1.20 reports it for custom resources too (the same value in
/// every served version of the kind), on the resource itself, not on its
/// subresources.
pub(crate) fn discovered_hash(list: &Value, plural: &str) -> Option<String> {
    list["resources"]
        .as_array()?
        .iter()
        .find(|r| r["name"] == plural)?
        .get("storageVersionHash")?
        .as_str()
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
}

/// The hash the API server reports once it stores `kind` of `group` at
/// `version`: the first 8 bytes of SHA-256 over `group/version/kind`, in
/// standard base64 (`k8s.io/apiserver`'s `StorageVersionHash`), so the
/// migration knows which value means "the new storage version is in
/// effect" without having seen it.
pub(crate) fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine;
    let digest = Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hash_is_the_one_kubernetes_reports() {
        // Read from kube-apiserver 1.20.2's discovery of a CRD stored at
        // each version in turn.
        let at = |v| storage_version_hash("m.example.com", v, "Widget");
        assert_eq!(at("v1alpha1"), "f2IbVt0jvvs=");
        assert_eq!(at("v1"), "pBhe1koKw/I=");
    }

    #[test]
    fn facts_come_from_the_crd_and_the_resource_not_its_subresources() {
        let crd = json!({
            "metadata": {"generation": 3, "resourceVersion": "41"},
            "spec": {"versions": [
                {"name": "v1alpha1", "storage": false},
                {"name": "v1", "storage": true},
            ]},
            "status": {"storedVersions": ["v1alpha1", "v1"]},
        });
        let discovery = json!({"resources": [
            {"name": "widgets/status", "storageVersionHash": "nope"},
            {"name": "widgets", "storageVersionHash": "pBhe1koKw/I="},
        ]});
        let facts = Facts::read(&crd, Some(&discovery), "widgets");
        assert_eq!(facts.storage.as_deref(), Some("v1"));
        assert_eq!(facts.stored_versions, ["v1alpha1", "v1"]);
        assert_eq!(
            (facts.generation, facts.resource_version.as_str()),
            (3, "41")
        );
        assert_eq!(facts.discovered_hash.as_deref(), Some("pBhe1koKw/I="));
        let unhashed = json!({"resources": [{"name": "widgets"}]});
        assert_eq!(
            Facts::read(&crd, Some(&unhashed), "widgets").discovered_hash,
            None
        );
        assert_eq!(Facts::read(&json!({}), None, "widgets"), Facts::default());
    }
}
