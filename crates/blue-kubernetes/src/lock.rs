//! The identity lock and its domains.
//!
//! By default one table serves the whole process, so two resource types,
//! or two controller instances, that manage the same infrastructure never
//! act at once. A controller given a [`LockDomain`] of its own contends
//! only with controllers given the same one. Entries exist only while
//! held.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum LockKey {
    /// The identity a package computed.
    Identity(Vec<Option<String>>),
    /// Fallback when identity could not be computed: no effect can run then,
    /// but status writes still must not race another worker on the object.
    Object(String),
}

type Table = Arc<Mutex<HashSet<LockKey>>>;

static PROCESS: LazyLock<Table> = LazyLock::new(Default::default);

/// Which identity lock a controller takes before it acts on a resource:
/// two passes whose packages compute the same identity never run at once
/// within one domain, and `reconcile` reports
/// [`Busy`](crate::Report::Busy) for the second.
///
/// The default, [`LockDomain::process`], is one lock for the whole
/// process, shared by every resource type and every controller in it: what
/// an operator needs, since two controllers of one process that manage the
/// same infrastructure must not act on it at once. A domain of its own,
/// [`LockDomain::new`], is for processes that host independent controllers
/// which would otherwise block each other: tests, most of all, where two
/// tests running in parallel with equal identities would see each other's
/// locks (the testkit gives every controller it builds its own). Clones
/// share their domain.
///
/// ```
/// use blue_kubernetes::{config::LockDomain, Config, Package};
/// # fn demo(client: std::sync::Arc<dyn blue_kubernetes_client::Client>, package: Package) {
/// let own = LockDomain::new();
/// let config = Config::new(client, vec![package]).with_lock_domain(own.clone());
/// assert!(config.lock_domain.same_as(&own));
/// assert!(!config.lock_domain.same_as(&LockDomain::process()));
/// # }
/// ```
#[derive(Clone)]
pub struct LockDomain {
    table: Table,
}

impl LockDomain {
    /// A domain of its own: its locks are contended only by controllers
    /// given this domain (or a clone of it).
    // No `Default`: which domain a controller takes is said, never implied
    // (`Config` starts from `process`).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self {
            table: Table::default(),
        }
    }

    /// The one process-wide domain, the default of every
    /// [`Config`](crate::Config).
    pub fn process() -> Self {
        Self {
            table: PROCESS.clone(),
        }
    }

    /// Whether `self` and `other` are the same domain (one lock).
    pub fn same_as(&self, other: &LockDomain) -> bool {
        Arc::ptr_eq(&self.table, &other.table)
    }

    fn table(&self) -> MutexGuard<'_, HashSet<LockKey>> {
        // A panic never happens while the table is locked, but recover
        // anyway: the set stays consistent through any single insert/remove.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the lock, or `None` when someone in this domain holds it.
    pub(crate) fn try_acquire(&self, key: LockKey) -> Option<LockGuard> {
        // Build the guard only after the table is released: a guard dropped
        // while the table is locked would deadlock, and one built for a key
        // we did not insert would release someone else's lock.
        let inserted = self.table().insert(key.clone());
        if inserted {
            Some(LockGuard {
                domain: self.clone(),
                key,
            })
        } else {
            None
        }
    }

    /// Whether `identity` is locked in this domain right now; the
    /// behaviour tests use it to prove no lock leaks (the `testing`
    /// feature).
    #[cfg(any(test, feature = "testing"))]
    #[doc(hidden)]
    pub fn is_locked(&self, identity: &[Option<String>]) -> bool {
        self.table().contains(&LockKey::Identity(identity.to_vec()))
    }
}

impl std::fmt::Debug for LockDomain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Which domain, never what it holds: identities are the package's.
        let which = match Arc::ptr_eq(&self.table, &PROCESS) {
            true => "process",
            false => "own",
        };
        f.debug_tuple("LockDomain").field(&which).finish()
    }
}

/// Held until dropped; dropping removes the entry.
#[derive(Debug)]
pub(crate) struct LockGuard {
    domain: LockDomain,
    key: LockKey,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        self.domain.table().remove(&self.key);
    }
}

/// Whether `identity` is locked in the process-wide domain right now; the
/// behaviour tests use it to prove no lock leaks (the `testing` feature).
#[cfg(any(test, feature = "testing"))]
pub fn is_locked(identity: &[Option<String>]) -> bool {
    LockDomain::process().is_locked(identity)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> LockKey {
        LockKey::Identity(vec![Some(name.into()), None])
    }

    #[test]
    fn second_acquire_of_a_held_identity_fails_until_release() {
        let process = LockDomain::process();
        let guard = process.try_acquire(key("lock-test")).unwrap();
        assert!(process.try_acquire(key("lock-test")).is_none());
        assert!(is_locked(&[Some("lock-test".into()), None]));
        drop(guard);
        assert!(!is_locked(&[Some("lock-test".into()), None]));
        assert!(process.try_acquire(key("lock-test")).is_some());
    }

    #[test]
    fn domains_of_their_own_never_contend_and_clones_share_one() {
        let (a, b) = (LockDomain::new(), LockDomain::new());
        let held = a.try_acquire(key("domains")).unwrap();
        assert!(b.try_acquire(key("domains")).is_some());
        assert!(a.clone().try_acquire(key("domains")).is_none());
        assert!(
            !is_locked(&[Some("domains".into()), None]),
            "not the process's"
        );
        drop(held);
        assert!(!a.is_locked(&[Some("domains".into()), None]));
        assert!(LockDomain::process().same_as(&LockDomain::process()));
        assert!(!a.same_as(&b));
        assert_eq!(format!("{a:?}"), "LockDomain(\"own\")");
    }
}
