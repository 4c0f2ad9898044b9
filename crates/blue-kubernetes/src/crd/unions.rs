//! `anyOf` as schemars writes it, in the two forms a structural schema can
//! carry: `Option<T>` of a union type (`anyOf: [T, null]`, read as `T`,
//! absent when null) and an untagged enum of an integer and a string
//! (`x-kubernetes-int-or-string`, like Kubernetes' own `IntOrString`).

use serde_json::{json, Map, Value};

/// Rewrites `node`'s `anyOf` into one of the forms above, or says why it
/// has none.
pub(super) fn collapse(node: &mut Map<String, Value>) -> Result<(), &'static str> {
    let mut branches = Vec::new();
    flatten(node.remove("anyOf"), &mut branches);
    branches.retain(|b| !is_null(b));
    if let [Value::Object(only)] = branches.as_slice() {
        // `Option<T>`: the node is T, with the node's own description and
        // default. A null is then pruned, which serde reads as `None`.
        for (k, v) in only {
            node.entry(k.clone()).or_insert_with(|| v.clone());
        }
        return Ok(());
    }
    let types: Vec<&str> = branches
        .iter()
        .filter(|b| b.get("properties").is_none() && b.get("enum").is_none())
        .filter_map(|b| b.get("type").and_then(Value::as_str))
        .collect();
    if branches.len() == 2 && types.contains(&"integer") && types.contains(&"string") {
        node.insert("x-kubernetes-int-or-string".into(), json!(true));
        // The only `anyOf` the API server takes beside int-or-string.
        node.insert(
            "anyOf".into(),
            json!([{"type": "integer"}, {"type": "string"}]),
        );
        return Ok(());
    }
    Err("an untagged enum has a structural schema only as an integer or a string (x-kubernetes-int-or-string): use a struct, or unit variants")
}

/// Nested `anyOf`s (an `Option` of an untagged enum) as one list.
fn flatten(any_of: Option<Value>, into: &mut Vec<Value>) {
    let Some(Value::Array(branches)) = any_of else {
        return;
    };
    for mut branch in branches {
        let nested = branch.as_object_mut().and_then(|b| {
            let only_any_of = b.keys().all(|k| k == "anyOf" || k == "description");
            only_any_of.then(|| b.remove("anyOf")).flatten()
        });
        match nested {
            Some(nested) => flatten(Some(nested), into),
            None => into.push(branch),
        }
    }
}

/// `null` alone: schemars' `{"enum": [null], "nullable": true}` or
/// `{"type": "null"}`.
fn is_null(branch: &Value) -> bool {
    branch.get("type").is_some_and(|t| t == "null")
        || branch
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.iter().all(Value::is_null))
}
