//! The next release's API: `v1beta1`, stored, and `v1alpha1` still
//! served. Two changes: `configMapName` is renamed `name`, and a
//! `description` (for people, shown by `kubectl get -o wide`) is new. A
//! `v1alpha1` client reads every object (down-conversion drops nothing it
//! could show), and its read-modify-write keeps the description it cannot
//! see: the library keeps it on the object and restores it on the way up.
//!
//! Upgrading from [`LocalConfigMaps`](crate::package::LocalConfigMaps)
//! (the crate README's "Versions and upgrades"): apply the new CRD with
//! storage still at `v1alpha1` and roll out
//! [`LocalConfigMapsV1beta1`](crate::package::LocalConfigMapsV1beta1),
//! which serves the conversion; then move storage to `v1beta1`.

use crate::desired::{ConfigMapSpec, LocalConfigMapConfig};
use blue_kubernetes::versions::Versions;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `spec.config` of a `LocalConfigMap` at `v1beta1`. No `Debug`: data
/// values may be sensitive.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LocalConfigMapConfigV1beta1 {
    /// Immutable. The ConfigMap's name; defaults to the resource's name
    /// (`configMapName` in v1alpha1).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub name: Option<String>,
    /// The ConfigMap's data.
    #[serde(default)]
    #[schemars(extend("maxProperties" = 256))]
    pub data: BTreeMap<String, String>,
    /// What the ConfigMap is for, for people (new in v1beta1).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub description: Option<String>,
}

impl ConfigMapSpec for LocalConfigMapConfigV1beta1 {
    const VERSION: &'static str = "v1beta1";
    const NAME_FIELD: &'static str = "name";
    fn config_map_name(&self) -> Option<&str> {
        self.name.as_deref()
    }
    fn data(&self) -> &BTreeMap<String, String> {
        &self.data
    }
    fn versions() -> Versions<Self> {
        Versions::stored().served::<LocalConfigMapConfig>("v1alpha1")
    }
}

/// Down: total, the description is what v1alpha1 cannot express.
impl From<&LocalConfigMapConfigV1beta1> for LocalConfigMapConfig {
    fn from(v1beta1: &LocalConfigMapConfigV1beta1) -> Self {
        Self {
            config_map_name: v1beta1.name.clone(),
            data: v1beta1.data.clone(),
        }
    }
}

/// Up: total; no description (the library restores one an object had).
impl From<LocalConfigMapConfig> for LocalConfigMapConfigV1beta1 {
    fn from(v1alpha1: LocalConfigMapConfig) -> Self {
        Self {
            name: v1alpha1.config_map_name,
            data: v1alpha1.data,
            description: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use blue_kubernetes::versions::Conversion;
    use blue_kubernetes::ResourceSchema;
    use serde_json::{json, Value};

    fn conversion() -> Conversion {
        let schema = ResourceSchema::of::<crate::package::LocalConfigMapsV1beta1>();
        Conversion::new([&schema], crate::package::names())
    }

    fn convert(object: Value, to: &str) -> Value {
        let review = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "1", "desiredAPIVersion": format!("examples.blue.dev/{to}"), "objects": [object]},
        });
        let answer = conversion().review(review.to_string().as_bytes());
        assert_eq!(
            answer["response"]["result"]["status"], "Success",
            "{answer}"
        );
        answer["response"]["convertedObjects"][0].clone()
    }

    fn object(version: &str, config: Value) -> Value {
        json!({
            "apiVersion": format!("examples.blue.dev/{version}"), "kind": "LocalConfigMap",
            "metadata": {"name": "a", "namespace": "dev"},
            "spec": {"state": "running", "config": config},
        })
    }

    #[test]
    fn the_rename_converts_both_ways_and_reserved_keys_stay() {
        let old = object(
            "v1alpha1",
            json!({"configMapName": "a-cm", "data": {"k": "v"}, "profile": "p"}),
        );
        let new = convert(old.clone(), "v1beta1");
        assert_eq!(
            new["spec"]["config"],
            json!({"name": "a-cm", "data": {"k": "v"}, "profile": "p"})
        );
        assert_eq!(new["spec"]["state"], "running");
        assert_eq!(convert(new, "v1alpha1"), old);
    }

    #[test]
    fn an_old_clients_write_keeps_the_description() {
        let stored = object(
            "v1beta1",
            json!({"name": "a-cm", "description": "the app's settings"}),
        );
        let mut read = convert(stored, "v1alpha1");
        assert_eq!(
            read["spec"]["config"],
            json!({"configMapName": "a-cm", "data": {}})
        );
        read["spec"]["config"]["data"] = json!({"k": "v2"});
        let written = convert(read, "v1beta1");
        assert_eq!(
            written["spec"]["config"],
            json!({"name": "a-cm", "data": {"k": "v2"}, "description": "the app's settings"})
        );
    }
}
