//! What `observe` last read of each ConfigMap, for the `converge` or
//! `delete` that follows it in the same pass.
//!
//! A pass observes, then acts; reading the ConfigMap again before acting
//! would cost a round trip on the way to every effect. Acting on the
//! observed copy is safe because the write it leads to is guarded by what
//! was read: a replace or delete carries its resourceVersion and uid, and a
//! create fails if the ConfigMap appeared meanwhile. Such a Conflict (or
//! AlreadyExists) sends the callback back for one fresh read.
//!
//! A sighting is used at most once, and only within [`FRESH_FOR_MS`] of
//! the read (by the controller's clock), so a later pass (a retry, a periodic check) always reads anew.
//! `observe` never uses a sighting: what it reports is always read. It only
//! leaves one when an effect will follow (so a healthy periodic check keeps
//! no copy of the ConfigMap).

use crate::desired::Desired;
use k8s_openapi::api::core::v1::ConfigMap;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// How long a sighting may stand in for a read, in milliseconds.
pub const FRESH_FOR_MS: u64 = 2_000;
/// Sightings kept before old ones are swept.
const SWEEP_ABOVE: usize = 256;

/// (resource uid, ConfigMap namespace, ConfigMap name): whose read of
/// which ConfigMap.
type Key = (String, String, String);

fn key(d: &Desired) -> Key {
    (d.owner_uid.clone(), d.namespace.clone(), d.name.clone())
}

/// Recent reads, per resource and ConfigMap.
#[derive(Debug, Default)]
pub struct Sightings {
    /// When (the controller's `now_ms`) each was read, and what.
    seen: Mutex<HashMap<Key, (u64, Option<ConfigMap>)>>,
}

fn fresh(at: u64, now: u64) -> bool {
    now.saturating_sub(at) < FRESH_FOR_MS
}

impl Sightings {
    /// Remembers that `desired`'s resource read `found` (`None`: absent)
    /// at its name at `now` (milliseconds).
    pub fn remember(&self, desired: &Desired, found: Option<ConfigMap>, now: u64) {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.len() >= SWEEP_ABOVE {
            seen.retain(|_, (at, _)| fresh(*at, now));
        }
        seen.insert(key(desired), (now, found));
    }

    /// The sighting for `desired`, if fresh at `now`; it is used up
    /// either way. `Some(None)` is a fresh sighting of absence.
    pub fn take(&self, desired: &Desired, now: u64) -> Option<Option<ConfigMap>> {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let (at, found) = seen.remove(&key(desired))?;
        fresh(at, now).then_some(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(uid: &str) -> Desired {
        Desired {
            namespace: "dev".into(),
            name: "app".into(),
            owner_uid: uid.into(),
            owner_name: "app".into(),
            data: Default::default(),
        }
    }

    #[test]
    fn a_sighting_is_used_once() {
        let s = Sightings::default();
        s.remember(&app("uid-1"), Some(ConfigMap::default()), 10);
        assert_eq!(s.take(&app("uid-1"), 10), Some(Some(ConfigMap::default())));
        assert_eq!(s.take(&app("uid-1"), 10), None);
    }

    #[test]
    fn absence_is_a_sighting_too() {
        let s = Sightings::default();
        s.remember(&app("uid-1"), None, 10);
        assert_eq!(s.take(&app("uid-1"), 10), Some(None));
    }

    #[test]
    fn sightings_are_per_resource() {
        let s = Sightings::default();
        s.remember(&app("uid-1"), None, 10);
        assert_eq!(s.take(&app("uid-2"), 10), None);
    }

    #[test]
    fn a_stale_sighting_is_not_used() {
        let s = Sightings::default();
        s.remember(&app("uid-1"), None, 10);
        assert_eq!(s.take(&app("uid-1"), 10 + FRESH_FOR_MS), None);
        s.remember(&app("uid-1"), None, 10);
        assert_eq!(s.take(&app("uid-1"), 9 + FRESH_FOR_MS), Some(None));
    }
}
