//! Related objects in the runtime: one reflector per related kind and
//! namespace scope (shared by every package declaring the kind) feeds a
//! compact cache, and each new version, deletion or disappearance asks for
//! an early check of the resources the object maps to.
//!
//! # Guarantees
//! - An entry keeps the object's resourceVersion and the resources it
//!   mapped to when that version arrived, nothing of the object itself.
//!   A deleted object (or one a list no longer shows) asks for checks of
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

use super::key::{Key, Namespaces};
use super::token::Token;
use crate::package::erased::Package;
use crate::related::Related;
use blue_kubernetes_client::{LabelSelector, ResourceDescriptor};
use serde_json::Value;
use std::collections::hash_map::Entry as Slot;
use std::collections::{HashMap, HashSet};

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

/// What an object mapped to; one target (the usual case) needs no
/// allocation of its own.
enum Targets {
    None,
    One(Key),
    Many(Box<[Key]>),
}

impl Targets {
    fn of(mut keys: Vec<Key>) -> Self {
        match keys.len() {
            0 => Targets::None,
            1 => Targets::One(keys.remove(0)),
            _ => Targets::Many(keys.into_boxed_slice()),
        }
    }

    fn keys(&self) -> &[Key] {
        match self {
            Targets::None => &[],
            Targets::One(key) => std::slice::from_ref(key),
            Targets::Many(keys) => keys,
        }
    }
}

struct Entry {
    version: Token,
    targets: Targets,
}

/// The related objects seen: keyed by (kind index, namespace, name).
#[derive(Default)]
pub(crate) struct RelatedCache {
    entries: HashMap<Key, Entry>,
    namespaces: Namespaces,
}

impl RelatedCache {
    /// Records `version` of `key`, mapping to `targets`. Returns the
    /// cached key and the resources to check: the old and new targets
    /// when the version is new, none for the same version again or when
    /// `seeding`.
    pub(super) fn record(
        &mut self,
        key: Key,
        version: &str,
        targets: Vec<Key>,
        seeding: bool,
    ) -> (Key, Vec<Key>) {
        match self.entries.entry(key) {
            Slot::Occupied(mut slot) => {
                let key = slot.key().clone();
                let entry = slot.get_mut();
                if entry.version.is(version) {
                    return (key, Vec::new());
                }
                let mut check: Vec<Key> = entry.targets.keys().to_vec();
                for target in &targets {
                    if !check.contains(target) {
                        check.push(target.clone());
                    }
                }
                entry.version = Token::new(version);
                entry.targets = Targets::of(targets);
                (key, if seeding { Vec::new() } else { check })
            }
            Slot::Vacant(slot) => {
                let key = self.namespaces.intern(slot.into_key());
                let check = if seeding { Vec::new() } else { targets.clone() };
                let entry = Entry {
                    version: Token::new(version),
                    targets: Targets::of(targets),
                };
                self.entries.insert(key.clone(), entry);
                (key, check)
            }
        }
    }

    /// Forgets `key`; returns what it mapped to.
    pub(super) fn remove(&mut self, key: &Key) -> Vec<Key> {
        self.entries
            .remove(key)
            .map(|e| e.targets.keys().to_vec())
            .unwrap_or_default()
    }

    /// Keys of kind `kind` in `namespace` (`""`: any) not in `listed`.
    pub(super) fn missing_from(
        &self,
        kind: usize,
        namespace: &str,
        listed: &HashSet<Key>,
    ) -> Vec<Key> {
        self.entries
            .keys()
            .filter(|k| {
                k.package() == kind
                    && (namespace.is_empty() || k.namespace() == namespace)
                    && !listed.contains(*k)
            })
            .cloned()
            .collect()
    }

    /// Related objects cached.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(name: &str) -> Key {
        Key::new(0, "ns", name)
    }

    fn cm(name: &str) -> Key {
        Key::new(0, "ns", name)
    }

    #[test]
    fn a_new_version_asks_for_its_old_and_new_targets_and_the_same_version_for_none() {
        let mut c = RelatedCache::default();
        let (_, check) = c.record(cm("x"), "1", vec![owner("a")], false);
        assert_eq!(check, vec![owner("a")]);
        let (_, again) = c.record(cm("x"), "1", vec![owner("a")], false);
        assert!(again.is_empty(), "a relist or duplicate asks for nothing");
        let (_, moved) = c.record(cm("x"), "2", vec![owner("b")], false);
        assert_eq!(moved, vec![owner("a"), owner("b")]);
        assert_eq!(c.remove(&cm("x")), vec![owner("b")]);
        assert!(c.remove(&cm("x")).is_empty(), "already gone");
    }

    #[test]
    fn seeding_records_without_asking() {
        let mut c = RelatedCache::default();
        let (_, check) = c.record(cm("x"), "1", vec![owner("a")], true);
        assert!(check.is_empty());
        assert_eq!(c.len(), 1);
        let (_, check) = c.record(cm("x"), "2", vec![owner("a")], false);
        assert_eq!(check, vec![owner("a")]);
    }

    #[test]
    fn objects_missing_from_a_list_are_found_within_their_kind_and_namespace() {
        let mut c = RelatedCache::default();
        c.record(Key::new(0, "a", "x"), "1", vec![], false);
        c.record(Key::new(0, "b", "y"), "1", vec![], false);
        c.record(Key::new(1, "a", "z"), "1", vec![owner("a")], false);
        let listed: HashSet<Key> = HashSet::new();
        assert_eq!(c.missing_from(0, "a", &listed), vec![Key::new(0, "a", "x")]);
        assert_eq!(c.missing_from(0, "", &listed).len(), 2);
        assert_eq!(c.missing_from(1, "", &listed), vec![Key::new(1, "a", "z")]);
    }

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
