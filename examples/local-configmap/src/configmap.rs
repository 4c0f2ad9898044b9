//! The ConfigMap side, as pure functions over typed ConfigMaps: who owns
//! one, what `observe` reports, and what `converge` and `delete` should send.
//!
//! Ownership is an annotation holding the owning resource's UID, not an
//! `ownerReference`: Kubernetes' garbage collector would delete an owned
//! object with its owner, and `deletionPolicy: Retain` must really retain.

use crate::desired::Desired;
use blue_kubernetes::package::NoOutputs;
use blue_kubernetes::Observation;
use blue_kubernetes_client::typed::preconditions_of;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Preconditions};

/// Annotation naming the UID of the `LocalConfigMap` that owns a ConfigMap.
pub const OWNER_ANNOTATION: &str = "examples.blue.dev/owner-uid";
/// Annotation naming the `LocalConfigMap` (in the same namespace) that owns
/// a ConfigMap: the controller watches ConfigMaps and maps each to its
/// owner by it, so a deleted or edited ConfigMap is repaired at once.
/// Ownership itself is decided by the UID ([`OWNER_ANNOTATION`]).
pub const OWNER_NAME_ANNOTATION: &str = "examples.blue.dev/owner-name";
/// Annotation counting this operator's writes of a ConfigMap (1 after the
/// create, +1 per replace). Replaces are guarded by resourceVersion, so the
/// count is exact: a test can tell that no effect happened twice.
pub const WRITES_ANNOTATION: &str = "examples.blue.dev/writes";
/// Label marking ConfigMaps written by this operator (for `kubectl get -l`).
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Value of [`MANAGED_BY_LABEL`].
pub const MANAGED_BY: &str = "local-configmap-operator";

/// Whether `config_map` is the one `desired` owns: its owner annotation
/// holds the resource's UID.
fn is_ours(config_map: &ConfigMap, desired: &Desired) -> bool {
    let annotations = config_map.metadata.annotations.as_ref();
    annotations.and_then(|a| a.get(OWNER_ANNOTATION)) == Some(&desired.owner_uid)
}

/// What `observe` reports for the ConfigMap currently at the desired name.
///
/// Only a ConfigMap owned by this resource counts as its infrastructure: a
/// foreign one is reported absent (so deletion never touches it, and
/// `converge` runs and reports the conflict). An owned one matches when its
/// data equals the desired data (absent data, as the API server prints an
/// empty ConfigMap, is empty) and it has no `binaryData`; it is ready as
/// soon as it exists.
pub fn observe(existing: Option<&ConfigMap>, desired: &Desired) -> Observation<NoOutputs> {
    let Some(cm) = existing.filter(|cm| is_ours(cm, desired)) else {
        return Observation::ABSENT;
    };
    let no_binary = cm.binary_data.as_ref().is_none_or(|b| b.is_empty());
    let data_matches = match &cm.data {
        Some(data) => *data == desired.data,
        None => desired.data.is_empty(),
    };
    Observation::new(true, no_binary && data_matches, true)
}

/// What `converge` must do. No `Debug`: the manifests carry data.
#[derive(Clone)]
pub enum ConvergePlan {
    /// No ConfigMap exists: create this one.
    Create(ConfigMap),
    /// Ours exists: replace it with this one (guarded by its resourceVersion,
    /// so a concurrent edit makes the write fail and the next pass retries).
    Replace(ConfigMap),
    /// A ConfigMap with that name exists but belongs to someone else (another
    /// resource, or nobody): never adopted, never overwritten.
    OwnershipConflict,
}

/// Decides how to make the ConfigMap match `desired`, given what exists now.
pub fn plan_converge(existing: Option<&ConfigMap>, desired: &Desired) -> ConvergePlan {
    match existing {
        None => ConvergePlan::Create(manifest(desired, None)),
        Some(cm) if is_ours(cm, desired) => ConvergePlan::Replace(manifest(desired, Some(cm))),
        Some(_) => ConvergePlan::OwnershipConflict,
    }
}

/// The ConfigMap to write. When replacing, labels and annotations others
/// added are kept and the existing resourceVersion guards the write; data is
/// replaced exactly (keys added behind our back are drift too).
pub fn manifest(desired: &Desired, existing: Option<&ConfigMap>) -> ConfigMap {
    let meta = existing.map(|cm| &cm.metadata);
    let mut labels = meta.and_then(|m| m.labels.clone()).unwrap_or_default();
    labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY.into());
    let mut annotations = meta.and_then(|m| m.annotations.clone()).unwrap_or_default();
    let writes = annotations
        .get(WRITES_ANNOTATION)
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    annotations.insert(OWNER_ANNOTATION.into(), desired.owner_uid.clone());
    annotations.insert(OWNER_NAME_ANNOTATION.into(), desired.owner_name.clone());
    annotations.insert(WRITES_ANNOTATION.into(), (writes + 1).to_string());
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(desired.name.clone()),
            namespace: Some(desired.namespace.clone()),
            labels: Some(labels),
            annotations: Some(annotations),
            resource_version: meta.and_then(|m| m.resource_version.clone()),
            ..ObjectMeta::default()
        },
        data: Some(desired.data.clone()),
        ..ConfigMap::default()
    }
}

