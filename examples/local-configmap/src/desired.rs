//! What a `LocalConfigMap` asks for: validation, identity and the desired
//! ConfigMap, all computed from the callback options alone (no I/O).
//!
//! Validation messages name the offending field but never echo a value:
//! the controller drops them anyway, but a package should not depend on that.

use blue_kubernetes::{Event, Options, EVENT_KEY, RESOURCE_KEY};
use serde_json::Value;
use std::collections::BTreeMap;

/// `spec.config` key naming the ConfigMap (default: the resource's name).
pub const CONFIG_MAP_NAME_KEY: &str = "configMapName";
/// `spec.config` key holding the ConfigMap's data (a string map).
pub const DATA_KEY: &str = "data";
/// `spec.config` key the controller reads to refuse destruction.
pub const PREVENT_DESTROY_KEY: &str = "compute-prevent-destroy";
/// `spec.config` key holding the profile (read by the controller too).
pub const PROFILE_KEY: &str = "profile";

/// Most keys a ConfigMap may get from one resource.
pub const MAX_KEYS: usize = 256;
/// Most bytes (keys plus values) of data: half the API server's 1 MiB object
/// limit, leaving room for metadata and the `last-applied` copy some tools keep.
pub const MAX_DATA_BYTES: usize = 512 * 1024;

/// The first element of every identity: the backend this package manages.
pub const IDENTITY_BACKEND: &str = "local-configmap";

