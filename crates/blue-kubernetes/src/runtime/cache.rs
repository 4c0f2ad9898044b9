//! The cache of one controller: a compact entry per resource, fed by lists
//! and watch events, from which the dispatch loop decides when each
//! resource is looked at.
//!
//! An entry keeps what scheduling needs (uid, resourceVersion, phase,
//! the time the due rules computed when the version arrived, and a hold)
//! and, while the book keeps copies, the last version that arrived as
//! compact JSON text without `metadata.managedFields`: the object a pass
//! acts on instead of reading it again.
//!
//! A *hold* keeps a resource from being dispatched again after a pass,
//! until its version changes: a pass that wrote (or found the cache stale)
//! waits for the newer version a watch event or list brings; a pass that
//! could not proceed (the identity lock was busy) waits a short while.
//! Because a hold names the version it was set on, any newer version ends
//! it, and a lost event costs at most a resync period, never a busy loop.

pub(super) mod entry;

use super::key::{Key, Namespaces};
use super::token::{Spelled, Token};
use crate::domain::due::first_check;
use crate::domain::due::Due;
use crate::domain::resource;
use crate::reconcile::Request;
use crate::resource::Phase;
use entry::{phase_slot, Entry, Hold, Seen, PHASE_SLOTS};
use serde_json::Value;
use std::collections::hash_map::Entry as Slot;
use std::collections::{HashMap, HashSet};

#[derive(Default)]
pub(crate) struct Cache {
    /// Keyed by the cached copy of each resource's key, whose interned
    /// namespace the timers and the queue share (see [`Key`]).
    entries: HashMap<Key, Entry>,
    namespaces: Namespaces,
    /// Package index -> objects per phase slot.
    counts: HashMap<usize, [i64; PHASE_SLOTS]>,
    /// The versions watched while a pass over the key runs: at most one
    /// entry per running pass (so per worker), never per resource.
    passes: HashMap<Key, Seen>,
}

