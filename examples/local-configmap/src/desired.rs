//! What a `LocalConfigMap` asks for: its typed config, validation,
//! identity and the desired ConfigMap, all computed from the callback's
//! context without I/O.
//!
//! The config's *types* are checked by serde (and, on the cluster, by the
//! generated CRD); [`validate`] checks what types cannot say. Its messages
//! name the offending field but never echo a value: the controller drops
//! them anyway, but a package should not depend on that.

use crate::package::Cx;
use blue_kubernetes::resource::{is_object_name, Intent};
use blue_kubernetes::versions::Versions;
use blue_kubernetes::{CallbackResult, IdentityContext};
use schemars::JsonSchema;
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most keys a ConfigMap may get from one resource.
pub const MAX_KEYS: usize = 256;
/// Most bytes (keys plus values) of data: half the API server's 1 MiB object
/// limit, leaving room for metadata and the `last-applied` copy some tools keep.
pub const MAX_DATA_BYTES: usize = 512 * 1024;

/// `spec.config` of a `LocalConfigMap`. The reserved keys `profile` and
/// `prevent-destroy` belong to the controller and are not fields. No
/// `Debug`: data values may be sensitive.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LocalConfigMapConfig {
    /// Immutable. The ConfigMap's name; defaults to the resource's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub config_map_name: Option<String>,
    /// The ConfigMap's data.
    #[serde(default)]
    #[schemars(extend("maxProperties" = 256))]
    pub data: BTreeMap<String, String>,
}

/// What the package reads of a version's config: the same ConfigMap,
/// whichever version the config is stored at ([`LocalConfigMapConfig`]
/// at `v1alpha1`, [`LocalConfigMapConfigV1beta1`](crate::v1beta1::LocalConfigMapConfigV1beta1)
/// at `v1beta1`).
pub trait ConfigMapSpec: Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static {
    /// The API version the config is stored at.
    const VERSION: &'static str;
    /// The (immutable) field naming the ConfigMap.
    const NAME_FIELD: &'static str;
    /// The ConfigMap's name, if the config gives one.
    fn config_map_name(&self) -> Option<&str>;
    /// The ConfigMap's data.
    fn data(&self) -> &BTreeMap<String, String>;
    /// The versions served with this one stored.
    fn versions() -> Versions<Self> {
        Versions::stored()
    }
}

impl ConfigMapSpec for LocalConfigMapConfig {
    const VERSION: &'static str = "v1alpha1";
    const NAME_FIELD: &'static str = "configMapName";
    fn config_map_name(&self) -> Option<&str> {
        self.config_map_name.as_deref()
    }
    fn data(&self) -> &BTreeMap<String, String> {
        &self.data
    }
}

/// The ConfigMap a `LocalConfigMap` wants, fully resolved. No `Debug`:
/// data values may be sensitive.
#[derive(Clone, PartialEq, Eq)]
pub struct Desired {
    /// Namespace of both the resource and its ConfigMap.
    pub namespace: String,
    /// The ConfigMap's name.
    pub name: String,
    /// The resource's `metadata.uid`, recorded on the ConfigMap as its owner.
    pub owner_uid: String,
    /// The resource's name, recorded on the ConfigMap so that the
    /// controller can map a change of it to the resource.
    pub owner_name: String,
    /// The data the ConfigMap must hold. Empty while the resource is stopped:
    /// a stopped `LocalConfigMap` keeps its (owned, empty) ConfigMap so that
    /// starting it again, deleting it and ownership all keep working.
    pub data: BTreeMap<String, String>,
}

/// All problems with the config and the resource; empty when valid.
pub fn validate<C: ConfigMapSpec>(cx: &Cx<C>) -> Vec<String> {
    let (config, metadata) = (cx.config(), cx.metadata());
    let data = config.data();
    let bytes: usize = data.iter().map(|(k, v)| k.len() + v.len()).sum();
    let rules = [
        (!metadata.namespace.is_empty(), "metadata.namespace is missing".into()),
        (!metadata.uid.is_empty(), "metadata.uid is missing".into()),
        (
            is_profile(cx.profile()),
            "config.profile must be 1 to 253 printable characters".into(),
        ),
        (
            config.config_map_name().is_none_or(is_object_name),
            format!("config.{} must be a DNS-1123 subdomain (lowercase alphanumerics, '-' and '.', at most 253 characters)", C::NAME_FIELD),
        ),
        (data.len() <= MAX_KEYS, format!("config.data has more than {MAX_KEYS} keys")),
        (
            data.keys().all(|k| is_config_map_key(k)),
            "config.data keys must be 1 to 253 characters of [-._a-zA-Z0-9] and not '.' or '..'".into(),
        ),
        (bytes <= MAX_DATA_BYTES, format!("config.data exceeds {MAX_DATA_BYTES} bytes")),
    ];
    let broken = rules.into_iter().filter(|(ok, _)| !ok);
    broken.map(|(_, message)| message).collect()
}

/// The resolved ConfigMap for a valid config; for `stop` the data is
/// empty. Checks what [`validate`] checks, for callbacks called directly.
pub fn desired<C: ConfigMapSpec>(cx: &Cx<C>) -> CallbackResult<Desired> {
    if let Some(first) = validate(cx).into_iter().next() {
        return Err(format!("invalid LocalConfigMap configuration: {first}").into());
    }
    let metadata = cx.metadata();
    let data = match cx.intent() {
        Intent::Stop => BTreeMap::new(),
        _ => cx.config().data().clone(),
    };
    Ok(Desired {
        namespace: metadata.namespace.clone(),
        name: config_map_name(cx).unwrap_or_default().to_string(),
        owner_uid: metadata.uid.clone(),
        owner_name: metadata.name.clone(),
        data,
    })
}