/// What `delete` must do.
#[derive(Clone, Debug, PartialEq)]
pub enum DeletePlan {
    /// Nothing of ours exists (absent, or someone else's): leave it.
    Nothing,
    /// Delete exactly the ConfigMap we observed: these preconditions (its
    /// uid and resourceVersion) make the server refuse if it was replaced
    /// or changed.
    Delete(Preconditions),
}

/// Decides whether `existing` may be deleted on behalf of `desired`'s owner.
pub fn plan_delete(existing: Option<&ConfigMap>, desired: &Desired) -> DeletePlan {
    match existing.filter(|cm| is_ours(cm, desired)) {
        Some(cm) => DeletePlan::Delete(preconditions_of(cm)),
        None => DeletePlan::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn desired(data: &[(&str, &str)]) -> Desired {
        Desired {
            namespace: "dev".into(),
            name: "app".into(),
            owner_uid: "uid-1".into(),
            owner_name: "res".into(),
            data: data
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn config_map(owner: Option<&str>, data: Value) -> ConfigMap {
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
        serde_json::from_value(cm).unwrap()
    }

    fn annotation<'a>(cm: &'a ConfigMap, key: &str) -> Option<&'a str> {
        cm.metadata
            .annotations
            .as_ref()?
            .get(key)
            .map(String::as_str)
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
        ] {
            let seen = observe(Some(&config_map(Some("uid-1"), data.clone())), &want);
            assert!(seen.exists && seen.ready && !seen.matches, "{data}");
        }
        let mut binary = config_map(Some("uid-1"), json!({"k": "v"}));
        binary.binary_data = Some([("b".to_string(), k8s_openapi::ByteString(vec![0]))].into());
        assert!(!observe(Some(&binary), &want).matches);
    }

    #[test]
    fn empty_desired_data_matches_a_config_map_without_data() {
        let mut cm = config_map(Some("uid-1"), json!({}));
        cm.data = None;
        assert_eq!(observe(Some(&cm), &desired(&[])), Observation::READY);
        assert!(!observe(Some(&cm), &desired(&[("k", "v")])).matches);
    }

    #[test]
    fn foreign_or_unowned_config_maps_are_not_ours() {
        let want = desired(&[("k", "v")]);
        for owner in [Some("someone-else"), None] {
            let cm = config_map(owner, json!({"k": "v"}));
            assert_eq!(observe(Some(&cm), &want), Observation::ABSENT);
            let plan = plan_converge(Some(&cm), &want);
            assert!(matches!(plan, ConvergePlan::OwnershipConflict));
            assert_eq!(plan_delete(Some(&cm), &want), DeletePlan::Nothing);
        }
    }

    #[test]
    fn create_when_absent_without_resource_version() {
        let ConvergePlan::Create(m) = plan_converge(None, &desired(&[("k", "v")])) else {
            panic!("expected create");
        };
        assert_eq!(annotation(&m, OWNER_ANNOTATION), Some("uid-1"));
        assert_eq!(
            m.metadata.labels.as_ref().unwrap()[MANAGED_BY_LABEL],
            MANAGED_BY
        );
        assert_eq!(m.metadata.namespace.as_deref(), Some("dev"));
        assert_eq!(m.data, Some([("k".to_string(), "v".to_string())].into()));
        assert!(m.metadata.resource_version.is_none());
        assert!(m.metadata.owner_references.is_none());
        assert_eq!(annotation(&m, WRITES_ANNOTATION), Some("1"));
        let body = serde_json::to_value(&m).unwrap();
        assert_eq!(
            (&body["apiVersion"], &body["kind"]),
            (&json!("v1"), &json!("ConfigMap"))
        );
    }

    #[test]
    fn replace_keeps_foreign_metadata_and_guards_with_resource_version() {
        let cm = config_map(Some("uid-1"), json!({"k": "x", "extra": "1"}));
        let ConvergePlan::Replace(m) = plan_converge(Some(&cm), &desired(&[("k", "v")])) else {
            panic!("expected replace");
        };
        assert_eq!(m.metadata.resource_version.as_deref(), Some("42"));
        assert_eq!(m.metadata.labels.as_ref().unwrap()["team"], "a");
        assert_eq!(annotation(&m, "note"), Some("keep me"));
        assert_eq!(m.data, Some([("k".to_string(), "v".to_string())].into()));
        let mut counted = cm.clone();
        counted
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(WRITES_ANNOTATION.into(), "4".into());
        let ConvergePlan::Replace(m) = plan_converge(Some(&counted), &desired(&[("k", "v")]))
        else {
            panic!("expected replace");
        };
        assert_eq!(annotation(&m, WRITES_ANNOTATION), Some("5"));
    }

    #[test]
    fn delete_only_ours_with_preconditions() {
        let want = desired(&[]);
        assert_eq!(plan_delete(None, &want), DeletePlan::Nothing);
        let cm = config_map(Some("uid-1"), json!({}));
        let DeletePlan::Delete(preconditions) = plan_delete(Some(&cm), &want) else {
            panic!("expected delete");
        };
        assert_eq!(preconditions.uid.as_deref(), Some("cm-uid"));
        assert_eq!(preconditions.resource_version.as_deref(), Some("42"));
    }
}
