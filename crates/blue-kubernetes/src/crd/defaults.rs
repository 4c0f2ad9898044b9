//! A default fitted to its own node: the API server refuses a default with
//! a field it would prune or a `null` where the schema allows none, and
//! serde's defaults may hold both (a `skip_deserializing` field serialized
//! with the rest, a `None`).

use serde_json::{Map, Value};

/// Drops from `node`'s default what the server would refuse in it: a
/// `null` default (the server ignores it; absent reads as the same), and
/// inside an object default, nulls and fields the node does not declare.
pub(super) fn fit(node: &mut Map<String, Value>) {
    let Some(mut default) = node.remove("default") else {
        return;
    };
    if default.is_null() {
        return;
    }
    let schema = Value::Object(std::mem::take(node));
    prune(&mut default, &schema);
    let Value::Object(schema) = schema else {
        unreachable!("made an object above");
    };
    *node = schema;
    node.insert("default".into(), default);
}

fn prune(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let open = schema["x-kubernetes-preserve-unknown-fields"] == true;
            fields.retain(|k, v| {
                let declared =
                    properties.is_some_and(|p| p.contains_key(k)) || additional.is_some();
                !v.is_null() && (declared || open)
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
