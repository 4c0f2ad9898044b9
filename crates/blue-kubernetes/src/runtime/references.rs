//! Who refers to whom, in memory: a change to a referenced resource (its
//! readiness or outputs, see `references::digest`) or its disappearance
//! asks for an early check of every resource that refers to it.
//!
//! Built from the resources as they arrive (listed or watched), so a
//! change whose event was lost is found by the resync list like any other.

use super::key::Key;
use crate::package::erased::Package;
use crate::references::Named;
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
pub(super) fn named_by(packages: &[Package], package: usize, object: &Value) -> Vec<Key> {
    let mut keys = Vec::new();
    for reference in &packages[package].schema().references {
        let Named::Resource(namespace, name) = reference.named(object) else {
            continue;
        };
        if let Some(target) = crate::package::erased::package_of(packages, &reference.kind) {
            let key = Key::new(target, &namespace, &name);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    keys
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

    #[cfg(feature = "testing")]
    pub(crate) fn len(&self) -> usize {
        self.names.len() + self.named_by.len()
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
