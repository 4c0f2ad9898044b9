//! What the API server does with a CRD's structural schema on every write:
//! prune undeclared fields, apply defaults, then validate types, enums,
//! patterns, bounds and required fields.
//!
//! As kube-apiserver 1.20 does, where it differs from later releases: an
//! empty string is read as null, so `""` is refused wherever the schema
//! says `type` without `nullable` (1.20 built with a recent Go, as the
//! local control plane is).

use serde_json::{Map, Value};

/// The `openAPIV3Schema` of one served version of a CRD.
#[derive(Clone, Debug)]
pub(crate) struct Structural {
    root: Value,
}

/// The group, plural and schema of `crd`'s version `version`, or why not.
pub(crate) fn from_crd(crd: &Value, version: &str) -> Result<(String, String, Structural), String> {
    let group = crd.pointer("/spec/group").and_then(Value::as_str);
    let plural = crd.pointer("/spec/names/plural").and_then(Value::as_str);
    let (Some(group), Some(plural)) = (group, plural) else {
        return Err(
            "not a CustomResourceDefinition: spec.group or spec.names.plural missing".into(),
        );
    };
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
    let schema = versions
        .into_iter()
        .flatten()
        .find(|v| v["name"] == version)
        .and_then(|v| v.pointer("/schema/openAPIV3Schema"))
        .filter(|s| s.is_object())
        .ok_or_else(|| format!("the CRD has no openAPIV3Schema for version {version}"))?;
    Ok((
        group.to_string(),
        plural.to_string(),
        Structural {
            root: schema.clone(),
        },
    ))
}

impl Structural {
    /// The `openAPIV3Schema` itself.
    pub(crate) fn root(&self) -> &Value {
        &self.root
    }

