//! Immutable config fields, as the controller enforces them: a digest of
//! the accepted values in `status.immutableDigest` (never the values), and
//! the fields whose values an edit changed since.
//!
//! One definition of "immutable" for every enforcer: a declared top-level
//! field of `spec.config` may be neither added, removed nor changed (the
//! CEL rule the CRD carries says the same, see `crd::immutable_rule`).
//!
//! The digest is `<fields>:<value>.<value>...`: a hash of the declared
//! field names, then one hash per field (in name order) of the field's
//! name and its canonical JSON value, or of its name alone when absent.
//! One hash per field lets the Warning Event name the field that changed;
//! the hash of the names tells a record made under another declaration
//! (an operator that declared one more field) from an edit, so such a
//! record, like a missing or malformed one, is recorded again rather than
//! refused.

use crate::steps::hex_digest;
use serde_json::Value;

/// Hex digits of each hash: 64 bits, enough to tell an edit apart.
const HEX: usize = 16;

/// What the stored digest says of the config now.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Check<'a> {
    /// Nothing to compare: no field is declared, no digest is recorded
    /// (a resource not yet accepted, or from before digests), or the one
    /// recorded is for another declaration. The next accepting write
    /// records one.
    Unrecorded,
    /// The declared fields hold the accepted values.
    Same,
    /// These declared fields changed (added, removed or edited).
    Changed(Vec<&'a str>),
}

/// The declared fields in name order, each once.
fn sorted(fields: &[String]) -> Vec<&str> {
    let mut fields: Vec<&str> = fields.iter().map(String::as_str).collect();
    fields.sort_unstable();
    fields.dedup();
    fields
}

fn names_hash(fields: &[&str]) -> String {
    hex_digest(fields, HEX)
}

fn value_hash(field: &str, config: &Value) -> String {
    match config.get(field) {
        Some(value) => hex_digest(&[field, &canonical(value)], HEX),
        None => hex_digest(&[field], HEX),
    }
}

/// The digest of `config`'s declared `fields`, `None` when none is
/// declared (nothing is recorded then).
pub(crate) fn digest(fields: &[String], config: &Value) -> Option<String> {
    let fields = sorted(fields);
    if fields.is_empty() {
        return None;
    }
    let values: Vec<String> = fields.iter().map(|f| value_hash(f, config)).collect();
    Some(format!("{}:{}", names_hash(&fields), values.join(".")))
}

/// Compares `config`'s declared `fields` with the `stored` digest.
pub(crate) fn check<'a>(fields: &'a [String], config: &Value, stored: Option<&str>) -> Check<'a> {
    let fields = sorted(fields);
    let Some((names, values)) = stored.and_then(|s| s.split_once(':')) else {
        return Check::Unrecorded;
    };
    let values: Vec<&str> = values.split('.').collect();
    if fields.is_empty() || names != names_hash(&fields) || values.len() != fields.len() {
        return Check::Unrecorded;
    }
    let changed: Vec<&str> = fields
        .into_iter()
        .zip(values)
        .filter(|(field, stored)| value_hash(field, config) != *stored)
        .map(|(field, _)| field)
        .collect();
    match changed.is_empty() {
        true => Check::Same,
        false => Check::Changed(changed),
    }
}

/// JSON with every object's keys in order, so equal values hash alike
/// however the API server ordered them.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            let entries: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", entries.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn no_declared_field_records_nothing_and_refuses_nothing() {
        assert_eq!(digest(&[], &json!({"kind": "A"})), None);
        assert_eq!(check(&[], &json!({}), Some("x:y")), Check::Unrecorded);
    }

    #[test]
    fn adding_removing_or_changing_a_field_is_a_change_of_that_field() {
        let declared = fields(&["kind", "zone"]);
        let accepted = json!({"kind": "A", "zone": "example.org", "ttl": 60});
        let stored = digest(&declared, &accepted).unwrap();
        let same = json!({"zone": "example.org", "ttl": 300, "kind": "A"});
        assert_eq!(check(&declared, &same, Some(&stored)), Check::Same);
        for edited in [
            json!({"kind": "AAAA", "zone": "example.org"}),
            json!({"zone": "example.org"}),
            json!({"kind": null, "zone": "example.org"}),
        ] {
            assert_eq!(
                check(&declared, &edited, Some(&stored)),
                Check::Changed(vec!["kind"])
            );
        }
        let absent = digest(&declared, &json!({"zone": "example.org"})).unwrap();
        assert_eq!(
            check(&declared, &accepted, Some(&absent)),
            Check::Changed(vec!["kind"])
        );
    }

    #[test]
    fn object_key_order_does_not_change_the_digest() {
        let declared = fields(&["target"]);
        let a = digest(
            &declared,
            &json!({"target": {"a": 1, "b": [1, {"y": 2, "x": 1}]}}),
        );
        let b = digest(
            &declared,
            &json!({"target": {"b": [1, {"x": 1, "y": 2}], "a": 1}}),
        );
        assert_eq!(a, b);
    }

    #[test]
    fn a_record_of_another_declaration_or_malformed_is_recorded_again() {
        let stored = digest(&fields(&["kind"]), &json!({"kind": "A"})).unwrap();
        let now = fields(&["kind", "zone"]);
        assert_eq!(
            check(&now, &json!({"kind": "B"}), Some(&stored)),
            Check::Unrecorded
        );
        assert_eq!(check(&now, &json!({}), Some("forged")), Check::Unrecorded);
        assert_eq!(check(&now, &json!({}), None), Check::Unrecorded);
    }

    #[test]
    fn the_digest_never_holds_the_values() {
        let stored = digest(&fields(&["password"]), &json!({"password": "hunter2"})).unwrap();
        assert!(!stored.contains("hunter2"));
        assert!(!stored.contains("password"));
    }
}
