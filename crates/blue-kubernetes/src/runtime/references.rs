//! Who refers to whom, in memory: a change to a referenced resource (its
//! readiness or outputs, see `references::digest`) or its disappearance
//! asks for an early check of every resource that refers to it.
//!
//! Built from the resources as they arrive (listed or watched), so a
//! change whose event was lost is found by the resync list like any other.

use super::key::Key;
use super::Shared;
use crate::references::Named;
use crate::Package;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

#[derive(Default)]
pub(crate) struct ReferenceIndex {
    /// Referrer -> the resources it names.
    names: HashMap<Key, Box<[Key]>>,
    /// Referenced resource -> the resources naming it.
    named_by: HashMap<Key, HashSet<Key>>,
}

/// The resources `object` (of package `package`) refers to.
pub(crate) fn named_by(packages: &[Package], package: usize, object: &Value) -> Vec<Key> {
    let mut keys = Vec::new();
    for reference in &packages[package].schema().references {
        let Named::Resource(namespace, name) = reference.named(object) else {
            continue;
        };
        if let Some(target) = crate::references::package_of(packages, &reference.kind) {
            let key = Key::new(target, &namespace, &name);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    keys
}

/// Keeps the reference index up to date with `object`; returns the
/// referrers to check: all of them when what they depend on in it
/// changed, and, for any new version, those waiting. (A waiting referrer
/// read the referenced resource itself, fresher than this cache may have
/// been: a lost event can leave the digest unchanged across the very
/// change it waits for.)
pub(super) fn track(shared: &Shared, key: &Key, object: &Value, new_version: bool) -> Vec<Key> {
    let packages = &shared.controller.config.packages;
    let package = key.package();
    let refers = !packages[package].schema().references.is_empty();
    let referenced = shared.referenced[package];
    if !refers && !referenced {
        return Vec::new();
    }
    let names = refers.then(|| named_by(packages, package, object));
    let finalizer = &shared.controller.config.names.finalizer;
    let digest = referenced.then(|| crate::references::digest(object, finalizer));
    let mut book = super::dispatch::book(shared);
    if let Some(names) = names {
        book.references.set(key, names);
    }
    let Some(digest) = digest else {
        return Vec::new();
    };
    let changed = book.cache.swap_digest(key, digest);
    let mut referrers = book.references.referrers(key);
    if !changed {
        referrers.retain(|r| new_version && book.cache.is_waiting(r));
    }
    referrers
}

impl ReferenceIndex {
    /// `referrer` names `targets` now.
    pub(crate) fn set(&mut self, referrer: &Key, targets: Vec<Key>) {
        if self
            .names
            .get(referrer)
            .is_some_and(|old| **old == *targets)
        {
            return;
        }
        self.remove(referrer);
        if targets.is_empty() {
            return;
        }
        for target in &targets {
            self.named_by
                .entry(target.clone())
                .or_default()
                .insert(referrer.clone());
        }
        self.names
            .insert(referrer.clone(), targets.into_boxed_slice());
    }

    /// `referrer` is gone (or names nothing).
    pub(crate) fn remove(&mut self, referrer: &Key) {
        let Some(old) = self.names.remove(referrer) else {
            return;
        };
        for target in old.iter() {
            if let Some(set) = self.named_by.get_mut(target) {
                set.remove(referrer);
                if set.is_empty() {
                    self.named_by.remove(target);
                }
            }
        }
    }

    /// The resources naming `referenced`.
    pub(crate) fn referrers(&self, referenced: &Key) -> Vec<Key> {
        self.named_by
            .get(referenced)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(name: &str) -> Key {
        Key::new(0, "ns", name)
    }

    fn server(name: &str) -> Key {
        Key::new(1, "ns", name)
    }

    #[test]
    fn referrers_follow_what_each_names_now() {
        let mut index = ReferenceIndex::default();
        index.set(&db("a"), vec![server("s")]);
        index.set(&db("b"), vec![server("s")]);
        let mut both = index.referrers(&server("s"));
        both.sort();
        assert_eq!(both, vec![db("a"), db("b")]);
        index.set(&db("a"), vec![server("t")]);
        assert_eq!(index.referrers(&server("s")), vec![db("b")]);
        assert_eq!(index.referrers(&server("t")), vec![db("a")]);
        index.remove(&db("b"));
        assert!(index.referrers(&server("s")).is_empty());
        index.set(&db("a"), vec![]);
        assert!(index.referrers(&server("t")).is_empty());
        assert!(
            index.names.is_empty() && index.named_by.is_empty(),
            "nothing left behind"
        );
    }
}