/// The state identity: `["local-configmap", namespace, configMapName, profile]`.
///
/// Because the controller records the identity, the ConfigMap's name and
/// namespace cannot change after the first reconcile: that would orphan the
/// old ConfigMap.
pub fn identity<C: ConfigMapSpec>(cx: &IdentityContext<C>) -> Vec<Option<String>> {
    let metadata = cx.metadata();
    vec![
        Some("local-configmap".to_string()),
        Some(metadata.namespace.clone()).filter(|n| !n.is_empty()),
        named(cx.config(), &metadata.name).map(str::to_string),
        Some(cx.profile().to_string()),
    ]
}

/// `configMapName`, else the resource's name.
fn config_map_name<C: ConfigMapSpec>(cx: &Cx<C>) -> Option<&str> {
    named(cx.config(), &cx.metadata().name)
}

/// `config`'s `configMapName`, else `resource_name`.
fn named<'a, C: ConfigMapSpec>(config: &'a C, resource_name: &'a str) -> Option<&'a str> {
    match config.config_map_name() {
        None => Some(resource_name).filter(|n| !n.is_empty()),
        Some(name) => Some(name),
    }
}

fn is_profile(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && !s.chars().any(char::is_control)
}

/// A ConfigMap data key, as the API server accepts it.
pub fn is_config_map_key(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s != "."
        && !s.starts_with("..")
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use blue_kubernetes::config::Names;
    use blue_kubernetes::Context;
    use serde_json::{json, Value};

    /// The context of a resource `app` in `dev` with `config`.
    fn cx(config: Value) -> Cx {
        with(json!({
            "metadata": {"name": "app", "namespace": "dev", "uid": "uid-1"},
            "spec": {"config": config},
        }))
    }

    fn with(resource: Value) -> Cx {
        Context::from_resource(&resource, Names::default()).unwrap()
    }

    #[test]
    fn defaults_name_the_config_map_after_the_resource_with_no_data() {
        let c = cx(json!({}));
        assert!(validate(&c).is_empty());
        let d = desired(&c).unwrap();
        assert_eq!(
            (d.namespace.as_str(), d.name.as_str(), d.owner_uid.as_str()),
            ("dev", "app", "uid-1")
        );
        assert!(d.data.is_empty());
    }

    #[test]
    fn data_and_name_come_from_config() {
        let c = cx(json!({"configMapName": "settings.v1", "data": {"a": "1", "b.c": ""}}));
        let d = desired(&c).unwrap();
        assert_eq!(d.name, "settings.v1");
        assert_eq!(d.data.get("a").map(String::as_str), Some("1"));
        assert_eq!(d.data.len(), 2);
    }

    #[test]
    fn stopped_resources_want_an_empty_config_map() {
        let c = with(json!({
            "metadata": {"name": "app", "namespace": "dev", "uid": "uid-1"},
            "spec": {"state": "stopped", "config": {"data": {"a": "1"}}}
        }));
        assert!(desired(&c).unwrap().data.is_empty());
    }

    #[test]
    fn mistyped_or_unknown_fields_do_not_deserialize() {
        for bad in [
            json!({"configMapName": 7}),
            json!({"data": "text"}),
            json!({"data": {"ok": {"nested": "x"}}}),
            json!({"typo": "x"}),
        ] {
            assert!(
                serde_json::from_value::<LocalConfigMapConfig>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn invalid_fields_are_reported_without_their_values() {
        let secret = "hunter2-SECRET";
        let cases = [
            json!({"configMapName": secret}),
            json!({"data": {secret.replace('-', "/"): "v"}}),
            json!({"data": {"..hidden": "v"}}),
        ];
        for c in cases {
            let errors = validate(&cx(c.clone()));
            assert_eq!(errors.len(), 1, "{c}: {errors:?}");
            assert!(!errors[0].contains("hunter2"), "{errors:?}");
            assert!(desired(&cx(c)).is_err());
        }
        assert_eq!(validate(&cx(json!({"profile": ""}))).len(), 1);
    }

    #[test]
    fn sizes_are_bounded() {
        let many: BTreeMap<String, String> = (0..=MAX_KEYS)
            .map(|i| (format!("k{i}"), "v".into()))
            .collect();
        assert_eq!(validate(&cx(json!({"data": many}))).len(), 1);
        let big = "x".repeat(MAX_DATA_BYTES);
        assert_eq!(validate(&cx(json!({"data": {"k": big}}))).len(), 1);
        assert!(!is_object_name(&"a".repeat(254)));
        assert!(!is_config_map_key(&"a".repeat(254)));
    }

    #[test]
    fn resources_without_namespace_or_uid_are_invalid() {
        let c = with(json!({"metadata": {"name": "app"}}));
        assert_eq!(validate(&c).len(), 2);
    }

    #[test]
    fn identity_includes_namespace_name_and_profile() {
        let c = cx(json!({"profile": "p", "configMapName": "cm"}));
        assert_eq!(
            identity(&c.clone().into()),
            [
                Some("local-configmap".to_string()),
                Some("dev".to_string()),
                Some("cm".to_string()),
                Some("p".to_string())
            ]
        );
    }

    #[test]
    fn name_rules_follow_kubernetes() {
        for good in ["a", "A_b-c.d", ".env", "..."] {
            // "..." starts with ".." and is refused, like the API server does.
            assert_eq!(is_config_map_key(good), good != "...", "{good}");
        }
    }
}
