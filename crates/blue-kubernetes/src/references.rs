//! References between resources: a config field names another managed
//! resource, of a declared kind, in the same namespace. The controller
//! waits until it is Ready on this controller's own marks, then hands its
//! `status.outputs` to the callbacks.
//!
//! This module reads references out of objects; `package::erased` knows
//! the kind graph the packages' references make, `reconcile::references`
//! resolves them before a pass, and `runtime::references` asks referrers
//! to be checked when what they name changes.

use blue_kubernetes_client::ResourceDescriptor;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The value of a reference field in a typed config: `{name: ...}`, naming
/// a resource of the declared kind in the same namespace.
///
/// ```
/// use blue_kubernetes::related::Reference;
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// #[serde(rename_all = "camelCase")]
/// struct DatabaseConfig {
///     /// The server this database lives on.
///     server_ref: Reference,
/// }
/// let config: DatabaseConfig = serde_json::from_value(serde_json::json!({
///     "serverRef": {"name": "db-1"}
/// })).unwrap();
/// assert_eq!(config.server_ref.name, "db-1");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    /// The referenced resource's name, in this resource's namespace: an
    /// object name (a DNS-1123 subdomain), or the resource is Invalid.
    pub name: String,
}

// Written out: the crate does not build schemars' derive macros.
impl JsonSchema for Reference {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Reference".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_BYTES}},
        })
    }
}

/// A declared reference: a field of `spec.config` naming a resource of
/// `kind`.
#[derive(Clone, Debug)]
pub(crate) struct ReferenceField {
    pub(crate) field: String,
    pub(crate) kind: ResourceDescriptor,
}

/// The longest name a reference may hold (a DNS subdomain's).
const MAX_NAME_BYTES: usize = 253;

/// What `spec.config.<field>` of `object` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Named {
    /// The field is absent (or null): no dependency.
    Nothing,
    /// A resource of the declared kind: its namespace and name.
    Resource(String, String),
    /// Not a reference: not an object whose `name` is an object name.
    Malformed,
}

impl ReferenceField {
    pub(crate) fn named(&self, object: &Value) -> Named {
        let value = object
            .pointer("/spec/config")
            .and_then(|config| config.get(&self.field));
        let Some(value) = value.filter(|v| !v.is_null()) else {
            return Named::Nothing;
        };
        let name = value.get("name").and_then(Value::as_str);
        match name {
            // Anything else could read as a flag or a path to a transport.
            Some(name) if crate::domain::names::is_object_name(name) => {
                let namespace = match self.kind.namespaced {
                    true => crate::domain::resource::namespace(object),
                    false => "",
                };
                Named::Resource(namespace.to_string(), name.to_string())
            }
            _ => Named::Malformed,
        }
    }

    /// The schema of the field in the generated CRD.
    pub(crate) fn schema(&self) -> Value {
        json!({
            "type": "object",
            "description": format!(
                "A reference to a {} ({}) in this namespace; this resource waits until it is Ready.",
                self.kind.kind,
                self.kind.api_version(),
            ),
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_BYTES},
            },
        })
    }
}

/// Why a referenced resource does not let its referrers proceed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unready {
    /// It is being deleted.
    Deleting,
    /// Its phase is not Ready.
    NotReady,
    /// Its spec changed since the status was recorded.
    Stale,
    /// It claims Ready but lacks a mark only this controller sets: it
    /// was never reconciled here, or its record was rewritten.
    Unmarked(Mark),
}

/// What the controller itself leaves on a resource it reconciled, beside
/// the phase: a status that claims Ready without them was not written by
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    Finalizer,
    Profile,
    StateIdentity,
}

impl Mark {
    /// The mark as the operator's log names it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mark::Finalizer => "finalizer",
            Mark::Profile => "profile",
            Mark::StateIdentity => "stateIdentity",
        }
    }
}