/// The ConfigMap a `LocalConfigMap` wants, fully resolved.
#[derive(Clone, PartialEq, Eq)]
pub struct Desired {
    /// Namespace of both the resource and its ConfigMap.
    pub namespace: String,
    /// The ConfigMap's name.
    pub name: String,
    /// The resource's `metadata.uid`, recorded on the ConfigMap as its owner.
    pub owner_uid: String,
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

/// All problems with `opts`; empty when valid.
///
/// ```
/// use blue_kubernetes::Options;
/// use local_configmap_operator::desired::validate;
/// let resource = serde_json::json!({
///     "metadata": {"name": "app", "namespace": "dev", "uid": "u-1"},
///     "spec": {"config": {"configMapName": "Not_A_Name", "data": {"k": 1}}}
/// });
/// let errors = validate(&Options::from_resource(&resource));
/// assert_eq!(errors.len(), 2);
/// assert!(errors.iter().all(|e| !e.contains("Not_A_Name")));
/// ```
pub fn validate(opts: &Options) -> Vec<String> {
    let mut errors = Vec::new();
    let resource = opts.resource();
    if metadata_str(resource, "namespace").is_none() {
        errors.push("metadata.namespace is missing".to_string());
    }
    if metadata_str(resource, "uid").is_none() {
        errors.push("metadata.uid is missing".to_string());
    }
    if !opts.get_str(PROFILE_KEY).is_some_and(is_profile) {
        errors.push("config.profile must be 1 to 253 printable characters".to_string());
    }
    match opts.get(CONFIG_MAP_NAME_KEY) {
        None => {}
        Some(Value::String(name)) if is_dns_subdomain(name) => {}
        Some(_) => errors.push(
            "config.configMapName must be a DNS-1123 subdomain (lowercase alphanumerics, '-' and '.', at most 253 characters)"
                .to_string(),
        ),
    }
    match opts.get(DATA_KEY) {
        None => {}
        Some(Value::Object(map)) => errors.extend(data_errors(map)),
        Some(_) => errors.push("config.data must be a map of strings".to_string()),
    }
    match opts.get(PREVENT_DESTROY_KEY) {
        None | Some(Value::Bool(_)) => {}
        Some(Value::String(s)) if s == "true" || s == "false" => {}
        Some(_) => errors.push("config.compute-prevent-destroy must be a boolean".to_string()),
    }
    let known = [
        CONFIG_MAP_NAME_KEY,
        DATA_KEY,
        PREVENT_DESTROY_KEY,
        PROFILE_KEY,
        EVENT_KEY,
        RESOURCE_KEY,
    ];
    let unknown = opts
        .as_map()
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .count();
    if unknown > 0 {
        // Counted, not named: a mistyped key may be a pasted secret.
        errors.push(format!("config has {unknown} unknown field(s)"));
    }
    errors
}

fn data_errors(map: &serde_json::Map<String, Value>) -> Vec<String> {
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
    if !map.values().all(Value::is_string) {
        errors.push("config.data values must all be strings".to_string());
    }
    let bytes: usize = map
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if bytes > MAX_DATA_BYTES {
        errors.push(format!("config.data exceeds {MAX_DATA_BYTES} bytes"));
    }
    errors
}

/// The resolved ConfigMap for valid options; for `stop` the data is empty.
pub fn desired(opts: &Options) -> Result<Desired, InvalidConfig> {
    if let Some(first) = validate(opts).into_iter().next() {
        return Err(InvalidConfig(first));
    }
    let resource = opts.resource();
    // validate() guarantees these are present and well-formed.
    let namespace = metadata_str(resource, "namespace").unwrap_or_default();
    let owner_uid = metadata_str(resource, "uid").unwrap_or_default();
    let data = match (opts.event(), opts.get(DATA_KEY)) {
        (Event::Stop, _) | (_, None) => BTreeMap::new(),
        (_, Some(Value::Object(map))) => map
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect(),
        (_, Some(_)) => BTreeMap::new(),
    };
    Ok(Desired {
        namespace: namespace.to_string(),
        name: config_map_name(opts).unwrap_or_default().to_string(),
        owner_uid: owner_uid.to_string(),
        data,
    })
}

/// The state identity: `["local-configmap", namespace, configMapName, profile]`.
///
/// Never fails: an unusable field becomes `None`, so a bad name yields a
/// stable identity and validation (not a lock error) reports it. Because the
/// controller records the identity, the ConfigMap's name and namespace cannot
/// change after the first reconcile: that would orphan the old ConfigMap.
///
/// ```
/// use blue_kubernetes::Options;
/// use local_configmap_operator::desired::identity;
/// let resource = serde_json::json!({"metadata": {"name": "app", "namespace": "dev"}});
/// assert_eq!(
///     identity(&Options::from_resource(&resource)),
///     [Some("local-configmap".into()), Some("dev".into()), Some("app".into()), Some("dev--app".into())]
/// );
/// ```
pub fn identity(opts: &Options) -> Vec<Option<String>> {
    vec![
        Some(IDENTITY_BACKEND.to_string()),
        metadata_str(opts.resource(), "namespace").map(str::to_string),
        config_map_name(opts).map(str::to_string),
        Some(opts.profile().to_string()),
    ]
}

/// `config.configMapName` when it is a string, else the resource's name.
fn config_map_name(opts: &Options) -> Option<&str> {
    match opts.get(CONFIG_MAP_NAME_KEY) {
        None => metadata_str(opts.resource(), "name"),
        Some(v) => v.as_str(),
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

    fn opts(config: Value) -> Options {
        Options::from_resource(&json!({
            "metadata": {"name": "app", "namespace": "dev", "uid": "uid-1"},
            "spec": {"config": config}
        }))
    }

    #[test]
    fn defaults_name_the_config_map_after_the_resource_with_no_data() {
        let o = opts(json!({}));
        assert!(validate(&o).is_empty());
        let d = desired(&o).unwrap();
        assert_eq!(
            (d.namespace.as_str(), d.name.as_str(), d.owner_uid.as_str()),
            ("dev", "app", "uid-1")
        );
        assert!(d.data.is_empty());
    }

    #[test]
    fn data_and_name_come_from_config() {
        let d = desired(&opts(
            json!({"configMapName": "settings.v1", "data": {"a": "1", "b.c": ""}}),
        ))
        .unwrap();
        assert_eq!(d.name, "settings.v1");
        assert_eq!(d.data.get("a").map(String::as_str), Some("1"));
        assert_eq!(d.data.len(), 2);
    }

    #[test]
    fn stopped_resources_want_an_empty_config_map() {
        let resource = json!({
            "metadata": {"name": "app", "namespace": "dev", "uid": "uid-1"},
            "spec": {"state": "stopped", "config": {"data": {"a": "1"}}}
        });
        let d = desired(&Options::from_resource(&resource)).unwrap();
        assert!(d.data.is_empty());
    }

    #[test]
    fn invalid_fields_are_reported_without_their_values() {
        let secret = "hunter2-SECRET";
        let cases = [
            json!({"configMapName": secret}),
            json!({"configMapName": 7}),
            json!({"data": secret}),
            json!({"data": {"ok": {"nested": secret}}}),
            json!({"data": {secret.replace('-', "/"): "v"}}),
            json!({"data": {"..hidden": "v"}}),
            json!({"compute-prevent-destroy": secret}),
            json!({"profile": ""}),
            json!({ secret: "typo" }),
        ];
        for config in cases {
            let errors = validate(&opts(config.clone()));
            assert_eq!(errors.len(), 1, "{config}: {errors:?}");
            assert!(!errors[0].contains(secret), "{errors:?}");
            assert!(!errors[0].contains("hunter2"), "{errors:?}");
            assert!(desired(&opts(config)).is_err());
        }
    }

    #[test]
    fn sizes_are_bounded() {
        let many: serde_json::Map<String, Value> = (0..=MAX_KEYS)
            .map(|i| (format!("k{i}"), json!("v")))
            .collect();
        assert_eq!(validate(&opts(json!({ "data": many }))).len(), 1);
        let big = "x".repeat(MAX_DATA_BYTES);
        assert_eq!(validate(&opts(json!({"data": {"k": big}}))).len(), 1);
        assert!(!is_dns_subdomain(&"a".repeat(254)));
        assert!(!is_config_map_key(&"a".repeat(254)));
    }

    #[test]
    fn resources_without_namespace_or_uid_are_invalid() {
        let o = Options::from_resource(&json!({"metadata": {"name": "app"}}));
        assert_eq!(validate(&o).len(), 2);
    }

    #[test]
    fn identity_includes_namespace_name_and_profile() {
        let id = identity(&opts(json!({"configMapName": "cm", "profile": "p"})));
        assert_eq!(
            id,
            [
                Some("local-configmap".to_string()),
                Some("dev".to_string()),
                Some("cm".to_string()),
                Some("p".to_string())
            ]
        );
        // A non-string name still yields an identity; validation reports it.
        assert_eq!(identity(&opts(json!({"configMapName": 3})))[2], None);
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
        let d = desired(&opts(json!({"data": {"k": "hunter2"}}))).unwrap();
        assert!(!format!("{d:?}").contains("hunter2"));
    }
}
