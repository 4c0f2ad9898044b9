//! The common spec fields at the door: judged by the parser the pass uses
//! (`domain::resource::parse` and its companions), one field at a time, so the
//! denial can name the field. The messages are the library's own and
//! never repeat the value.

use super::verdict::Cause;
use crate::config::Names;
use crate::connection::secret_ref_valid;
use crate::domain::resource;
use serde_json::{json, Value};

/// Each common field, what the parser is shown of it, and what to fix.
const FIELDS: [(&str, &str); 5] = [
    ("state", "must be running or stopped"),
    ("suspend", "must be a boolean"),
    (
        "reconcileInterval",
        "must be a positive integer followed by ms, s, m or h, at most 365 days",
    ),
    ("deletionPolicy", "must be Retain or Destroy"),
    ("managementPolicy", "must be Full or Observe"),
];

/// The malformed common fields of `object`, each once; empty when the
/// pass would read them. `connection`: the package declares a connection
/// Secret, so `spec.writeConnectionSecretToRef` is read too.
pub(crate) fn malformed(object: &Value, names: &Names, connection: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = match object.get("spec") {
        None | Some(Value::Null) => return causes,
        Some(Value::Object(spec)) => spec,
        Some(_) => return vec![Cause::at("spec", "must be an object")],
    };
    for (field, expected) in FIELDS {
        if let Some(value) = spec.get(field) {
            if resource::parse(&json!({"spec": {field: value}})).is_none() {
                causes.push(Cause::at(format!("spec.{field}"), expected));
            }
        }
    }
    match spec.get("config") {
        None | Some(Value::Object(_)) => {}
        Some(_) => causes.push(Cause::at("spec.config", "must be an object")),
    }
    if let Some(profile) = spec.get("config").and_then(|c| c.get("profile")) {
        if resource::parse(&json!({"spec": {"config": {"profile": profile}}})).is_none() {
            causes.push(Cause::at(
                "spec.config.profile",
                "must be a non-empty string",
            ));
        }
    }
    let key = &names.destroy_protection_key;
    if !resource::protection_well_typed(object, key) {
        causes.push(Cause::at(format!("spec.config.{key}"), "must be a boolean"));
    }
    if connection && !secret_ref_valid(object) {
        causes.push(Cause::at(
            "spec.writeConnectionSecretToRef.name",
            "must be a Secret's name: lowercase letters, digits, '-' and '.'",
        ));
    }
    // The parser and the field-by-field look must agree: a malformed
    // whole that no single field explains is still refused.
    if causes.is_empty() && resource::parse(object).is_none() {
        causes.push(Cause::at("spec", "is malformed"));
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(object: Value) -> Vec<Option<String>> {
        malformed(&object, &Names::default(), true)
            .into_iter()
            .map(|c| c.field)
            .collect()
    }

    #[test]
    fn each_malformed_common_field_is_named_and_its_value_never_shown() {
        let object = json!({"spec": {
            "state": "hunter2", "suspend": "yes", "reconcileInterval": "0s",
            "deletionPolicy": "Keep", "managementPolicy": 7,
            "config": {"profile": "", "compute-prevent-destroy": 3},
            "writeConnectionSecretToRef": {"name": "Not_A_Name"}
        }});
        let causes = malformed(&object, &Names::default(), true);
        let named: Vec<_> = causes.iter().filter_map(|c| c.field.as_deref()).collect();
        assert_eq!(
            named,
            [
                "spec.state",
                "spec.suspend",
                "spec.reconcileInterval",
                "spec.deletionPolicy",
                "spec.managementPolicy",
                "spec.config.profile",
                "spec.config.compute-prevent-destroy",
                "spec.writeConnectionSecretToRef.name"
            ]
        );
        assert!(causes.iter().all(|c| !c.message.contains("hunter2")));
    }

    #[test]
    fn well_formed_or_absent_common_fields_are_no_cause() {
        assert!(fields(json!({})).is_empty());
        assert!(fields(json!({"spec": {
            "state": "stopped", "suspend": true, "reconcileInterval": "5m",
            "deletionPolicy": "Destroy", "config": {"profile": "p"}
        }}))
        .is_empty());
        assert_eq!(fields(json!({"spec": []})), [Some("spec".to_string())]);
        assert_eq!(
            fields(json!({"spec": {"config": "x"}})),
            [Some("spec.config".to_string())]
        );
    }
}
