//! Reading and setting the object metadata the store's rules are about.

use serde_json::{json, Map, Value};

pub(super) fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object.get("metadata")?.get(field)?.as_str()
}

pub(super) fn finalizers(object: &Value) -> Vec<String> {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|f| f.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn is_deleting(object: &Value) -> bool {
    meta_str(object, "deletionTimestamp").is_some()
}

/// Sets `metadata.finalizers`, dropping the field when empty as the server does.
pub(super) fn set_finalizers(object: &mut Value, list: &[String]) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        if list.is_empty() {
            meta.remove("finalizers");
        } else {
            meta.insert("finalizers".into(), json!(list));
        }
    }
}

/// Everything but `metadata` and `status`: what `metadata.generation` tracks.
pub(super) fn desired_state(object: &Value) -> Map<String, Value> {
    let mut rest = object.as_object().cloned().unwrap_or_default();
    rest.remove("metadata");
    rest.remove("status");
    rest
}

/// Metadata only the server sets; user edits to it are discarded.
pub(super) const SYSTEM_METADATA: [&str; 7] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
];
