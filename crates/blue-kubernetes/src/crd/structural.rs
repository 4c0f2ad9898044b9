//! Rewrites a schemars OpenAPI v3 schema into a Kubernetes *structural*
//! schema: every node typed, no `$ref`, no keywords the API server does not
//! know, open objects marked `x-kubernetes-preserve-unknown-fields`.

use crate::Error;
use serde_json::{json, Map, Value};

/// `JSONSchemaProps` fields the API server knows; anything else is dropped.
const KNOWN: [&str; 24] = [
    "type",
    "format",
    "description",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "properties",
    "additionalProperties",
    "nullable",
    "example",
];

/// Formats the API server recognises; schemars' `uint32` and friends are
/// dropped (their `minimum` already says what matters).
const FORMATS: [&str; 7] = [
    "int32",
    "int64",
    "float",
    "double",
    "byte",
    "date",
    "date-time",
];

/// Makes `schema` structural in place. `path` names the node in errors.
pub(crate) fn rewrite(schema: &mut Value, path: &str) -> Result<(), Error> {
    let not_structural = |why: &'static str| {
        Err(Error::NotStructural {
            path: path.to_string(),
            why,
        })
    };
    let Some(node) = schema.as_object_mut() else {
        return not_structural("a schema must be an object");
    };
    for keyword in ["$ref", "oneOf", "anyOf", "allOf", "not"] {
        if node.contains_key(keyword) {
            return not_structural("a config type must be plain structs, maps, lists, options and unit enums (no $ref, oneOf, anyOf, allOf or not)");
        }
    }
    if let Some(Value::Array(types)) = node.get("type").cloned() {
        let (nulls, rest): (Vec<_>, Vec<_>) = types.into_iter().partition(|t| t == "null");
        if rest.len() != 1 {
            return not_structural("a node must have exactly one type");
        }
        node.insert("type".into(), rest[0].clone());
        if !nulls.is_empty() {
            node.insert("nullable".into(), json!(true));
        }
    }
    // Draft-2020 numeric exclusive bounds are OpenAPI v3 booleans.
    for (exclusive, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if let Some(n) = node.get(exclusive).filter(|v| v.is_number()).cloned() {
            node.insert(bound.into(), n);
            node.insert(exclusive.into(), json!(true));
        }
    }
    if node
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| !FORMATS.contains(&f))
    {
        node.remove("format");
    }
    if node.get("nullable") == Some(&json!(true)) {
        if let Some(Value::Array(values)) = node.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
    }
    node.retain(|k, _| KNOWN.contains(&k.as_str()) || k.starts_with("x-kubernetes-"));
    match node.remove("additionalProperties") {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => open(node),
        Some(Value::Object(o)) if o.is_empty() => open(node),
        Some(mut inner) => {
            rewrite(&mut inner, &format!("{path}.*"))?;
            node.insert("additionalProperties".into(), inner);
        }
    }
    if let Some(Value::Object(properties)) = node.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            rewrite(property, &format!("{path}.{name}"))?;
        }
    }
    if let Some(items) = node.get_mut("items") {
        rewrite(items, &format!("{path}[]"))?;
    }
    let typed = node.get("type").is_some_and(Value::is_string);
    let preserved = node.contains_key("x-kubernetes-preserve-unknown-fields")
        || node.contains_key("x-kubernetes-int-or-string");
    if !typed && !preserved {
        if node.keys().all(|k| k == "description" || k == "default") {
            // Any JSON value (e.g. a `serde_json::Value` field).
            open(node);
        } else {
            return not_structural("every node needs a type");
        }
    }
    Ok(())
}

fn open(node: &mut Map<String, Value>) {
    node.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_maps_and_any_values_preserve_unknown_fields() {
        let mut schema = json!({
            "$schema": "x", "type": "object", "additionalProperties": false,
            "properties": {
                "any": {"description": "anything"},
                "open": {"type": "object", "additionalProperties": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "count": {"type": ["integer", "null"], "format": "uint32", "minimum": 0},
                "mode": {"type": "string", "enum": ["a", null], "nullable": true},
            }
        });
        rewrite(&mut schema, "config").unwrap();
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "any": {"description": "anything", "x-kubernetes-preserve-unknown-fields": true},
                    "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "count": {"type": "integer", "nullable": true, "minimum": 0},
                    "mode": {"type": "string", "enum": ["a"], "nullable": true},
                }
            })
        );
    }

    #[test]
    fn unions_and_references_are_refused_with_their_path() {
        for schema in [
            json!({"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}]}}}),
            json!({"type": "object", "properties": {"x": {"$ref": "#/y"}}}),
            json!({"type": "object", "properties": {"x": {"type": ["string", "integer"]}}}),
            json!({"type": "object", "properties": {"x": {"minimum": 1}}}),
        ] {
            let err = rewrite(&mut schema.clone(), "config").unwrap_err();
            assert!(err.to_string().contains("config.x"), "{err}");
        }
    }
}