impl Unready {
    /// Why, in words for the operator's log (never a status value).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Unready::Deleting => "being deleted",
            Unready::NotReady => "not Ready",
            Unready::Stale => "observedGeneration behind generation",
            Unready::Unmarked(mark) => mark.as_str(),
        }
    }
}

/// Whether a referenced resource, as it is, lets its referrers proceed:
/// Ready for its current generation, not being deleted, and carrying the
/// marks this controller leaves (its `finalizer`, and a recorded profile
/// and state identity). Status is a record anyone with `/status` access
/// can write, so a phase alone is no proof; no callback of the referenced
/// package runs for this.
pub(crate) fn readiness(object: &Value, finalizer: &str) -> Result<(), Unready> {
    use crate::domain::resource::{generation, has_finalizer, is_deleting, status, status_str};
    let status = status(object);
    let phase = status.and_then(|s| s.get("phase")).and_then(Value::as_str);
    let observed = status
        .and_then(|s| s.get("observedGeneration"))
        .and_then(Value::as_i64);
    let recorded = |key| status_str(object, key).is_some_and(|s| !s.is_empty());
    if is_deleting(object) {
        Err(Unready::Deleting)
    } else if phase != Some("Ready") {
        Err(Unready::NotReady)
    } else if observed != Some(generation(object)) {
        Err(Unready::Stale)
    } else if !has_finalizer(object, finalizer) {
        Err(Unready::Unmarked(Mark::Finalizer))
    } else if !recorded("profile") {
        Err(Unready::Unmarked(Mark::Profile))
    } else if !recorded("stateIdentity") {
        Err(Unready::Unmarked(Mark::StateIdentity))
    } else {
        Ok(())
    }
}

/// [`readiness`], as a yes or no.
pub(crate) fn is_ready(object: &Value, finalizer: &str) -> bool {
    readiness(object, finalizer).is_ok()
}