fn version_of(object: &Value) -> &str {
    object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl Cache {
    /// Records `object` under `key`, due at `due_ms` by the due rules. The
    /// same version again (a relist, a duplicated event) keeps its hold.
    /// `in_order` says it came from a watch stream, which delivers versions
    /// in order, so one that is not the version awaited precedes it; a list
    /// may run concurrently with a write, so it ends the wait. Returns the
    /// cached key (its namespace interned: keep it rather than `key`) and
    /// the phase slots whose counts changed (old, new).
    pub(crate) fn record(
        &mut self,
        key: Key,
        object: &Value,
        due: Due,
        in_order: bool,
        now_ms: u64,
    ) -> (Key, [Option<u8>; 2]) {
        let (due_ms, periodic) = match due {
            Due::Now => (Some(now_ms), false),
            Due::Stored { at_ms, .. } => (Some(at_ms), true),
            Due::OnEdit => (None, false),
        };
        let version = version_of(object);
        if let (true, Some(seen)) = (in_order, self.passes.get_mut(&key)) {
            seen.push(version);
        }
        let uid = resource::uid(object).unwrap_or_default();
        let phase = phase_slot(object);
        let package = key.package();
        let (key, old_phase) = match self.entries.entry(key) {
            Slot::Occupied(mut slot) => {
                let entry = slot.get_mut();
                if !entry.version.is(version) {
                    entry.version = Token::new(version);
                    entry.hold = None;
                    // The schedule was decided on another version (a quiet
                    // check keeps no version of its own): this one's stored
                    // time decides again, as our own writes carry it anyway.
                    entry.scheduled = None;
                }
                if !in_order || entry.awaiting.as_ref().is_some_and(|a| a.is(version)) {
                    entry.awaiting = None;
                }
                if !entry.uid.is(uid) {
                    entry.uid = Token::new(uid);
                    entry.scheduled = None;
                }
                entry.due_ms = due_ms;
                entry.periodic = periodic;
                // Never earlier than the stored time: a check it would
                // find not due yet would hold the resource until it changes.
                entry.scheduled = match (entry.scheduled, due) {
                    (Some(at), Due::Stored { at_ms, .. }) => Some(at.max(at_ms)),
                    (Some(at), _) => Some(at),
                    (None, _) => first_check(due, uid, now_ms),
                };
                let old_phase = std::mem::replace(&mut entry.phase, phase);
                (slot.key().clone(), old_phase)
            }
            Slot::Vacant(slot) => {
                let key = self.namespaces.intern(slot.into_key());
                let entry = Entry {
                    uid: Token::new(uid),
                    version: Token::new(version),
                    due_ms,
                    periodic,
                    scheduled: first_check(due, uid, now_ms),
                    hold: None,
                    awaiting: None,
                    phase,
                    requested: Request::None,
                    digest: None,
                    copy: None,
                };
                self.entries.insert(key.clone(), entry);
                (key, None)
            }
        };
        let counts = self.counts.entry(package).or_insert([0; PHASE_SLOTS]);
        if let Some(slot) = old_phase {
            counts[usize::from(slot)] -= 1;
        }
        if let Some(slot) = phase {
            counts[usize::from(slot)] += 1;
        }
        (key, [old_phase, phase])
    }

    /// Forgets `key` (deleted, or missing from a list); returns its uid.
    pub(crate) fn remove(&mut self, key: &Key) -> Option<(Token, Option<u8>)> {
        let entry = self.entries.remove(key)?;
        if let (Some(counts), Some(slot)) = (self.counts.get_mut(&key.package()), entry.phase) {
            counts[usize::from(slot)] -= 1;
        }
        Some((entry.uid, entry.phase))
    }

    /// Keys of `package` in `namespace` (`""`: any) that are not in `listed`.
    pub(crate) fn missing_from(
        &self,
        package: usize,
        namespace: &str,
        listed: &HashSet<Key>,
    ) -> Vec<Key> {
        self.keys_in(package, namespace)
            .filter(|k| !listed.contains(*k))
            .cloned()
            .collect()
    }

    /// Keys of `package` in `namespace` (`""`: any).
    pub(crate) fn keys_in<'a>(
        &'a self,
        package: usize,
        namespace: &'a str,
    ) -> impl Iterator<Item = &'a Key> + 'a {
        self.entries.keys().filter(move |k| {
            k.package() == package && (namespace.is_empty() || k.namespace() == namespace)
        })
    }

    /// When `key` may be dispatched: the due time, pushed back by a hold on
    /// its current version and by `backoff_until(uid)`. `None`: not until
    /// the object changes.
    pub(crate) fn ready_at(
        &self,
        key: &Key,
        backoff_until: impl Fn(&str) -> Option<u64>,
    ) -> Option<u64> {
        let entry = self.entries.get(key)?;
        if entry.awaiting.is_some() || matches!(entry.hold, Some(Hold::Released)) {
            // Our own write is on its way, or we released the object: a
            // pass on the version at hand would lose its first write with
            // Conflict (or find the object gone). The next version decides
            // again, with any request still standing.
            return None;
        }
        if entry.requested.any() {
            // News the version does not carry: a hold until a newer
            // version does not keep it; a short hold (the lock was busy)
            // and a backoff still do.
            let mut at = match entry.hold {
                Some(Hold::Until(until)) => until,
                _ => 0,
            };
            if let Some(until) = backoff_until(&entry.uid.text()) {
                at = at.max(until);
            }
            return Some(at);
        }
        let mut at = match (entry.periodic, entry.scheduled) {
            (true, Some(scheduled)) => scheduled,
            _ => entry.due_ms?,
        };
        match entry.hold {
            Some(Hold::UntilNewer | Hold::Released) => return None,
            Some(Hold::Until(until)) => at = at.max(until),
            None => {}
        }
        if let Some(until) = backoff_until(&entry.uid.text()) {
            at = at.max(until);
        }
        Some(at)
    }

    /// Holds `key` after a pass that started from `version`: until a newer
    /// version arrives, or also ends at `until_ms` when given. A version
    /// newer than `version` already cached means there is nothing to hold.
    pub(crate) fn hold(&mut self, key: &Key, version: &str, until_ms: Option<u64>) {
        if let Some(entry) = self.entries.get_mut(key) {
            if entry.version.is(version) {
                entry.hold = Some(until_ms.map_or(Hold::UntilNewer, Hold::Until));
            }
        }
    }

    /// The last pass over `key` released it (removed our finalizer): it is
    /// not dispatched again until a newer version than any at hand.
    pub(crate) fn release(&mut self, key: &Key) {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.hold = Some(Hold::Released);
        }
    }

    /// Drops the hold on `key` (with sharding: its shard came here), so the
    /// due rules decide again from the version at hand.
    pub(crate) fn unhold(&mut self, key: &Key) {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.hold = None;
        }
    }

    /// Asks for an early check of `key` (a repair outranks a check);
    /// false when it is not cached.
    pub(crate) fn request(&mut self, key: &Key, request: Request) -> bool {
        match self.entries.get_mut(key) {
            Some(entry) => {
                entry.requested = entry.requested.max(request);
                true
            }
            None => false,
        }
    }

    /// A pass over `key` starts: the early check asked for, if any (the
    /// request is hers from now on).
    pub(crate) fn take_request(&mut self, key: &Key) -> Request {
        self.entries
            .get_mut(key)
            .map(|e| std::mem::take(&mut e.requested))
            .unwrap_or_default()
    }

    /// Records what referrers of `key` depend on; true when it changed
    /// since it was last recorded (not when first seen: a start finds
    /// nothing changed).
    pub(crate) fn swap_digest(&mut self, key: &Key, digest: u64) -> bool {
        self.entries
            .get_mut(key)
            .and_then(|e| e.digest.replace(digest))
            .is_some_and(|old| old != digest)
    }

    /// Whether `key` is cached at `version`.
    pub(crate) fn has_version(&self, key: &Key, version: &str) -> bool {
        self.entries.get(key).is_some_and(|e| e.version.is(version))
    }

    /// Whether `key`'s cached phase is `phase`.
    pub(crate) fn phase_is(&self, key: &Key, phase: Phase) -> bool {
        let slot = Phase::ALL.iter().position(|p| *p == phase);
        self.entries
            .get(key)
            .is_some_and(|e| e.phase.map(usize::from) == slot.map(|i| i + 1))
    }

    /// A pass over `key` decided (and wrote, or quietly kept) its next
    /// check at `at_ms`.
    pub(crate) fn schedule(&mut self, key: &Key, at_ms: u64) {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.scheduled = Some(at_ms);
        }
    }

    /// A pass over `key` starts: from now on, the versions watched are
    /// kept until [`end_pass`](Self::end_pass).
    pub(crate) fn begin_pass(&mut self, key: &Key) {
        self.passes.insert(key.clone(), Seen::default());
    }

    /// The pass over `key` ended, its last successful write `written`:
    /// awaited unless the watch already brought it while the pass ran
    /// (then the versions after it are someone else's edits, which must
    /// decide at once, not at the next list).
    pub(crate) fn end_pass(&mut self, key: &Key, written: Option<&str>) {
        let seen = self.passes.remove(key).unwrap_or_default();
        let Some(written) = written else { return };
        if !seen.holds(written) {
            self.await_version(key, written);
        }
    }

    /// A pass over `key` last wrote `version`: until it arrives in order,
    /// earlier versions decide nothing.
    pub(crate) fn await_version(&mut self, key: &Key, version: &str) {
        if let Some(entry) = self.entries.get_mut(key) {
            if !entry.version.is(version) {
                entry.awaiting = Some(Token::new(version));
            }
        }
    }

    /// Keeps `text` (from `kept_text`) as the copy of `key` a pass may act on.
    pub(crate) fn keep_copy(&mut self, key: &Key, text: Option<Box<str>>) {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.copy = text;
        }
    }

    /// Whether `key` has a copy kept (awaited or not).
    pub(crate) fn has_copy(&self, key: &Key) -> bool {
        self.entries.get(key).is_some_and(|e| e.copy.is_some())
    }

    /// Drops the copy of `key`: the next pass reads the object.
    pub(crate) fn drop_copy(&mut self, key: &Key) {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.copy = None;
        }
    }

    /// Drops the copies of `package`'s resources in `namespace` (`""`: any).
    pub(crate) fn drop_copies(&mut self, package: usize, namespace: &str) {
        for (key, entry) in self.entries.iter_mut() {
            if key.package() == package && (namespace.is_empty() || key.namespace() == namespace) {
                entry.copy = None;
            }
        }
    }

    /// The copy of `key`, parsed; `None` while our own later write is on
    /// its way (the copy is behind it for certain: a check on it could
    /// find nothing to write and never notice).
    pub(crate) fn copy(&self, key: &Key) -> Option<Value> {
        let entry = self.entries.get(key)?;
        if entry.awaiting.is_some() {
            return None;
        }
        serde_json::from_str(entry.copy.as_deref()?).ok()
    }

    /// The uid of `key`.
    pub(crate) fn uid(&self, key: &Key) -> Option<Spelled<'_>> {
        self.entries.get(key).map(|e| e.uid.text())
    }

    /// The cached resourceVersion of `key`.
    pub(crate) fn version(&self, key: &Key) -> Option<String> {
        self.entries.get(key).map(|e| e.version.text().to_string())
    }

    /// Objects of `package` in phase slot `slot`.
    pub(crate) fn count(&self, package: usize, slot: u8) -> i64 {
        self.counts
            .get(&package)
            .map_or(0, |c| c[usize::from(slot)])
    }

    /// Resources cached.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Entries and running passes.
    #[cfg(feature = "testing")]
    pub(crate) fn remembered(&self) -> usize {
        self.entries.len() + self.passes.len()
    }
}

#[cfg(test)]
mod tests;
