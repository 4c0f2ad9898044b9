//! Rewrites a schemars OpenAPI v3 schema into a Kubernetes *structural*
//! schema the API server accepts: every node typed, no `$ref`, no keywords
//! the API server does not know or forbids, open objects marked
//! `x-kubernetes-preserve-unknown-fields`, defaults it would not refuse.
//! Where Kubernetes 1.20 is stricter than later releases the schema is
//! written for 1.20 (listed in [`crd`](super::crd)'s docs).

use super::{defaults, unions};
use crate::Error;
use serde_json::{json, Map, Value};

/// `JSONSchemaProps` fields the API server knows and allows; anything else
/// is dropped (`uniqueItems: true` is refused: sets deduplicate anyway).
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
    // Only as `x-kubernetes-int-or-string` writes it (see `unions`).
    "anyOf",
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

/// Why a keyword has no structural form.
fn refusal(keyword: &str) -> &'static str {
    match keyword {
        "$ref" => "a recursive type has no structural schema (every level must be spelled out)",
        "oneOf" => "an enum with data (struct, tuple or newtype variants, however tagged) has no structural schema: use unit variants, or a struct with an optional field per variant",
        _ => "allOf and not have no structural schema",
    }
}

/// Makes `schema` structural in place. `path` names the node in errors.
pub(crate) fn rewrite(schema: &mut Value, path: &str) -> Result<(), Error> {
    let not_structural = |why: &'static str| Error::NotStructural {
        path: path.to_string(),
        why,
    };
    let Some(node) = schema.as_object_mut() else {
        return Err(not_structural("a schema must be an object"));
    };
    if node.contains_key("anyOf") {
        unions::collapse(node).map_err(not_structural)?;
    }
    for keyword in ["$ref", "oneOf", "allOf", "not"] {
        if node.contains_key(keyword) {
            return Err(not_structural(refusal(keyword)));
        }
    }
    if let Some(Value::Array(types)) = node.get("type").cloned() {
        let (nulls, rest): (Vec<_>, Vec<_>) = types.into_iter().partition(|t| t == "null");
        if rest.len() != 1 {
            return Err(not_structural("a node must have exactly one type"));
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
    nullability(node);
    node.retain(|k, _| KNOWN.contains(&k.as_str()) || k.starts_with("x-kubernetes-"));
    match node.remove("additionalProperties") {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => open(node),
        Some(Value::Object(o)) if o.is_empty() => open(node),
        // A flattened map beside declared fields: the server takes no map
        // schema beside `properties`, so the extra keys are kept unchecked
        // (serde still checks them when the controller decodes the config).
        Some(_) if node.get("properties").is_some_and(|p| p != &json!({})) => open(node),
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
            return Err(not_structural("every node needs a type"));
        }
    }
    // Last: the default is fitted to the node as rewritten.
    defaults::fit(node);
    Ok(())
}

/// Enums are never nullable and other strings always are: on Kubernetes
/// 1.20 a string that is not nullable refuses `""`, and an enum refuses a
/// `null` it does not list (see [`crd`](super::crd)'s docs).
fn nullability(node: &mut Map<String, Value>) {
    if let Some(Value::Array(values)) = node.get_mut("enum") {
        values.retain(|v| !v.is_null());
        node.remove("nullable");
    } else if node.get("type").is_some_and(|t| t == "string") {
        node.insert("nullable".into(), json!(true));
    }
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
                    "labels": {"type": "object", "additionalProperties": {"type": "string", "nullable": true}},
                    "count": {"type": "integer", "nullable": true, "minimum": 0},
                    "mode": {"type": "string", "enum": ["a"]},
                }
            })
        );
    }

    #[test]
    fn unions_and_references_are_refused_with_their_path() {
        for schema in [
            json!({"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "object"}]}}}),
            json!({"type": "object", "properties": {"x": {"oneOf": [{"type": "string"}]}}}),
            json!({"type": "object", "properties": {"x": {"$ref": "#/y"}}}),
            json!({"type": "object", "properties": {"x": {"type": ["string", "integer"]}}}),
            json!({"type": "object", "properties": {"x": {"minimum": 1}}}),
        ] {
            let err = rewrite(&mut schema.clone(), "config").unwrap_err();
            assert!(err.to_string().contains("config.x"), "{err}");
        }
    }
}
