//! What an object says: the few spec and metadata fields the model, the
//! audit and the oracle read, read the same way everywhere.

use blue_kubernetes::config::FINALIZER;
use serde_json::Value;

/// The string at `pointer`, or `""`: a missing field reads as empty.
pub fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The profile callbacks see for `spec` of object `namespace/name`.
pub fn profile_of(spec: &Value, namespace: &str, name: &str) -> String {
    match spec.pointer("/config/profile") {
        Some(Value::String(p)) => p.clone(),
        _ => format!("{namespace}--{name}"),
    }
}

/// The value the fake infrastructure converges to for `spec`.
pub fn value_of(spec: &Value) -> Value {
    spec.pointer("/config/value")
        .cloned()
        .unwrap_or(Value::Null)
}

/// The profile of an object's current spec.
pub fn object_profile(object: &Value) -> String {
    profile_of(
        object.get("spec").unwrap_or(&Value::Null),
        str_at(object, "/metadata/namespace"),
        str_at(object, "/metadata/name"),
    )
}

pub fn has_ours(object: &Value) -> bool {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|f| f == FINALIZER))
}

pub fn is_deleting(object: &Value) -> bool {
    object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

pub fn destroys(object: &Value) -> bool {
    object["spec"]["deletionPolicy"] == "Destroy"
}

pub fn protected(object: &Value) -> bool {
    flag(&object["spec"], "/config/compute-prevent-destroy")
}

/// A boolean switch in a spec: only a literal `true` turns it on.
pub fn flag(spec: &Value, pointer: &str) -> bool {
    matches!(spec.pointer(pointer), Some(Value::Bool(true)))
}
