//! Read-only accessors over a resource snapshot (a JSON object).

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

pub(crate) fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(v, path).and_then(Value::as_str)
}

pub(crate) fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

pub(crate) fn name(r: &Value) -> &str {
    str_at(r, &["metadata", "name"]).unwrap_or("")
}

pub(crate) fn namespace(r: &Value) -> &str {
    str_at(r, &["metadata", "namespace"]).unwrap_or("")
}

pub(crate) fn uid(r: &Value) -> Option<&str> {
    str_at(r, &["metadata", "uid"])
}

pub(crate) fn generation(r: &Value) -> i64 {
    at(r, &["metadata", "generation"])
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

pub(crate) fn request_token<'a>(r: &'a Value, annotation: &str) -> &'a str {
    at(r, &["metadata", "annotations", annotation])
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub(crate) fn is_deleting(r: &Value) -> bool {
    at(r, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null())
}

pub(crate) fn finalizers(r: &Value) -> Vec<String> {
    at(r, &["metadata", "finalizers"])
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn has_finalizer(r: &Value, finalizer: &str) -> bool {
    finalizers(r).iter().any(|f| f == finalizer)
}

pub(crate) fn status(r: &Value) -> Option<&Value> {
    r.get("status").filter(|s| s.is_object())
}

pub(crate) fn status_str<'a>(r: &'a Value, key: &str) -> Option<&'a str> {
    status(r).and_then(|s| s.get(key)).and_then(Value::as_str)
}

/// `object` as compact JSON text without `metadata.managedFields`: what the
/// controller keeps of a watched object (the field is most of a small
/// object's size and no pass reads it). Written straight from the borrowed
/// object, never cloned.
pub(crate) fn kept_text(object: &Value) -> Option<Box<str>> {
    let text = serde_json::to_string(&Trimmed(object, true)).ok()?;
    Some(text.into_boxed_str())
}

/// A JSON value serialized as it is, except that a top-level `metadata`
/// (`.1`: this is the top level) loses its `managedFields`.
struct Trimmed<'a>(&'a Value, bool);

impl Serialize for Trimmed<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(map) = self.0 else {
            return self.0.serialize(s);
        };
        let mut out = s.serialize_map(None)?;
        for (key, value) in map {
            match (self.1, key.as_str()) {
                (true, "metadata") => out.serialize_entry(key, &Trimmed(value, false))?,
                (false, "managedFields") => {}
                _ => out.serialize_entry(key, value)?,
            }
        }
        out.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kept_text_drops_only_the_metadata_managed_fields() {
        let object = json!({
            "metadata": {"name": "a", "managedFields": [{"manager": "x"}], "labels": {"k": "v"}},
            "spec": {"managedFields": 1},
        });
        let kept: Value = serde_json::from_str(&kept_text(&object).unwrap()).unwrap();
        assert_eq!(
            kept,
            json!({"metadata": {"name": "a", "labels": {"k": "v"}}, "spec": {"managedFields": 1}})
        );
    }
}
