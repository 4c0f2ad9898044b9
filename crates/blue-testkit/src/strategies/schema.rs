//! Strategies driven by a structural schema: values a CRD accepts, for
//! property tests over a package author's own config type.

use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value};

/// Values valid under a structural OpenAPI v3 `schema` (a CRD node such as
/// `spec.config`): objects with every `required` property and any subset of
/// the others, `enum` members, strings matching `pattern` within the
/// length bounds, numbers within `minimum`/`maximum`, bounded arrays and
/// maps. Open nodes (`x-kubernetes-preserve-unknown-fields`) get small
/// scalars.
///
/// # Panics
/// If a `pattern` is not a regular expression proptest can generate from.
///
/// ```
/// use blue_testkit::strategies::arb_from_schema;
/// use proptest::prelude::*;
/// let schema = serde_json::json!({
///     "type": "object",
///     "required": ["name"],
///     "properties": {
///         "name": {"type": "string", "pattern": "^[a-z]{1,5}$"},
///         "size": {"type": "integer", "minimum": 1, "maximum": 64},
///         "tier": {"type": "string", "enum": ["small", "large"]},
///     },
/// });
/// proptest!(|(config in arb_from_schema(&schema))| {
///     let name = config["name"].as_str().unwrap();
///     prop_assert!((1..=5).contains(&name.len()));
///     prop_assert!(config.get("size").is_none_or(|s| (1..=64).contains(&s.as_i64().unwrap())));
/// });
/// ```
pub fn arb_from_schema(schema: &Value) -> BoxedStrategy<Value> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let values: Vec<Value> = values.iter().filter(|v| !v.is_null()).cloned().collect();
        return select(values).boxed();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => any::<bool>().prop_map(Value::from).boxed(),
        Some("integer") => {
            let (min, max) = bounds(schema, -1000.0, 1000.0);
            (min.ceil() as i64..=max.floor() as i64)
                .prop_map(Value::from)
                .boxed()
        }
        Some("number") => {
            let (min, max) = bounds(schema, -1000.0, 1000.0);
            (min..=max).prop_map(Value::from).boxed()
        }
        Some("string") => string(schema),
        Some("array") => {
            let items = schema.get("items").map_or_else(scalar, arb_from_schema);
            let (min, max) = sizes(schema, "minItems", "maxItems");
            proptest::collection::vec(items, min..=max)
                .prop_map(Value::from)
                .boxed()
        }
        Some("object") => object(schema),
        _ => scalar(),
    }
}

/// `[minimum, maximum]`, exclusive bounds nudged inward, unset ones defaulted.
fn bounds(schema: &Value, low: f64, high: f64) -> (f64, f64) {
    let get = |k: &str| schema.get(k).and_then(Value::as_f64);
    let step = |k: &str| if schema[k] == true { 1.0 } else { 0.0 };
    let min = get("minimum").map_or(low, |m| m + step("exclusiveMinimum"));
    let max = get("maximum").map_or(high.max(min + 1000.0), |m| m - step("exclusiveMaximum"));
    (min, max.max(min))
}

/// A small range of collection sizes within the schema's bounds.
fn sizes(schema: &Value, min_key: &str, max_key: &str) -> (usize, usize) {
    let get = |k: &str| schema.get(k).and_then(Value::as_u64).map(|n| n as usize);
    let min = get(min_key).unwrap_or(0);
    let max = get(max_key).unwrap_or(usize::MAX).min(min + 3);
    (min, max.max(min))
}

fn string(schema: &Value) -> BoxedStrategy<Value> {
    let (min, max) = {
        let get = |k: &str| schema.get(k).and_then(Value::as_u64).map(|n| n as usize);
        let min = get("minLength").unwrap_or(0);
        (
            min,
            get("maxLength").unwrap_or(min + 12).min(min + 12).max(min),
        )
    };
    if schema["format"] == "date-time" {
        return (0u64..4_102_444_800_000)
            .prop_map(|ms| Value::from(crate::rfc3339(ms)))
            .boxed();
    }
    match schema.get("pattern").and_then(Value::as_str) {
        Some(pattern) => {
            // Generated strings match whole, so the outer anchors add nothing
            // (and proptest cannot generate from anchors).
            let body = pattern.strip_prefix('^').unwrap_or(pattern);
            let body = match body.strip_suffix('$') {
                Some(b) if !b.ends_with('\\') => b,
                _ => body,
            };
            let strategy = proptest::string::string_regex(body)
                .unwrap_or_else(|e| panic!("arb_from_schema: pattern {pattern}: {e}"));
            // A pattern rarely bounds the length itself; the schema may.
            strategy
                .prop_filter("outside the schema's length bounds", move |s| {
                    (min..=max.max(min + 64)).contains(&s.chars().count())
                })
                .prop_map(Value::from)
                .boxed()
        }
        None => proptest::string::string_regex(&format!("[a-z0-9]{{{min},{max}}}"))
            .expect("a valid character class")
            .prop_map(Value::from)
            .boxed(),
    }
}