    /// Prunes, defaults and validates `object` in place (`metadata` is the
    /// server's and left alone). Errors name the field and the rule, never
    /// the value.
    pub(crate) fn admit(&self, object: &mut Value) -> Result<(), Vec<String>> {
        let Some(fields) = object.as_object_mut() else {
            return Err(vec!["the object must be a JSON object".into()]);
        };
        // The server owns these; the schema neither prunes nor checks them.
        let kept: Vec<(&str, Value)> = ["metadata", "apiVersion", "kind"]
            .into_iter()
            .filter_map(|k| fields.remove(k).map(|v| (k, v)))
            .collect();
        let mut errors = Vec::new();
        let mut rest = Value::Object(std::mem::take(fields));
        normalize_numbers(&mut rest);
        prune(&mut rest, &self.root);
        default(&mut rest, &self.root);
        // Defaults are numbers as the server decoded the CRD: `0.0` is `0`.
        normalize_numbers(&mut rest);
        validate(&rest, &self.root, "", &mut errors);
        if let Value::Object(rest) = rest {
            *fields = rest;
        }
        for (k, v) in kept {
            fields.insert(k.into(), v);
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

/// What a default must be for the API server to take the CRD: nothing
/// it would prune, and valid once its own nested defaults are applied.
/// The errors name the field within the default and the rule.
pub(crate) fn check_default(default: &Value, schema: &Value) -> Vec<String> {
    let mut value = default.clone();
    normalize_numbers(&mut value);
    let mut pruned = value.clone();
    prune(&mut pruned, schema);
    if pruned != value {
        return vec!["must not have unknown fields".into()];
    }
    self::default(&mut value, schema);
    let mut errors = Vec::new();
    validate(&value, schema, "", &mut errors);
    errors
}

/// The server decodes JSON numbers as int64 where they are integral (so
/// `2.0` is stored as `2`) and as float64 otherwise (so an integer beyond
/// int64 is a float, and no `integer`).
fn normalize_numbers(value: &mut Value) {
    match value {
        Value::Number(n) if n.as_i64().is_none() => {
            let f = n.as_f64().unwrap_or_default();
            let integral = f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64;
            if integral && n.is_f64() {
                *value = Value::from(f as i64);
            } else if n.is_u64() {
                if let Some(n) = serde_json::Number::from_f64(f) {
                    *value = Value::Number(n);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize_numbers),
        Value::Object(fields) => fields.values_mut().for_each(normalize_numbers),
        _ => {}
    }
}

fn preserves(schema: &Value) -> bool {
    schema["x-kubernetes-preserve-unknown-fields"] == true
}

fn nullable(schema: &Value) -> bool {
    schema["nullable"] == true
}

/// Drops fields the schema does not declare, and nulls it does not allow.
fn prune(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            fields.retain(|k, v| {
                let sub = properties.and_then(|p| p.get(k)).or(additional);
                match sub {
                    Some(sub) => !v.is_null() || nullable(sub),
                    None => preserves(schema),
                }
            });
            for (k, v) in fields.iter_mut() {
                if let Some(sub) = properties.and_then(|p| p.get(k)).or(additional) {
                    prune(v, sub);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items") {
                items.iter_mut().for_each(|item| prune(item, sub));
            }
        }
        _ => {}
    }
}

/// Fills absent fields that declare a `default`, at every depth.
fn default(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(fields) => {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (k, sub) in properties {
                    // A null default is no default: the server drops it.
                    let given = sub.get("default").filter(|d| !d.is_null());
                    if let (None, Some(d)) = (fields.get(k), given) {
                        fields.insert(k.clone(), d.clone());
                    }
                    if let Some(v) = fields.get_mut(k) {
                        default(v, sub);
                    }
                }
            }
            if let Some(sub) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                fields.values_mut().for_each(|v| default(v, sub));
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items") {
                items.iter_mut().for_each(|item| default(item, sub));
            }
        }
        _ => {}
    }
}

fn at(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn validate(value: &Value, schema: &Value, path: &str, errors: &mut Vec<String>) {
    let mut fail = |rule: String| {
        errors.push(format!(
            "{}: {rule}",
            if path.is_empty() { "<root>" } else { path }
        ))
    };
    let allowed = schema.get("enum").and_then(Value::as_array);
    if value.is_null() {
        if !nullable(schema) && !preserves(schema) {
            fail("must not be null".into());
        } else if allowed.is_some_and(|a| !a.contains(value)) {
            // Nullable or not, an enum without null refuses it.
            fail("Unsupported value: null".into());
        }
        return;
    }
    let int_or_string = schema["x-kubernetes-int-or-string"] == true;
    let typed = schema.get("type").and_then(Value::as_str);
    if value == "" && (typed.is_some() || int_or_string) && !nullable(schema) {
        fail(format!(
            "must be of type {}: null (an empty string, as 1.20 reads it)",
            typed.unwrap_or("integer or string")
        ));
        return;
    }
    if int_or_string && !(value.is_string() || value.is_i64()) {
        fail("must be of type integer or string".into());
        return;
    }
    let type_ok = match typed {
        None => true,
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        Some(_) => true,
    };
    if !type_ok {
        fail(format!(
            "must be of type {}",
            schema["type"].as_str().unwrap_or("?")
        ));
        return;
    }
    if let Some(allowed) = allowed {
        if !allowed.contains(value) {
            fail(format!("must be one of {}", Value::Array(allowed.clone())));
        }
    }
    let bound = |k: &str| schema.get(k).and_then(Value::as_f64);
    let count = |k: &str| schema.get(k).and_then(Value::as_u64).map(|n| n as usize);
    match value {
        Value::String(s) => {
            let chars = s.chars().count();
            if count("maxLength").is_some_and(|max| chars > max) {
                fail("is longer than maxLength".into());
            }
            if count("minLength").is_some_and(|min| chars < min) {
                fail("is shorter than minLength".into());
            }
            if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
                match regex::Regex::new(pattern) {
                    Ok(re) if re.is_match(s) => {}
                    Ok(_) => fail(format!("must match {pattern}")),
                    Err(_) => fail(format!("has an unusable pattern {pattern}")),
                }
            }
            if schema["format"] == "date-time" && humantime::parse_rfc3339_weak(s).is_err() {
                fail("must be an RFC 3339 date-time".into());
            }
        }
        Value::Number(n) => {
            let n = n.as_f64().unwrap_or_default();
            let exclusive = |k: &str| schema[k] == true;
            if let Some(min) = bound("minimum") {
                if n < min || (exclusive("exclusiveMinimum") && n == min) {
                    fail("is below minimum".into());
                }
            }
            if let Some(max) = bound("maximum") {
                if n > max || (exclusive("exclusiveMaximum") && n == max) {
                    fail("is above maximum".into());
                }
            }
        }
        Value::Array(items) => {
            if count("maxItems").is_some_and(|max| items.len() > max) {
                fail("has more than maxItems".into());
            }
            if count("minItems").is_some_and(|min| items.len() < min) {
                fail("has fewer than minItems".into());
            }
            if let Some(sub) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    validate(item, sub, &format!("{path}[{i}]"), errors);
                }
            }
        }
        Value::Object(fields) => validate_object(fields, schema, path, errors),
        _ => {}
    }
    combinators(value, schema, path, errors);
}

