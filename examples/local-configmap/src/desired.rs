//! What a `LocalConfigMap` asks for: its typed config, validation,
//! identity and the desired ConfigMap, all computed without I/O.
//!
//! The config's *types* are checked by serde (and, on the cluster, by the
//! generated CRD); [`validate`] checks what types cannot say. Its messages
//! name the offending field but never echo a value: the controller drops
//! them anyway, but a package should not depend on that.

use blue_kubernetes::{Event, Options};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Most keys a ConfigMap may get from one resource.
pub const MAX_KEYS: usize = 256;
/// Most bytes (keys plus values) of data: half the API server's 1 MiB object
/// limit, leaving room for metadata and the `last-applied` copy some tools keep.
pub const MAX_DATA_BYTES: usize = 512 * 1024;

/// The first element of every identity: the backend this package manages.
pub const IDENTITY_BACKEND: &str = "local-configmap";

/// `spec.config` of a `LocalConfigMap`. The reserved keys `profile` and
/// `prevent-destroy` belong to the controller and are not fields.
///
/// ```
/// use local_configmap_operator::desired::LocalConfigMapConfig;
/// let config: LocalConfigMapConfig =
///     serde_json::from_value(serde_json::json!({"configMapName": "app", "data": {"k": "v"}})).unwrap();
/// assert_eq!(config.config_map_name.as_deref(), Some("app"));
/// assert!(serde_json::from_value::<LocalConfigMapConfig>(serde_json::json!({"data": {"k": 1}})).is_err());
/// ```
#[derive(Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LocalConfigMapConfig {
    /// Immutable. The ConfigMap's name; defaults to the resource's name.
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

// Data values may be sensitive: Debug shows the keys' count only.
impl std::fmt::Debug for LocalConfigMapConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalConfigMapConfig")
            .field("config_map_name", &self.config_map_name)
            .field("data_keys", &self.data.len())
            .finish()
    }
}

/// The ConfigMap a `LocalConfigMap` wants, fully resolved.
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

// Data values may be sensitive: Debug shows keys' count and sizes only.
impl std::fmt::Debug for Desired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desired")
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .field("owner_uid", &self.owner_uid)
            .field("owner_name", &self.owner_name)
            .field("data_keys", &self.data.len())
            .finish()
    }
}

/// Why [`desired`] could not resolve the options; the same checks as
/// [`validate`], for callbacks that run only after validation passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidConfig(pub String);

impl std::fmt::Display for InvalidConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid LocalConfigMap configuration: {}", self.0)
    }
}

impl std::error::Error for InvalidConfig {}

/// All problems with `config` and the resource in `opts`; empty when valid.
///
/// ```
/// use blue_kubernetes::Options;
/// use local_configmap_operator::desired::{validate, LocalConfigMapConfig};
/// let resource = serde_json::json!({"metadata": {"name": "app", "namespace": "dev", "uid": "u-1"}});
/// let config = LocalConfigMapConfig { config_map_name: Some("Not_A_Name".into()), ..Default::default() };
/// let errors = validate(&config, &Options::from_resource(&resource));
/// assert_eq!(errors.len(), 1);
/// assert!(errors.iter().all(|e| !e.contains("Not_A_Name")));
/// ```
pub fn validate(config: &LocalConfigMapConfig, opts: &Options) -> Vec<String> {
    let mut errors = Vec::new();
    let resource = opts.resource();
    if metadata_str(resource, "namespace").is_none() {
        errors.push("metadata.namespace is missing".to_string());
    }
    if metadata_str(resource, "uid").is_none() {
        errors.push("metadata.uid is missing".to_string());
    }
    if !is_profile(opts.profile()) {
        errors.push("config.profile must be 1 to 253 printable characters".to_string());
    }
    if !config
        .config_map_name
        .as_deref()
        .is_none_or(is_dns_subdomain)
    {
        errors.push(
            "config.configMapName must be a DNS-1123 subdomain (lowercase alphanumerics, '-' and '.', at most 253 characters)"
                .to_string(),
        );
    }
    errors.extend(data_errors(&config.data));
    errors
}