/// What a referrer's check depends on in a referenced resource: whether it
/// is ready, and its outputs. A change of it asks for checks of the
/// referrers; other changes (a heartbeat, a retry count) do not.
pub(crate) fn digest(object: &Value, finalizer: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    is_ready(object, finalizer).hash(&mut hasher);
    object
        .pointer("/status/outputs")
        .map(Value::to_string)
        .hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers() -> ResourceDescriptor {
        ResourceDescriptor::new("db.example.com", "v1", "servers", "Server")
    }

    fn field() -> ReferenceField {
        ReferenceField {
            field: "serverRef".into(),
            kind: servers(),
        }
    }

    fn with_config(config: Value) -> Value {
        json!({"metadata": {"namespace": "dev", "name": "app"}, "spec": {"config": config}})
    }

    #[test]
    fn a_reference_names_a_resource_in_the_same_namespace_or_nothing_or_is_malformed() {
        let named = field().named(&with_config(json!({"serverRef": {"name": "db-1"}})));
        assert_eq!(named, Named::Resource("dev".into(), "db-1".into()));
        assert_eq!(field().named(&with_config(json!({}))), Named::Nothing);
        assert_eq!(
            field().named(&with_config(json!({"serverRef": null}))),
            Named::Nothing
        );
        assert_eq!(field().named(&json!({"metadata": {}})), Named::Nothing);
        for bad in [
            json!("db-1"),
            json!({"name": ""}),
            json!({"name": 3}),
            json!({}),
            json!({"name": "../main"}),
            json!({"name": "a/b"}),
            json!({"name": ".."}),
            json!({"name": "-o=yaml"}),
            json!({"name": "Main"}),
        ] {
            let named = field().named(&with_config(json!({ "serverRef": bad })));
            assert_eq!(named, Named::Malformed, "{bad}");
        }
        let long = "a".repeat(254);
        let named = field().named(&with_config(json!({"serverRef": {"name": long}})));
        assert_eq!(named, Named::Malformed);
        let mut cluster_scoped = field();
        cluster_scoped.kind = servers().cluster_scoped();
        let named = cluster_scoped.named(&with_config(json!({"serverRef": {"name": "db-1"}})));
        assert_eq!(named, Named::Resource("".into(), "db-1".into()));
    }

    const OURS: &str = "example.com/infrastructure";

    /// Ready for generation 2, with every mark this controller leaves.
    fn marked_ready() -> Value {
        json!({"metadata": {"generation": 2, "finalizers": ["other/keep", OURS]},
            "status": {"phase": "Ready", "observedGeneration": 2,
                       "profile": "dev--main", "stateIdentity": "abc"}})
    }

    #[test]
    fn ready_means_ready_for_the_current_generation_and_not_deleting() {
        let ready = marked_ready();
        assert!(is_ready(&ready, OURS));
        let mut edited = ready.clone();
        edited["metadata"]["generation"] = json!(3);
        assert_eq!(
            readiness(&edited, OURS),
            Err(Unready::Stale),
            "an edit not yet handled"
        );
        let mut deleting = ready.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(readiness(&deleting, OURS), Err(Unready::Deleting));
        let mut waiting = ready.clone();
        waiting["status"]["phase"] = json!("Waiting");
        assert_eq!(readiness(&waiting, OURS), Err(Unready::NotReady));
        assert_eq!(
            readiness(&json!({"metadata": {}}), OURS),
            Err(Unready::NotReady)
        );
    }

    #[test]
    fn a_ready_phase_counts_only_with_this_controllers_marks() {
        let ready = marked_ready();
        assert!(
            !is_ready(&ready, "someone.else/infrastructure"),
            "another controller's finalizer is not ours"
        );
        let mut no_finalizer = ready.clone();
        no_finalizer["metadata"]["finalizers"] = json!(["other/keep"]);
        assert_eq!(
            readiness(&no_finalizer, OURS),
            Err(Unready::Unmarked(Mark::Finalizer))
        );
        for (key, mark) in [
            ("profile", Mark::Profile),
            ("stateIdentity", Mark::StateIdentity),
        ] {
            for forged in [Value::Null, json!(""), json!(7)] {
                let mut unrecorded = ready.clone();
                unrecorded["status"][key] = forged.clone();
                assert_eq!(
                    readiness(&unrecorded, OURS),
                    Err(Unready::Unmarked(mark)),
                    "{key}: {forged}"
                );
            }
        }
        // A forged Ready with no mark at all names the first one missing.
        let forged = json!({"metadata": {"generation": 1},
            "status": {"phase": "Ready", "observedGeneration": 1, "outputs": {"host": "x"}}});
        assert_eq!(
            readiness(&forged, OURS),
            Err(Unready::Unmarked(Mark::Finalizer))
        );
        assert_eq!(
            Unready::Unmarked(Mark::StateIdentity).as_str(),
            "stateIdentity"
        );
    }

    #[test]
    fn the_digest_moves_with_readiness_and_outputs_only() {
        let mut ready = marked_ready();
        ready["status"]["outputs"] = json!({"port": 5432});
        ready["status"]["lastReconcileTime"] = json!("2026-01-01T00:00:00Z");
        let mut heartbeat = ready.clone();
        heartbeat["status"]["lastReconcileTime"] = json!("2026-01-01T00:10:00Z");
        assert_eq!(digest(&ready, OURS), digest(&heartbeat, OURS));
        let mut moved = ready.clone();
        moved["status"]["outputs"]["port"] = json!(5433);
        assert_ne!(digest(&ready, OURS), digest(&moved, OURS));
        let mut failed = ready.clone();
        failed["status"]["phase"] = json!("Failed");
        assert_ne!(digest(&ready, OURS), digest(&failed, OURS));
        let mut unmarked = ready.clone();
        unmarked["status"]["stateIdentity"] = Value::Null;
        assert_ne!(digest(&ready, OURS), digest(&unmarked, OURS));
    }
}