/// `anyOf`, `oneOf`, `allOf` and `not`: value validations beside the
/// node's own (in a structural schema they add no types, except the
/// integer-or-string `anyOf`).
fn combinators(value: &Value, schema: &Value, path: &str, errors: &mut Vec<String>) {
    let passes = |branch: &Value| {
        let mut branch_errors = Vec::new();
        validate(value, branch, path, &mut branch_errors);
        branch_errors.is_empty()
    };
    let branches = |k: &str| {
        schema
            .get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let at = if path.is_empty() { "<root>" } else { path };
    let any_of = branches("anyOf");
    if !any_of.is_empty() && !any_of.iter().any(passes) {
        errors.push(format!("{at}: must validate at least one schema (anyOf)"));
    }
    let one_of = branches("oneOf");
    if !one_of.is_empty() && one_of.iter().filter(|b| passes(b)).count() != 1 {
        errors.push(format!(
            "{at}: must validate one and only one schema (oneOf)"
        ));
    }
    if !branches("allOf").iter().all(passes) {
        errors.push(format!("{at}: must validate all the schemas (allOf)"));
    }
    if schema.get("not").is_some_and(passes) {
        errors.push(format!("{at}: must not validate the schema (not)"));
    }
}

fn validate_object(
    fields: &Map<String, Value>,
    schema: &Value,
    path: &str,
    errors: &mut Vec<String>,
) {
    let count = |k: &str| schema.get(k).and_then(Value::as_u64).map(|n| n as usize);
    if count("maxProperties").is_some_and(|max| fields.len() > max) {
        errors.push(format!("{path}: has more than maxProperties"));
    }
    if count("minProperties").is_some_and(|min| fields.len() < min) {
        errors.push(format!("{path}: has fewer than minProperties"));
    }
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(key) = required.as_str().filter(|k| !fields.contains_key(*k)) {
            errors.push(format!("{}: Required value", at(path, key)));
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties").filter(|a| a.is_object());
    for (k, v) in fields {
        if let Some(sub) = properties.and_then(|p| p.get(k)).or(additional) {
            validate(v, sub, &at(path, k), errors);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Structural {
        Structural {
            root: json!({
                "type": "object",
                "properties": {
                    "spec": {
                        "type": "object",
                        "properties": {
                            "interval": {"type": "string", "pattern": "^[1-9][0-9]*s$", "default": "60s"},
                            "mode": {"type": "string", "enum": ["a", "b"]},
                            "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        },
                    },
                    "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                },
            }),
        }
    }

    #[test]
    fn undeclared_fields_are_pruned_and_defaults_filled() {
        let mut object = json!({
            "metadata": {"name": "a", "anything": 1},
            "spec": {"typo": 1, "open": {"kept": 1}, "labels": {"x": "y"}},
            "status": {"phase": "Ready", "undeclared": true},
        });
        schema().admit(&mut object).unwrap();
        assert_eq!(
            object,
            json!({
                "metadata": {"name": "a", "anything": 1},
                "spec": {"interval": "60s", "open": {"kept": 1}, "labels": {"x": "y"}},
                "status": {"phase": "Ready"},
            })
        );
    }

    #[test]
    fn types_enums_and_patterns_are_enforced_with_paths() {
        let mut object = json!({"spec": {"interval": "0s", "mode": "c", "labels": {"x": 1}}});
        let errors = schema().admit(&mut object).unwrap_err();
        assert_eq!(errors.len(), 3, "{errors:?}");
        for field in ["spec.interval", "spec.mode", "spec.labels.x"] {
            assert!(
                errors.iter().any(|e| e.starts_with(field)),
                "{field}: {errors:?}"
            );
        }
    }

    fn spec(properties: Value) -> Structural {
        Structural {
            root: json!({"type": "object", "properties": {
                "spec": {"type": "object", "properties": properties},
            }}),
        }
    }

    #[test]
    fn an_empty_string_is_refused_where_the_node_is_not_nullable() {
        // kube-apiserver 1.20 (built with a recent Go) reads "" as null.
        let schema = spec(json!({
            "plain": {"type": "string"},
            "nullable": {"type": "string", "nullable": true},
            "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        }));
        let mut refused = json!({"spec": {"plain": ""}});
        let errors = schema.admit(&mut refused).unwrap_err();
        assert!(
            errors[0].starts_with("spec.plain: must be of type string"),
            "{errors:?}"
        );
        let mut stored = json!({"spec": {"nullable": "", "open": {"x": ""}}});
        schema.admit(&mut stored).unwrap();
        assert_eq!(stored["spec"], json!({"nullable": "", "open": {"x": ""}}));
    }

    #[test]
    fn integral_numbers_are_stored_as_integers_and_beyond_int64_are_none() {
        let schema = spec(json!({
            "count": {"type": "integer"},
            "ratio": {"type": "number", "default": 0.0},
        }));
        let mut object = json!({"spec": {"count": 2.0}});
        schema.admit(&mut object).unwrap();
        assert_eq!(object["spec"], json!({"count": 2, "ratio": 0}));
        assert!(object["spec"]["count"].is_i64());
        let mut huge = json!({"spec": {"count": u64::MAX}});
        assert!(schema.admit(&mut huge).is_err());
    }

    #[test]
    fn a_null_is_refused_by_an_enum_without_it_even_when_nullable() {
        let schema = spec(json!({
            "mode": {"type": "string", "enum": ["a"], "nullable": true},
            "plain": {"type": "string", "enum": ["a"], "default": "a"},
        }));
        let mut object = json!({"spec": {"mode": null}});
        assert!(schema.admit(&mut object).is_err());
        // Not nullable: the null is pruned and the default applies.
        let mut object = json!({"spec": {"plain": null}});
        schema.admit(&mut object).unwrap();
        assert_eq!(object["spec"], json!({"plain": "a"}));
    }

    #[test]
    fn int_or_string_takes_an_integer_or_a_non_empty_string() {
        let schema = spec(json!({"port": {
            "x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}],
        }}));
        for port in [json!(80), json!("http")] {
            let mut object = json!({"spec": {"port": port}});
            schema.admit(&mut object).unwrap();
        }
        for port in [json!(""), json!(1.5), json!(true), json!({"a": 1})] {
            let mut object = json!({"spec": {"port": port}});
            assert!(schema.admit(&mut object).is_err(), "{port}");
        }
    }

    #[test]
    fn a_null_default_is_no_default() {
        let schema = spec(json!({"note": {"type": "string", "nullable": true, "default": null}}));
        let mut object = json!({"spec": {}});
        schema.admit(&mut object).unwrap();
        assert_eq!(object["spec"], json!({}));
    }
}
