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
//! A sighting is used at most once, and only within [`FRESH_FOR`] of the
//! read, so a later pass (a retry, a periodic check) always reads anew.
//! `observe` never uses a sighting: what it reports is always read. It only
//! leaves one when an effect will follow (so a healthy periodic check keeps
//! no copy of the ConfigMap).

use k8s_openapi::api::core::v1::ConfigMap;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a sighting may stand in for a read.
pub const FRESH_FOR: Duration = Duration::from_secs(2);
/// Sightings kept before old ones are swept.
const SWEEP_ABOVE: usize = 256;

/// (resource uid, ConfigMap namespace, ConfigMap name).
type Key = (String, String, String);

/// Recent reads, per resource and ConfigMap.
#[derive(Debug, Default)]
pub struct Sightings {
    seen: Mutex<HashMap<Key, (Instant, Option<ConfigMap>)>>,
}

impl Sightings {
    /// Remembers that `key` read `found` (`None`: absent) just now.
    pub fn remember(&self, key: Key, found: Option<ConfigMap>) {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.len() >= SWEEP_ABOVE {
            seen.retain(|_, (at, _)| at.elapsed() < FRESH_FOR);
        }
        seen.insert(key, (Instant::now(), found));
    }

    /// The sighting of `key`, if fresh; it is used up either way.
    /// `Some(None)` is a fresh sighting of absence.
    pub fn take(&self, key: &Key) -> Option<Option<ConfigMap>> {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let (at, found) = seen.remove(key)?;
        (at.elapsed() < FRESH_FOR).then_some(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        ("uid-1".into(), "dev".into(), "app".into())
    }

    #[test]
    fn a_sighting_is_used_once() {
        let s = Sightings::default();
        s.remember(key(), Some(ConfigMap::default()));
        assert_eq!(s.take(&key()), Some(Some(ConfigMap::default())));
        assert_eq!(s.take(&key()), None);
    }

    #[test]
    fn absence_is_a_sighting_too() {
        let s = Sightings::default();
        s.remember(key(), None);
        assert_eq!(s.take(&key()), Some(None));
    }

    #[test]
    fn sightings_are_per_resource() {
        let s = Sightings::default();
        s.remember(key(), None);
        let other = ("uid-2".to_string(), "dev".to_string(), "app".to_string());
        assert_eq!(s.take(&other), None);
    }

    #[test]
    fn a_stale_sighting_is_not_used() {
        let s = Sightings::default();
        let old = Instant::now().checked_sub(FRESH_FOR).expect("uptime > 2 s");
        s.seen.lock().unwrap().insert(key(), (old, None));
        assert_eq!(s.take(&key()), None);
    }
}
