//! References between resources (SPEC section 8): a config field names
//! another managed resource, of a declared kind, in the same namespace.
//! The controller waits until it is Ready, then hands its `status.outputs`
//! to the callbacks.
//!
//! This module reads references out of objects and knows the kind graph;
//! `reconcile::references` resolves them before a pass, and
//! `runtime::references` asks referrers to be checked when what they name
//! changes.

use crate::Package;
use blue_kubernetes_client::ResourceDescriptor;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The value of a reference field in a typed config: `{name: ...}`, naming
/// a resource of the declared kind in the same namespace.
///
/// ```
/// use blue_kubernetes::Reference;
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
    /// The referenced resource's name, in this resource's namespace.
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
    /// Not a reference (not an object with a non-empty `name`).
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
            Some(name) if !name.is_empty() && name.len() <= MAX_NAME_BYTES => {
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

/// The index of the package managing `kind`, if any.
pub(crate) fn package_of(packages: &[Package], kind: &ResourceDescriptor) -> Option<usize> {
    packages.iter().position(|p| {
        let d = p.descriptor();
        d.group == kind.group && d.plural == kind.plural
    })
}

/// Whether a chain of references can lead from package `from` back to
/// package `to`: only then can a cycle pass through both, and only then
/// is a chain worth following.
pub(crate) fn reaches(packages: &[Package], from: usize, to: usize) -> bool {
    let mut seen = vec![false; packages.len()];
    let mut stack = vec![from];
    while let Some(at) = stack.pop() {
        if at == to {
            return true;
        }
        if std::mem::replace(&mut seen[at], true) {
            continue;
        }
        for r in &packages[at].schema().references {
            stack.extend(package_of(packages, &r.kind));
        }
    }
    false
}

/// The packages some package refers to: only their changes can concern a
/// referrer.
pub(crate) fn referenced_packages(packages: &[Package]) -> Vec<bool> {
    let mut referenced = vec![false; packages.len()];
    for package in packages {
        for r in &package.schema().references {
            if let Some(index) = package_of(packages, &r.kind) {
                referenced[index] = true;
            }
        }
    }
    referenced
}

/// Whether a referenced resource, as it is, lets its referrers proceed:
/// Ready for its current generation and not being deleted.
pub(crate) fn is_ready(object: &Value) -> bool {
    use crate::domain::resource::{generation, is_deleting, status};
    let status = status(object);
    let phase = status.and_then(|s| s.get("phase")).and_then(Value::as_str);
    let observed = status
        .and_then(|s| s.get("observedGeneration"))
        .and_then(Value::as_i64);
    phase == Some("Ready") && observed == Some(generation(object)) && !is_deleting(object)
}

/// What a referrer's check depends on in a referenced resource: whether it
/// is ready, and its outputs. A change of it asks for checks of the
/// referrers; other changes (a heartbeat, a retry count) do not.
pub(crate) fn digest(object: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    is_ready(object).hash(&mut hasher);
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

    #[test]
    fn ready_means_ready_for_the_current_generation_and_not_deleting() {
        let ready = json!({"metadata": {"generation": 2},
            "status": {"phase": "Ready", "observedGeneration": 2}});
        assert!(is_ready(&ready));
        let mut edited = ready.clone();
        edited["metadata"]["generation"] = json!(3);
        assert!(!is_ready(&edited), "an edit not yet handled");
        let mut deleting = ready.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(!is_ready(&deleting));
        let waiting = json!({"metadata": {"generation": 1},
            "status": {"phase": "Waiting", "observedGeneration": 1}});
        assert!(!is_ready(&waiting));
        assert!(!is_ready(&json!({"metadata": {}})));
    }

    #[test]
    fn the_digest_moves_with_readiness_and_outputs_only() {
        let ready = json!({"metadata": {"generation": 1},
            "status": {"phase": "Ready", "observedGeneration": 1, "outputs": {"port": 5432},
                       "lastReconcileTime": "2026-01-01T00:00:00Z"}});
        let mut heartbeat = ready.clone();
        heartbeat["status"]["lastReconcileTime"] = json!("2026-01-01T00:10:00Z");
        assert_eq!(digest(&ready), digest(&heartbeat));
        let mut moved = ready.clone();
        moved["status"]["outputs"]["port"] = json!(5433);
        assert_ne!(digest(&ready), digest(&moved));
        let mut failed = ready.clone();
        failed["status"]["phase"] = json!("Failed");
        assert_ne!(digest(&ready), digest(&failed));
    }
}
