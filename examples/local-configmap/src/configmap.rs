//! The ConfigMap side, as pure functions over JSON: who owns a ConfigMap,
//! what `observe` reports, and what `converge` and `delete` should send.
//!
//! Ownership is an annotation holding the owning resource's UID, not an
//! `ownerReference`: Kubernetes' garbage collector would delete an owned
//! object with its owner, and `deletionPolicy: Retain` must really retain.

use crate::desired::Desired;
use blue_kubernetes::Observation;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Annotation naming the UID of the `LocalConfigMap` that owns a ConfigMap.
pub const OWNER_ANNOTATION: &str = "examples.blue.dev/owner-uid";
/// Annotation counting this operator's writes of a ConfigMap (1 after the
/// create, +1 per replace). Replaces are guarded by resourceVersion, so the
/// count is exact: a test can tell that no effect happened twice.
pub const WRITES_ANNOTATION: &str = "examples.blue.dev/writes";
/// Label marking ConfigMaps written by this operator (for `kubectl get -l`).
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Value of [`MANAGED_BY_LABEL`].
pub const MANAGED_BY: &str = "local-configmap-operator";

/// The owner UID recorded on `config_map`, if any.
pub fn owner_of(config_map: &Value) -> Option<&str> {
    config_map["metadata"]["annotations"][OWNER_ANNOTATION].as_str()
}

/// `data` as a string map; absent (as the API server prints an empty
/// ConfigMap) means empty. `None` when some value is not a string.
pub fn data_of(config_map: &Value) -> Option<BTreeMap<String, String>> {
    match config_map.get("data") {
        None | Some(Value::Null) => Some(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect(),
        Some(_) => None,
    }
}

/// What `observe` reports for the ConfigMap currently at the desired name.
///
/// Only a ConfigMap owned by this resource counts as its infrastructure: a
/// foreign one is reported absent (so deletion never touches it, and
/// `converge` runs and reports the conflict). An owned one matches when its
/// data equals the desired data and it has no `binaryData`; it is ready as
/// soon as it exists.
///
/// ```
/// use local_configmap_operator::configmap::{observe, OWNER_ANNOTATION};
/// use local_configmap_operator::desired::Desired;
/// let desired = Desired {
///     namespace: "dev".into(), name: "app".into(), owner_uid: "u-1".into(),
///     data: [("k".to_string(), "v".to_string())].into(),
/// };
/// let cm = serde_json::json!({
///     "metadata": {"annotations": {OWNER_ANNOTATION: "u-1"}},
///     "data": {"k": "changed"}
/// });
/// let seen = observe(Some(&cm), &desired);
/// assert!(seen.exists && seen.ready && !seen.matches);
/// assert!(!observe(None, &desired).exists);
/// ```
pub fn observe(existing: Option<&Value>, desired: &Desired) -> Observation {
    let Some(cm) = existing.filter(|cm| owner_of(cm) == Some(desired.owner_uid.as_str())) else {
        return Observation::ABSENT;
    };
    let no_binary = match cm.get("binaryData") {
        None | Some(Value::Null) => true,
        Some(Value::Object(map)) => map.is_empty(),
        Some(_) => false,
    };
    Observation::new(
        true,
        no_binary && data_of(cm).as_ref() == Some(&desired.data),
        true,
    )
}

/// What `converge` must do.
#[derive(Clone, PartialEq)]
pub enum ConvergePlan {
    /// No ConfigMap exists: create this one.
    Create(Value),
    /// Ours exists: replace it with this one (guarded by its resourceVersion,
    /// so a concurrent edit makes the write fail and the next pass retries).
    Replace(Value),
    /// A ConfigMap with that name exists but belongs to someone else (another
    /// resource, or nobody): never adopted, never overwritten.
    OwnershipConflict,
}

// The manifests carry data: Debug shows the variant only.
impl std::fmt::Debug for ConvergePlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ConvergePlan::Create(_) => "Create",
            ConvergePlan::Replace(_) => "Replace",
            ConvergePlan::OwnershipConflict => "OwnershipConflict",
        })
    }
}

