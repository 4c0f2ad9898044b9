//! A resource's identity (package index, namespace, name), with no heap
//! allocation of its own in the usual case.
//!
//! The cache, the timer queue (twice: by key and by time) and the work
//! queue all name the same resources. What a resource costs is less the
//! bytes of its copies than its small allocations: a list decodes a page of
//! objects, and a long-lived allocation made meanwhile lands among them and
//! keeps the freed page memory around it resident (measured: 16 MB free but
//! resident after listing 10,000 resources with two small allocations
//! each). So a key keeps a short name (most are) inline, and its namespace
//! is interned by [`Namespaces`]: every resource of a namespace has the
//! same one. Copies then live inside the large tables of the cache and the
//! timers, and cloning a key copies 48 bytes and bumps a count.
//!
//! Keys compare, hash and order by content (package, namespace, name).

use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Names up to this many bytes live in the key (Kubernetes allows 253).
const INLINE: usize = 22;

#[derive(Clone)]
enum Name {
    Inline {
        len: u8,
        bytes: [u8; INLINE],
    },
    /// Shared, so clones of a long name do not allocate either.
    Shared(Arc<str>),
}

impl Name {
    fn new(name: &str) -> Self {
        match u8::try_from(name.len()) {
            Ok(len) if name.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..name.len()].copy_from_slice(name.as_bytes());
                Name::Inline { len, bytes }
            }
            _ => Name::Shared(name.into()),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            // A whole `&str` was copied in, so this is UTF-8.
            Name::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
            Name::Shared(name) => name,
        }
    }

    fn as_bytes(&self) -> &[u8] {
        match self {
            Name::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Name::Shared(name) => name.as_bytes(),
        }
    }
}

/// A resource: package index, namespace (`""` when cluster-scoped), name.
#[derive(Clone)]
pub(crate) struct Key {
    namespace: Arc<str>,
    name: Name,
    package: usize,
}

impl Key {
    pub(crate) fn new(package: usize, namespace: &str, name: &str) -> Self {
        Self {
            namespace: namespace.into(),
            name: Name::new(name),
            package,
        }
    }

    pub(crate) fn package(&self) -> usize {
        self.package
    }

    pub(crate) fn namespace(&self) -> &str {
        &self.namespace
    }

    pub(crate) fn name(&self) -> &str {
        self.name.as_str()
    }

    fn parts(&self) -> (usize, &str, &[u8]) {
        (self.package, &self.namespace, self.name.as_bytes())
    }

    /// Whether both keys use one interned namespace (not just equal text).
    #[cfg(test)]
    pub(crate) fn shares_namespace_with(&self, other: &Key) -> bool {
        Arc::ptr_eq(&self.namespace, &other.namespace)
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for Key {}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.parts().hash(state)
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        // Bytewise, as `str` orders.
        self.parts().cmp(&other.parts())
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "({}, {:?}, {:?})",
            self.package,
            self.namespace(),
            self.name()
        )
    }
}

/// The namespaces of cached keys, one allocation each.
#[derive(Default)]
pub(crate) struct Namespaces {
    known: HashSet<Arc<str>>,
    /// How many were known after the last sweep.
    swept: usize,
}

/// Namespaces known before unused ones are swept out.
const SWEEP_FLOOR: usize = 16;

impl Namespaces {
    /// The same resource as `key`, its namespace shared with every other
    /// key interned here.
    pub(crate) fn intern(&mut self, mut key: Key) -> Key {
        match self.known.get(&key.namespace) {
            Some(known) => key.namespace = known.clone(),
            None => {
                self.known.insert(key.namespace.clone());
                self.sweep();
            }
        }
        key
    }

    /// Forgets namespaces no key uses any more, once their number doubled
    /// since the last sweep: namespaces that come and go do not accumulate,
    /// at a cost spread over the insertions.
    fn sweep(&mut self) {
        if self.known.len() > (2 * self.swept).max(SWEEP_FLOOR) {
            self.known.retain(|ns| Arc::strong_count(ns) > 1);
            self.swept = self.known.len();
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.known.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_built_apart_are_equal_and_order_by_package_namespace_name() {
        let long = "n".repeat(253);
        let a = Key::new(0, "ns", "a");
        assert_eq!(a, Key::new(0, "ns", "a"));
        assert_ne!(a, Key::new(1, "ns", "a"));
        assert_eq!(Key::new(0, "ns", &long), Key::new(0, "ns", &long));
        assert_eq!(Key::new(0, "ns", &long).name(), long);
        let mut keys = vec![
            Key::new(1, "a", "a"),
            Key::new(0, "b", "a"),
            Key::new(0, "a", &long),
            Key::new(0, "a", "b"),
        ];
        keys.sort();
        let expected = [
            Key::new(0, "a", "b"),
            Key::new(0, "a", &long),
            Key::new(0, "b", "a"),
            Key::new(1, "a", "a"),
        ];
        assert_eq!(keys, expected);
        assert_eq!(format!("{a:?}"), r#"(0, "ns", "a")"#);
    }

    #[test]
    fn names_of_every_length_read_back() {
        for len in [0, 1, INLINE - 1, INLINE, INLINE + 1, 253] {
            let name = "é".repeat(len / 2) + &"x".repeat(len % 2);
            assert_eq!(Key::new(3, "ns", &name).name(), name);
        }
    }

    #[test]
    fn interned_keys_share_their_namespace() {
        let mut namespaces = Namespaces::default();
        let a = namespaces.intern(Key::new(0, "ns", "a"));
        let b = namespaces.intern(Key::new(0, "ns", "b"));
        assert!(a.shares_namespace_with(&b));
        assert_eq!((b.namespace(), b.name()), ("ns", "b"));
        assert_eq!(namespaces.len(), 1);
    }

    #[test]
    fn namespaces_no_key_uses_are_swept_as_new_ones_come() {
        let mut namespaces = Namespaces::default();
        let kept = namespaces.intern(Key::new(0, "kept", "a"));
        for i in 0..1_000 {
            namespaces.intern(Key::new(0, &format!("gone-{i}"), "a"));
        }
        assert!(
            namespaces.len() <= 2 * SWEEP_FLOOR + 1,
            "{}",
            namespaces.len()
        );
        let again = namespaces.intern(Key::new(0, "kept", "b"));
        assert!(again.shares_namespace_with(&kept), "one still in use stays");
    }
}
