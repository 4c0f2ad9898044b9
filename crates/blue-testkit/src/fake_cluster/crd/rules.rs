//! What kube-apiserver 1.20 refuses in a CRD's `openAPIV3Schema`: a schema
//! that is not structural, keywords it forbids, and defaults it would
//! prune or that fail their own node.

use super::super::schema;
use serde_json::Value;

const TYPES: [&str; 6] = ["object", "array", "string", "integer", "number", "boolean"];

/// Every reason the server would refuse `root`, each naming the node the
/// way the server does (`properties[spec].properties[size].default`).
pub(crate) fn check(root: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    node(root, "openAPIV3Schema", &mut errors);
    errors
}

fn node(schema: &Value, path: &str, errors: &mut Vec<String>) {
    let mut fail = |field: &str, why: &str| errors.push(format!("{path}{field}: {why}"));
    let Some(fields) = schema.as_object() else {
        fail("", "must be a schema object");
        return;
    };
    let int_or_string = schema["x-kubernetes-int-or-string"] == true;
    let preserves = schema["x-kubernetes-preserve-unknown-fields"] == true;
    match schema.get("type") {
        Some(Value::String(t)) if TYPES.contains(&t.as_str()) => {
            if int_or_string {
                fail(
                    ".type",
                    "Forbidden: must be empty for x-kubernetes-int-or-string",
                );
            }
        }
        Some(_) => fail(".type", "Unsupported value"),
        None if int_or_string || preserves => {}
        None => fail(
            ".type",
            "Required value: must not be empty for specified object fields",
        ),
    }
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        fail(
            ".x-kubernetes-preserve-unknown-fields",
            "Invalid value: must be true or undefined",
        );
    }
    let has_properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    if has_properties && fields.contains_key("additionalProperties") {
        fail(
            ".additionalProperties",
            "Forbidden: additionalProperties and properties are mutual exclusive",
        );
    }
    if schema["uniqueItems"] == true {
        fail(
            ".uniqueItems",
            "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        );
    }
    if fields.contains_key("$ref") {
        fail(".$ref", "Forbidden: $ref is not supported");
    }
    if schema.get("items").is_some_and(|i| !i.is_object()) {
        fail(
            ".items",
            "Forbidden: items must be a schema object and not an array",
        );
    }
    for keyword in ["anyOf", "oneOf", "allOf"] {
        let branches = schema.get(keyword).and_then(Value::as_array);
        for (i, branch) in branches.into_iter().flatten().enumerate() {
            value_validation(
                branch,
                &format!("{path}.{keyword}[{i}]"),
                int_or_string && keyword == "anyOf",
                errors,
            );
        }
    }
    if let Some(not) = schema.get("not") {
        value_validation(not, &format!("{path}.not"), false, errors);
    }
    if let Some(default) = schema.get("default").filter(|d| !d.is_null()) {
        for why in schema::check_default(default, schema) {
            // The validator names fields within the default from its root.
            match why.strip_prefix("<root>: ") {
                Some(rule) => errors.push(format!("{path}.default: {rule}")),
                None if why.starts_with("must ") => errors.push(format!("{path}.default: {why}")),
                None => errors.push(format!("{path}.default.{why}")),
            }
        }
    }
    let children = schema.get("properties").and_then(Value::as_object);
    for (name, child) in children.into_iter().flatten() {
        node(child, &format!("{path}.properties[{name}]"), errors);
    }
    if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        node(additional, &format!("{path}.additionalProperties"), errors);
    }
    if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
        node(items, &format!("{path}.items"), errors);
    }
}

/// A branch of `anyOf`, `oneOf`, `allOf` or `not` may only validate
/// values: no type, default, nullability or description of its own, except
/// the `{type: integer}` and `{type: string}` of an int-or-string node.
fn value_validation(branch: &Value, path: &str, int_or_string: bool, errors: &mut Vec<String>) {
    let scalar = branch
        .get("type")
        .is_some_and(|t| t == "integer" || t == "string");
    for key in [
        "type",
        "default",
        "nullable",
        "description",
        "additionalProperties",
    ] {
        let allowed = key == "type" && int_or_string && scalar;
        if branch.get(key).is_some() && !allowed {
            errors.push(format!(
                "{path}.{key}: Forbidden: must be empty to be structural"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(properties: Value) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": properties}}})
    }

    #[test]
    fn what_1_20_refuses_in_a_schema_is_refused_naming_the_node() {
        let cases = [
            (
                json!({"c": {"type": "string", "default": ""}}),
                "properties[c].default",
            ),
            (
                json!({"c": {"description": "no type"}}),
                "properties[c].type",
            ),
            (
                json!({"c": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}),
                "properties[c].uniqueItems",
            ),
            (
                json!({"c": {"type": "object", "properties": {"a": {"type": "string"}},
                             "additionalProperties": false}}),
                "properties[c].additionalProperties",
            ),
            (
                json!({"c": {"type": "object", "default": {"typo": 1},
                             "properties": {"a": {"type": "integer"}}}}),
                "properties[c].default",
            ),
            (
                json!({"c": {"type": "object", "default": {}, "required": ["a"],
                             "properties": {"a": {"type": "string"}}}}),
                "properties[c].default.a",
            ),
            (
                json!({"c": {"type": "object", "default": {"n": null},
                             "properties": {"n": {"type": "integer"}}}}),
                "properties[c].default",
            ),
            (
                json!({"c": {"x-kubernetes-int-or-string": true,
                             "anyOf": [{"type": "integer"}, {"type": "string", "nullable": true}]}}),
                "properties[c].anyOf[1].nullable",
            ),
            (
                json!({"c": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}),
                "properties[c].anyOf[0].type",
            ),
        ];
        for (properties, node) in cases {
            let errors = check(&config(properties.clone()));
            let expected = format!("openAPIV3Schema.properties[spec].{node}: ");
            assert!(
                errors.iter().any(|e| e.starts_with(&expected)),
                "{properties}: {errors:?}"
            );
        }
    }

    #[test]
    fn structural_schemas_with_fitting_defaults_are_accepted() {
        let schema = config(json!({
            "comment": {"type": "string", "nullable": true, "default": ""},
            "note": {"type": "string", "default": null},
            "limits": {"type": "object", "default": {"cpu": "1"}, "properties": {
                "cpu": {"type": "string"},
                "memory": {"type": "string", "default": "1Gi"},
            }},
            "port": {"x-kubernetes-int-or-string": true,
                     "anyOf": [{"type": "integer"}, {"type": "string"}], "default": 80},
            "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                     "default": {"any": ""}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "ratio": {"type": "number", "default": 0.0},
        }));
        assert_eq!(check(&schema), Vec::<String>::new());
    }
}
