//! Related objects in the runtime: one reflector per related kind and
//! namespace scope (shared by every package declaring the kind) feeds the
//! controller's one cache of related objects (`cached`), and each new
//! version, deletion or disappearance asks for an early check of the
//! resources the object maps to.
//!
//! # Guarantees
//! - An entry keeps the object's resourceVersion and the resources it
//!   mapped to when that version arrived (and its text only for a cached
//!   kind that selects it). A deleted object (or one a list no longer shows) asks for checks of
//!   what it last mapped to; a new version asks for both the old and the
//!   new targets, so an object that moves from one owner to another
//!   concerns both. A deletion event maps its object too, in case the
//!   object's creation was an event that was lost.
//! - The same version again (a relist, a duplicated event) asks for
//!   nothing, and neither does the first list of a scope: it seeds the
//!   cache, and each resource's own first check after a start looks at its
//!   infrastructure anyway.
//! - Lost events cost at most a resync period, as for resources: the
//!   resync list finds the changed, added and missing objects.

use super::key::Key;
use crate::package::erased::Package;
use crate::related::Related;
use blue_kubernetes_client::{LabelSelector, ResourceDescriptor};
use serde_json::Value;

/// One related kind, listed and watched once per namespace scope for
/// every package that declares it.
pub(crate) struct Kind {
    pub(crate) descriptor: ResourceDescriptor,
    /// What the kind's reflectors list and watch: the label selector
    /// every declaration gave, `None` (everything) when they differ.
    pub(crate) selector: Option<String>,
    /// The selector of the declarations that read the kind's objects from
    /// the controller's cache, if any did: the cache keeps only the objects
    /// it matches, whatever the reflectors are sent.
    pub(crate) cached: Option<LabelSelector>,
    /// Package index and how the kind's objects map to its resources.
    subscribers: Vec<(usize, Related)>,
}

/// The related kinds of `packages`: those declared, and Secrets for every
/// package with connection Secrets (mapped by ownerReference, selected by
/// the label every connection Secret carries). Kinds are told apart by
/// group and plural; the first declaration's version wins. Fails when a
/// selector does not parse, a cached declaration has none, or two cached
/// declarations of one kind give different ones.
pub(crate) fn kinds(packages: &[Package]) -> Result<Vec<Kind>, crate::Error> {
    let mut kinds: Vec<Kind> = Vec::new();
    let secrets = ResourceDescriptor::new("", "v1", "secrets", "Secret");
    let (label, value) = crate::domain::names::MANAGED_BY;
    for (index, package) in packages.iter().enumerate() {
        let connection = package.schema().connection.then(|| {
            let managed = format!("{label}={value}");
            Related::owned(secrets.clone()).selector(managed).cached()
        });
        let declared = package.schema().related.iter().cloned();
        for related in declared.chain(connection) {
            let parsed = match &related.selector {
                Some(text) => Some(
                    LabelSelector::parse(text)
                        .map_err(|_| invalid("give related kinds label selectors that parse"))?,
                ),
                None if related.cached => {
                    return Err(invalid("give a cached related kind a label selector"));
                }
                None => None,
            };
            let cached = parsed.filter(|_| related.cached);
            let d = &related.descriptor;
            let same =
                |k: &&mut Kind| k.descriptor.group == d.group && k.descriptor.plural == d.plural;
            match kinds.iter_mut().find(same) {
                Some(kind) => {
                    if kind.selector != related.selector {
                        kind.selector = None;
                    }
                    match (&kind.cached, cached) {
                        (Some(a), Some(b)) if *a != b => {
                            return Err(invalid(
                                "give every cached declaration of a related kind one label selector",
                            ));
                        }
                        (None, Some(b)) => kind.cached = Some(b),
                        _ => {}
                    }
                    kind.subscribers.push((index, related));
                }
                None => kinds.push(Kind {
                    descriptor: d.clone(),
                    selector: related.selector.clone(),
                    cached,
                    subscribers: vec![(index, related)],
                }),
            }
        }
    }
    Ok(kinds)
}

fn invalid(reason: &'static str) -> crate::Error {
    crate::Error::InvalidConfig {
        field: "packages",
        reason,
    }
}

impl Kind {
    /// The resources `object` concerns, each once.
    pub(super) fn targets(&self, packages: &[Package], object: &Value) -> Vec<Key> {
        let mut targets = Vec::new();
        for (package, related) in &self.subscribers {
            let descriptor = packages[*package].descriptor();
            for r in related.targets(descriptor, object) {
                let namespace = if descriptor.namespaced {
                    &r.namespace
                } else {
                    ""
                };
                let key = Key::new(*package, namespace, &r.name);
                if !targets.contains(&key) {
                    targets.push(key);
                }
            }
        }
        targets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_shared_across_packages_and_the_connection_secret_is_always_related() {
        use crate::package::observation::Observation;
        use crate::package::result::WorkflowOutcome;
        use crate::package::schema::ResourceSchema;
        let cms = ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap");
        let package = |plural: &str, kind: &str, secret: bool| {
            let d = ResourceDescriptor::new("example.com", "v1", plural, kind);
            let schema = ResourceSchema::new(d).related(Related::owned(cms.clone()));
            let schema = if secret {
                schema.connection_secret()
            } else {
                schema
            };
            Package::builder(schema)
                .identity(|_| Ok(vec![]))
                .observe(|_| Ok(Observation::READY))
                .converge(|_| Ok(WorkflowOutcome::new()))
                .delete(|_| Ok(WorkflowOutcome::new()))
        };
        let packages = vec![
            package("widgets", "Widget", false).build().unwrap(),
            package("gadgets", "Gadget", true).build().unwrap(),
        ];
        let kinds = kinds(&packages).unwrap();
        let plurals: Vec<_> = kinds.iter().map(|k| k.descriptor.plural.as_str()).collect();
        assert_eq!(plurals, ["configmaps", "secrets"]);
        let cm = serde_json::json!({"metadata": {"namespace": "ns", "name": "cm", "ownerReferences": [
            {"apiVersion": "example.com/v1", "kind": "Gadget", "name": "g"},
            {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w"},
        ]}});
        assert_eq!(
            kinds[0].targets(&packages, &cm),
            vec![Key::new(0, "ns", "w"), Key::new(1, "ns", "g")]
        );
        assert_eq!(
            kinds[1].targets(&packages, &cm),
            vec![Key::new(1, "ns", "g")]
        );
    }
}