/// Decides how to make the ConfigMap match `desired`, given what exists now.
pub fn plan_converge(existing: Option<&Value>, desired: &Desired) -> ConvergePlan {
    match existing {
        None => ConvergePlan::Create(manifest(desired, None)),
        Some(cm) if owner_of(cm) == Some(desired.owner_uid.as_str()) => {
            ConvergePlan::Replace(manifest(desired, Some(cm)))
        }
        Some(_) => ConvergePlan::OwnershipConflict,
    }
}

/// The ConfigMap to write. When replacing, labels and annotations others
/// added are kept and the existing resourceVersion guards the write; data is
/// replaced exactly (keys added behind our back are drift too).
pub fn manifest(desired: &Desired, existing: Option<&Value>) -> Value {
    let kept = |field: &str| -> Map<String, Value> {
        existing
            .and_then(|cm| cm["metadata"][field].as_object())
            .cloned()
            .unwrap_or_default()
    };
    let mut labels = kept("labels");
    labels.insert(MANAGED_BY_LABEL.into(), json!(MANAGED_BY));
    let mut annotations = kept("annotations");
    annotations.insert(OWNER_ANNOTATION.into(), json!(desired.owner_uid));
    let writes = existing
        .and_then(|cm| cm["metadata"]["annotations"][WRITES_ANNOTATION].as_str())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    annotations.insert(WRITES_ANNOTATION.into(), json!((writes + 1).to_string()));
    let mut metadata = json!({
        "name": desired.name,
        "namespace": desired.namespace,
        "labels": labels,
        "annotations": annotations,
    });
    if let Some(rv) = existing.and_then(|cm| cm["metadata"]["resourceVersion"].as_str()) {
        metadata["resourceVersion"] = json!(rv);
    }
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": desired.data,
    })
}

/// What `delete` must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeletePlan {
    /// Nothing of ours exists (absent, or someone else's): leave it.
    Nothing,
    /// Delete exactly the ConfigMap we observed: these `DeleteOptions`
    /// preconditions make the server refuse if it was replaced or changed.
    Delete {
        /// The API path of the ConfigMap.
        path: String,
        /// The `DeleteOptions` body with uid and resourceVersion preconditions.
        body: String,
    },
}

/// Decides whether `existing` may be deleted on behalf of `owner_uid`.
pub fn plan_delete(existing: Option<&Value>, desired: &Desired) -> DeletePlan {
    let Some(cm) = existing.filter(|cm| owner_of(cm) == Some(desired.owner_uid.as_str())) else {
        return DeletePlan::Nothing;
    };
    let body = json!({
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "preconditions": {
            "uid": cm["metadata"]["uid"],
            "resourceVersion": cm["metadata"]["resourceVersion"],
        },
    });
    DeletePlan::Delete {
        path: config_map_path(&desired.namespace, &desired.name),
        body: body.to_string(),
    }
}

