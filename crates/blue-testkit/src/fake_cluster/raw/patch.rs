//! JSON merge patches (RFC 7386), as `application/merge-patch+json`
//! applies them: objects merge key by key, `null` removes, anything else
//! (arrays included) replaces.

use serde_json::Value;

/// `target` with `patch` applied.
pub(crate) fn merge(mut target: Value, patch: &Value) -> Value {
    let Value::Object(fields) = patch else {
        return patch.clone();
    };
    if !target.is_object() {
        target = Value::Object(Default::default());
    }
    if let Value::Object(into) = &mut target {
        for (key, value) in fields {
            if value.is_null() {
                into.remove(key);
            } else {
                let before = into.remove(key).unwrap_or(Value::Null);
                into.insert(key.clone(), merge(before, value));
            }
        }
    }
    target
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_merge_nulls_remove_and_arrays_replace() {
        let target = json!({"a": {"b": 1, "c": 2}, "list": [1, 2], "gone": true});
        let patch = json!({"a": {"b": 3}, "list": [9], "gone": null, "new": "x"});
        assert_eq!(
            merge(target, &patch),
            json!({"a": {"b": 3, "c": 2}, "list": [9], "new": "x"})
        );
    }
}
