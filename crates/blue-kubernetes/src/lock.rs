//! The process-wide identity lock.
//!
//! One table for the whole process, so two resource types, or two controller
//! instances, that manage the same infrastructure never act at once. Entries
//! exist only while held.

use std::collections::HashSet;
use std::sync::{LazyLock, Mutex, MutexGuard};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum LockKey {
    /// The identity a package computed.
    Identity(Vec<Option<String>>),
    /// Fallback when identity could not be computed: no effect can run then,
    /// but status writes still must not race another worker on the object.
    Object(String),
}

static HELD: LazyLock<Mutex<HashSet<LockKey>>> = LazyLock::new(Default::default);

fn table() -> MutexGuard<'static, HashSet<LockKey>> {
    // A panic never happens while the table is locked, but recover anyway:
    // the set stays consistent through any single insert/remove.
    HELD.lock().unwrap_or_else(|e| e.into_inner())
}

/// Held until dropped; dropping removes the entry.
#[derive(Debug)]
pub(crate) struct LockGuard {
    key: LockKey,
}

/// Takes the lock, or `None` when someone in the process holds it.
pub(crate) fn try_acquire(key: LockKey) -> Option<LockGuard> {
    // Build the guard only after the table is released: a guard dropped
    // while the table is locked would deadlock, and one built for a key we
    // did not insert would release someone else's lock.
    let inserted = table().insert(key.clone());
    if inserted {
        Some(LockGuard { key })
    } else {
        None
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        table().remove(&self.key);
    }
}

/// Whether `identity` is locked right now; the behaviour tests use it to
/// prove no lock leaks (the `testing` feature).
#[cfg(any(test, feature = "testing"))]
pub fn is_locked(identity: &[Option<String>]) -> bool {
    table().contains(&LockKey::Identity(identity.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_acquire_of_a_held_identity_fails_until_release() {
        let key = LockKey::Identity(vec![Some("lock-test".into()), None]);
        let guard = try_acquire(key.clone()).unwrap();
        assert!(try_acquire(key.clone()).is_none());
        assert!(is_locked(&[Some("lock-test".into()), None]));
        drop(guard);
        assert!(!is_locked(&[Some("lock-test".into()), None]));
        assert!(try_acquire(key).is_some());
    }
}