/// `/api/v1/namespaces/NS/configmaps/NAME`. Both parts are validated DNS
/// names, so they need no escaping.
pub fn config_map_path(namespace: &str, name: &str) -> String {
    format!("/api/v1/namespaces/{namespace}/configmaps/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desired(data: &[(&str, &str)]) -> Desired {
        Desired {
            namespace: "dev".into(),
            name: "app".into(),
            owner_uid: "uid-1".into(),
            data: data
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn config_map(owner: Option<&str>, data: Value) -> Value {
        let mut cm = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "app", "namespace": "dev", "uid": "cm-uid", "resourceVersion": "42",
                "labels": {"team": "a"},
                "annotations": {"note": "keep me"},
            },
            "data": data,
        });
        if let Some(owner) = owner {
            cm["metadata"]["annotations"][OWNER_ANNOTATION] = json!(owner);
        }
        cm
    }

    #[test]
    fn owned_and_equal_is_ready() {
        let cm = config_map(Some("uid-1"), json!({"k": "v"}));
        assert_eq!(
            observe(Some(&cm), &desired(&[("k", "v")])),
            Observation::READY
        );
    }

    #[test]
    fn changed_added_or_removed_keys_are_drift() {
        let want = desired(&[("k", "v")]);
        for data in [
            json!({"k": "x"}),
            json!({"k": "v", "extra": "1"}),
            json!({}),
            json!({"k": 1}),
        ] {
            let seen = observe(Some(&config_map(Some("uid-1"), data.clone())), &want);
            assert!(seen.exists && seen.ready && !seen.matches, "{data}");
        }
        let mut binary = config_map(Some("uid-1"), json!({"k": "v"}));
        binary["binaryData"] = json!({"b": "AA=="});
        assert!(!observe(Some(&binary), &want).matches);
    }

    #[test]
    fn empty_desired_data_matches_a_config_map_without_data() {
        let mut cm = config_map(Some("uid-1"), json!({}));
        cm.as_object_mut().unwrap().remove("data");
        assert_eq!(observe(Some(&cm), &desired(&[])), Observation::READY);
    }

    #[test]
    fn foreign_or_unowned_config_maps_are_not_ours() {
        let want = desired(&[("k", "v")]);
        for owner in [Some("someone-else"), None] {
            let cm = config_map(owner, json!({"k": "v"}));
            assert_eq!(observe(Some(&cm), &want), Observation::ABSENT);
            assert_eq!(
                plan_converge(Some(&cm), &want),
                ConvergePlan::OwnershipConflict
            );
            assert_eq!(plan_delete(Some(&cm), &want), DeletePlan::Nothing);
        }
    }

    #[test]
    fn create_when_absent_without_resource_version() {
        let ConvergePlan::Create(m) = plan_converge(None, &desired(&[("k", "v")])) else {
            panic!("expected create");
        };
        assert_eq!(m["metadata"]["annotations"][OWNER_ANNOTATION], "uid-1");
        assert_eq!(m["metadata"]["labels"][MANAGED_BY_LABEL], MANAGED_BY);
        assert_eq!(m["metadata"]["namespace"], "dev");
        assert_eq!(m["data"], json!({"k": "v"}));
        assert!(m["metadata"].get("resourceVersion").is_none());
        assert!(m["metadata"].get("ownerReferences").is_none());
        assert_eq!(m["metadata"]["annotations"][WRITES_ANNOTATION], "1");
    }

    #[test]
    fn replace_keeps_foreign_metadata_and_guards_with_resource_version() {
        let cm = config_map(Some("uid-1"), json!({"k": "x", "extra": "1"}));
        let ConvergePlan::Replace(m) = plan_converge(Some(&cm), &desired(&[("k", "v")])) else {
            panic!("expected replace");
        };
        assert_eq!(m["metadata"]["resourceVersion"], "42");
        assert_eq!(m["metadata"]["labels"]["team"], "a");
        assert_eq!(m["metadata"]["annotations"]["note"], "keep me");
        assert_eq!(m["data"], json!({"k": "v"}));
        let mut counted = cm.clone();
        counted["metadata"]["annotations"][WRITES_ANNOTATION] = json!("4");
        let ConvergePlan::Replace(m) = plan_converge(Some(&counted), &desired(&[("k", "v")]))
        else {
            panic!("expected replace");
        };
        assert_eq!(m["metadata"]["annotations"][WRITES_ANNOTATION], "5");
    }

    #[test]
    fn delete_only_ours_with_preconditions() {
        let want = desired(&[]);
        assert_eq!(plan_delete(None, &want), DeletePlan::Nothing);
        let cm = config_map(Some("uid-1"), json!({}));
        let DeletePlan::Delete { path, body } = plan_delete(Some(&cm), &want) else {
            panic!("expected delete");
        };
        assert_eq!(path, "/api/v1/namespaces/dev/configmaps/app");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            body["preconditions"],
            json!({"uid": "cm-uid", "resourceVersion": "42"})
        );
    }
}