fn object(schema: &Value) -> BoxedStrategy<Value> {
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str().map(str::to_string))
        .collect();
    let mut fields: Vec<BoxedStrategy<Option<(String, Value)>>> = Vec::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, sub) in properties {
            let name = name.clone();
            let value = arb_from_schema(sub);
            if required.contains(&name) {
                fields.push(value.prop_map(move |v| Some((name.clone(), v))).boxed());
            } else {
                let pair = value.prop_map(move |v| (name.clone(), v));
                fields.push(proptest::option::of(pair).boxed());
            }
        }
    }
    let extra = match schema.get("additionalProperties").filter(|a| a.is_object()) {
        Some(sub) => {
            let (min, max) = sizes(schema, "minProperties", "maxProperties");
            proptest::collection::btree_map("[a-z][a-z0-9]{0,7}", arb_from_schema(sub), min..=max)
                .prop_map(|m| m.into_iter().collect::<Vec<_>>())
                .boxed()
        }
        None => Just(Vec::new()).boxed(),
    };
    (fields, extra)
        .prop_map(|(fields, extra)| {
            let mut map: Map<String, Value> = extra.into_iter().collect();
            map.extend(fields.into_iter().flatten());
            Value::Object(map)
        })
        .boxed()
}

fn scalar() -> BoxedStrategy<Value> {
    prop_oneof![
        "[a-z0-9]{0,8}".prop_map(Value::from),
        (0i64..1000).prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
    ]
    .boxed()
}

/// Configs a CRD accepts: [`arb_from_schema`] over the `spec.config` node of
/// `crd`'s first version (e.g. one generated by [`blue_kubernetes::crd::generate`]).
///
/// # Panics
/// If the CRD has no `spec.config` schema.
///
/// ```
/// use blue_testkit::strategies::arb_config_from_crd;
/// use proptest::prelude::*;
/// let crd = serde_json::json!({"spec": {"versions": [{"schema": {"openAPIV3Schema": {
///     "type": "object",
///     "properties": {"spec": {"type": "object", "properties": {"config": {
///         "type": "object", "properties": {"size": {"type": "integer", "minimum": 1}},
///     }}}},
/// }}}]}});
/// proptest!(|(config in arb_config_from_crd(&crd))| {
///     prop_assert!(config.get("size").is_none_or(|s| s.as_i64().unwrap() >= 1));
/// });
/// ```
pub fn arb_config_from_crd(crd: &Value) -> BoxedStrategy<Value> {
    let path = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/config";
    let schema = crd
        .pointer(path)
        .unwrap_or_else(|| panic!("arb_config_from_crd: the CRD has no spec.config schema"));
    arb_from_schema(schema)
}

/// A valid `spec`: any of the common fields with valid values (`state`,
/// `suspend`, `reconcileInterval`, `deletionPolicy`) around a `config` from
/// `config`, your own strategy (e.g. [`arb_config_from_crd`], or
/// `any::<MyConfig>()` serialized).
///
/// ```
/// use blue_testkit::strategies::arb_spec_with;
/// use proptest::prelude::*;
/// let sizes = (1u32..10).prop_map(|size| serde_json::json!({"size": size}));
/// proptest!(|(spec in arb_spec_with(sizes))| {
///     prop_assert!(spec["config"]["size"].as_u64().unwrap() < 10);
/// });
/// ```
pub fn arb_spec_with(config: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
    (
        proptest::option::of(select(&["running", "stopped"][..])),
        proptest::option::of(any::<bool>()),
        proptest::option::of(super::arb_valid_reconcile_interval()),
        proptest::option::of(select(&["Retain", "Destroy"][..])),
        config,
    )
        .prop_map(|(state, suspend, interval, policy, config)| {
            let mut spec = Map::new();
            let fields = [
                ("state", state.map(Value::from)),
                ("suspend", suspend.map(Value::from)),
                ("reconcileInterval", interval.map(Value::from)),
                ("deletionPolicy", policy.map(Value::from)),
            ];
            for (key, value) in fields {
                if let Some(value) = value {
                    spec.insert(key.into(), value);
                }
            }
            spec.insert("config".into(), config);
            Value::Object(spec)
        })
}