fn data_errors(map: &BTreeMap<String, String>) -> Vec<String> {
    let mut errors = Vec::new();
    if map.len() > MAX_KEYS {
        errors.push(format!("config.data has more than {MAX_KEYS} keys"));
    }
    if !map.keys().all(|k| is_config_map_key(k)) {
        errors.push(
            "config.data keys must be 1 to 253 characters of [-._a-zA-Z0-9] and not '.' or '..'"
                .to_string(),
        );
    }
    let bytes: usize = map.iter().map(|(k, v)| k.len() + v.len()).sum();
    if bytes > MAX_DATA_BYTES {
        errors.push(format!("config.data exceeds {MAX_DATA_BYTES} bytes"));
    }
    errors
}

/// The resolved ConfigMap for a valid config; for `stop` the data is empty.
pub fn desired(config: &LocalConfigMapConfig, opts: &Options) -> Result<Desired, InvalidConfig> {
    if let Some(first) = validate(config, opts).into_iter().next() {
        return Err(InvalidConfig(first));
    }
    let resource = opts.resource();
    // validate() guarantees these are present and well-formed.
    let namespace = metadata_str(resource, "namespace").unwrap_or_default();
    let owner_uid = metadata_str(resource, "uid").unwrap_or_default();
    let data = match opts.event() {
        Event::Stop => BTreeMap::new(),
        _ => config.data.clone(),
    };
    Ok(Desired {
        namespace: namespace.to_string(),
        name: config_map_name(config, opts)
            .unwrap_or_default()
            .to_string(),
        owner_uid: owner_uid.to_string(),
        owner_name: metadata_str(resource, "name")
            .unwrap_or_default()
            .to_string(),
        data,
    })
}

/// The state identity: `["local-configmap", namespace, configMapName, profile]`.
///
/// Because the controller records the identity, the ConfigMap's name and
/// namespace cannot change after the first reconcile: that would orphan the
/// old ConfigMap.
///
/// ```
/// use blue_kubernetes::Options;
/// use local_configmap_operator::desired::{identity, LocalConfigMapConfig};
/// let resource = serde_json::json!({"metadata": {"name": "app", "namespace": "dev"}});
/// assert_eq!(
///     identity(&LocalConfigMapConfig::default(), &Options::from_resource(&resource)),
///     [Some("local-configmap".into()), Some("dev".into()), Some("app".into()), Some("dev--app".into())]
/// );
/// ```
pub fn identity(config: &LocalConfigMapConfig, opts: &Options) -> Vec<Option<String>> {
    vec![
        Some(IDENTITY_BACKEND.to_string()),
        metadata_str(opts.resource(), "namespace").map(str::to_string),
        config_map_name(config, opts).map(str::to_string),
        Some(opts.profile().to_string()),
    ]
}

/// `configMapName`, else the resource's name.
fn config_map_name<'a>(config: &'a LocalConfigMapConfig, opts: &'a Options) -> Option<&'a str> {
    match &config.config_map_name {
        None => metadata_str(opts.resource(), "name"),
        Some(name) => Some(name),
    }
}

fn metadata_str<'a>(resource: &'a Value, key: &str) -> Option<&'a str> {
    resource["metadata"][key].as_str().filter(|s| !s.is_empty())
}

fn is_profile(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && !s.chars().any(char::is_control)
}

/// A DNS-1123 subdomain: dot-separated labels of lowercase alphanumerics and
/// `-`, each starting and ending alphanumeric; at most 253 characters.
pub fn is_dns_subdomain(s: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    s.len() <= 253
        && s.split('.').all(|label| {
            let bytes = label.as_bytes();
            match (bytes.first(), bytes.last()) {
                (Some(&first), Some(&last)) => {
                    alnum(first) && alnum(last) && bytes.iter().all(|&b| alnum(b) || b == b'-')
                }
                _ => false,
            }
        })
}

