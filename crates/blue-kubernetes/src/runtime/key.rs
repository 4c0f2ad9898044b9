//! A resource's identity (package index, namespace, name), shared rather
//! than copied.
//!
//! The cache, the timer queue (twice: by key and by time) and the work
//! queue all name the same resources. With owned strings every one of
//! those copies cost two heap allocations; a [`Key`] is one pointer, and
//! cloning it bumps a count. The cache keeps the canonical key of each
//! resource (its namespace interned by [`Namespaces`], since every resource
//! of a namespace has the same one) and hands out clones of it, so a cached
//! resource costs one key allocation plus its name however many structures
//! refer to it.
//!
//! Keys compare, hash and order by content, so a key built afresh from a
//! watch event finds the canonical one.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

#[derive(PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Parts {
    package: usize,
    namespace: Arc<str>,
    name: Box<str>,
}

/// A resource: package index, namespace (`""` when cluster-scoped), name.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Key(Arc<Parts>);

impl Key {
    pub(crate) fn new(package: usize, namespace: &str, name: &str) -> Self {
        Self::with(package, namespace.into(), name.into())
    }

    fn with(package: usize, namespace: Arc<str>, name: Box<str>) -> Self {
        Self(Arc::new(Parts {
            package,
            namespace,
            name,
        }))
    }

    pub(crate) fn package(&self) -> usize {
        self.0.package
    }

    pub(crate) fn namespace(&self) -> &str {
        &self.0.namespace
    }

    pub(crate) fn name(&self) -> &str {
        &self.0.name
    }

    /// Whether both are clones of one key (not just equal).
    #[cfg(test)]
    pub(crate) fn is_same(&self, other: &Key) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {:?}, {:?})", self.package(), self.namespace(), self.name())
    }
}

/// The namespaces of cached keys, one allocation each.
#[derive(Default)]
pub(crate) struct Namespaces(HashSet<Arc<str>>);

impl Namespaces {
    /// The same resource as `key`, its namespace shared with every other
    /// key interned here. Takes the name over when `key` is not shared.
    pub(crate) fn intern(&mut self, key: Key) -> Key {
        let namespace = match self.0.get(key.namespace()) {
            Some(known) => known.clone(),
            None => {
                let fresh: Arc<str> = key.namespace().into();
                self.0.insert(fresh.clone());
                fresh
            }
        };
        let (package, name) = match Arc::try_unwrap(key.0) {
            Ok(parts) => (parts.package, parts.name),
            Err(shared) => (shared.package, shared.name.clone()),
        };
        Key::with(package, namespace, name)
    }

    /// `key` left the cache: forgets its namespace when no other interned
    /// key uses it, so namespaces that come and go do not accumulate.
    pub(crate) fn release(&mut self, key: &Key) {
        // Held by this set and by `key` (clones of a key share one count).
        if Arc::strong_count(&key.0.namespace) <= 2 {
            self.0.remove(key.namespace());
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_built_apart_are_equal_and_order_by_package_namespace_name() {
        let a = Key::new(0, "ns", "a");
        assert_eq!(a, Key::new(0, "ns", "a"));
        assert_ne!(a, Key::new(1, "ns", "a"));
        let mut keys = vec![
            Key::new(1, "a", "a"),
            Key::new(0, "b", "a"),
            Key::new(0, "a", "b"),
        ];
        keys.sort();
        assert_eq!(
            keys,
            [
                Key::new(0, "a", "b"),
                Key::new(0, "b", "a"),
                Key::new(1, "a", "a")
            ]
        );
        assert_eq!(format!("{a:?}"), r#"(0, "ns", "a")"#);
    }

    #[test]
    fn interned_keys_share_their_namespace_until_the_last_is_released() {
        let mut namespaces = Namespaces::default();
        let a = namespaces.intern(Key::new(0, "ns", "a"));
        let b = namespaces.intern(Key::new(0, "ns", "b"));
        assert!(Arc::ptr_eq(&a.0.namespace, &b.0.namespace));
        assert_eq!((a.namespace(), a.name()), ("ns", "a"));
        assert_eq!(namespaces.len(), 1);
        namespaces.release(&a);
        assert_eq!(namespaces.len(), 1, "b still uses it");
        drop(a);
        namespaces.release(&b);
        assert_eq!(namespaces.len(), 0);
    }

    #[test]
    fn interning_a_shared_key_keeps_the_other_holders_valid() {
        let mut namespaces = Namespaces::default();
        let original = Key::new(2, "ns", "a");
        let held = original.clone();
        let interned = namespaces.intern(original);
        assert_eq!(interned, held);
        assert_eq!(held.name(), "a");
    }
}