/// A ConfigMap data key, as the API server accepts it.
pub fn is_config_map_key(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s != "."
        && s != ".."
        && !s.starts_with("..")
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opts() -> Options {
        Options::from_resource(&json!({
            "metadata": {"name": "app", "namespace": "dev", "uid": "uid-1"},
        }))
    }

    fn config(v: Value) -> LocalConfigMapConfig {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn defaults_name_the_config_map_after_the_resource_with_no_data() {
        let c = LocalConfigMapConfig::default();
        assert!(validate(&c, &opts()).is_empty());
        let d = desired(&c, &opts()).unwrap();
        assert_eq!(
            (d.namespace.as_str(), d.name.as_str(), d.owner_uid.as_str()),
            ("dev", "app", "uid-1")
        );
        assert!(d.data.is_empty());
    }

    #[test]
    fn data_and_name_come_from_config() {
        let c = config(json!({"configMapName": "settings.v1", "data": {"a": "1", "b.c": ""}}));
        let d = desired(&c, &opts()).unwrap();
        assert_eq!(d.name, "settings.v1");
        assert_eq!(d.data.get("a").map(String::as_str), Some("1"));
        assert_eq!(d.data.len(), 2);
    }

    #[test]
    fn stopped_resources_want_an_empty_config_map() {
        let resource = json!({
            "metadata": {"name": "app", "namespace": "dev", "uid": "uid-1"},
            "spec": {"state": "stopped"}
        });
        let c = config(json!({"data": {"a": "1"}}));
        let d = desired(&c, &Options::from_resource(&resource)).unwrap();
        assert!(d.data.is_empty());
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
            let errors = validate(&config(c.clone()), &opts());
            assert_eq!(errors.len(), 1, "{c}: {errors:?}");
            assert!(!errors[0].contains("hunter2"), "{errors:?}");
            assert!(desired(&config(c), &opts()).is_err());
        }
        let bad_profile = Options::from_resource(&json!({
            "metadata": {"name": "app", "namespace": "dev", "uid": "uid-1"},
            "spec": {"config": {"profile": ""}}
        }));
        assert_eq!(
            validate(&LocalConfigMapConfig::default(), &bad_profile).len(),
            1
        );
    }

    #[test]
    fn sizes_are_bounded() {
        let many: BTreeMap<String, String> = (0..=MAX_KEYS)
            .map(|i| (format!("k{i}"), "v".into()))
            .collect();
        let c = LocalConfigMapConfig {
            data: many,
            ..Default::default()
        };
        assert_eq!(validate(&c, &opts()).len(), 1);
        let big = "x".repeat(MAX_DATA_BYTES);
        assert_eq!(
            validate(&config(json!({"data": {"k": big}})), &opts()).len(),
            1
        );
        assert!(!is_dns_subdomain(&"a".repeat(254)));
        assert!(!is_config_map_key(&"a".repeat(254)));
    }

    #[test]
    fn resources_without_namespace_or_uid_are_invalid() {
        let o = Options::from_resource(&json!({"metadata": {"name": "app"}}));
        assert_eq!(validate(&LocalConfigMapConfig::default(), &o).len(), 2);
    }

    #[test]
    fn identity_includes_namespace_name_and_profile() {
        let o = Options::from_resource(&json!({
            "metadata": {"name": "app", "namespace": "dev", "uid": "uid-1"},
            "spec": {"config": {"profile": "p"}}
        }));
        let id = identity(&config(json!({"configMapName": "cm"})), &o);
        assert_eq!(
            id,
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
        for good in ["a", "a-b", "a.b-c.d1", "0x"] {
            assert!(is_dns_subdomain(good), "{good}");
        }
        for bad in ["", "A", "-a", "a-", "a..b", ".a", "a_b", "a/b"] {
            assert!(!is_dns_subdomain(bad), "{bad}");
        }
        for good in ["a", "A_b-c.d", ".env", "..."] {
            // "..." starts with ".." and is refused, like the API server does.
            assert_eq!(is_config_map_key(good), good != "...", "{good}");
        }
    }

    #[test]
    fn debug_hides_data() {
        let c = config(json!({"data": {"k": "hunter2"}}));
        assert!(!format!("{c:?}").contains("hunter2"));
        let d = desired(&c, &opts()).unwrap();
        assert!(!format!("{d:?}").contains("hunter2"));
    }
}
