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

use super::key::{Key, Namespaces};
use super::token::{Spelled, Token};
use crate::domain::due::Due;
use crate::domain::jitter;
use crate::domain::resource::{self, status_str};
use crate::reconcile::Request;
use crate::resource::Phase;
use serde_json::Value;
use std::collections::hash_map::Entry as Slot;
use std::collections::{HashMap, HashSet};

/// Phase slots counted per package: no phase, then [`Phase::ALL`].
pub(crate) const PHASE_SLOTS: usize = Phase::ALL.len() + 1;

/// What keeps a resource from being dispatched again at its current
/// version. It needs no version of its own: [`Cache::hold`] sets it only on
/// the cached version, and [`Cache::observe`] drops it when another arrives.
#[derive(Clone, Copy)]
enum Hold {
    UntilNewer,
    /// Until this time, or a newer version if it comes first.
    Until(u64),
    /// Our finalizer is off: the object is gone or going, and the
    /// versions at hand are from before. Only a newer version (someone
    /// else's finalizer still holding it) decides again; an early check
    /// asked for meanwhile (our own delete of a related object) waits too.
    Released,
}

/// One resource, with no allocation of its own when its uid and
/// resourceVersion have the usual shape (see [`Token`]).
struct Entry {
    uid: Token,
    version: Token,
    due_ms: Option<u64>,
    /// `due_ms` is the stored `nextReconcileTime` ([`Due::Stored`]), which
    /// `scheduled` overrides.
    periodic: bool,
    /// This process's own next check of this uid: set when the resource is
    /// first seen (the stored time, or, when that has passed, a spread
    /// moment soon after), then by every pass that wrote or quietly kept a
    /// status. A quiet check does not rewrite `nextReconcileTime`, so after
    /// one the stored time is behind and only this is right.
    scheduled: Option<u64>,
    hold: Option<Hold>,
    /// The version our last pass wrote, while a watch has not yet brought
    /// it: versions before it are our own intermediate writes (or older),
    /// so they decide nothing.
    awaiting: Option<Token>,
    /// Index into the phase slots; `None` for text that is not a phase.
    phase: Option<u8>,
    /// An early check was asked for (a related object changed, a
    /// trigger) and no pass has started since: due now, whatever the
    /// version or the due rules say.
    requested: Request,
    /// What referrers depend on (readiness, outputs), for a resource of a
    /// referenced package; `None` until first seen so.
    digest: Option<u64>,
    /// The last version that arrived, without `metadata.managedFields`, as
    /// JSON text (a third of a parsed object's memory): `None` when copies
    /// are not kept, after a watch gap until the relist brings it again,
    /// and once a pass found it stale.
    copy: Option<Box<str>>,
}

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

/// Versions a watch delivered during one pass, in order.
#[derive(Default)]
struct Seen {
    versions: Vec<Token>,
    /// More arrived than are kept: whether the pass's last write was
    /// among them is unknown.
    overflowed: bool,
}

/// Versions kept per running pass; a pass that writes more (each step
/// boundary is a write) is rare and, past this, is not awaited.
const SEEN_PER_PASS: usize = 32;

fn phase_slot(object: &Value) -> Option<u8> {
    match status_str(object, "phase") {
        None => Some(0),
        Some(text) => Phase::ALL
            .iter()
            .position(|p| p.as_str() == text)
            .map(|i| (i + 1) as u8),
    }
}

/// The label of a phase slot.
pub(crate) fn slot_label(slot: u8) -> &'static str {
    match slot {
        0 => "None",
        n => Phase::ALL[usize::from(n) - 1].as_str(),
    }
}

/// The first check this process makes of a periodic resource it has no
/// schedule for: the stored time, or, when that has passed (a start after
/// a while, quiet checks that left it behind, or a retry written just
/// before a watch gap), soon after now, spread by the uid's share of a
/// tenth of the period it was written for (the interval, or the largest
/// retry delay for a retry) so thousands of resources found due at a
/// start are not queued at once behind one another.
fn first_check(due: Due, uid: &str, now_ms: u64) -> Option<u64> {
    match due {
        Due::Stored { at_ms, .. } if at_ms > now_ms => Some(at_ms),
        Due::Stored { period_ms, .. } => {
            Some(now_ms.saturating_add(jitter::extra_ms(period_ms, uid)))
        }
        Due::Now | Due::OnEdit => None,
    }
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
            match seen.versions.len() < SEEN_PER_PASS {
                true => seen.versions.push(Token::new(version)),
                false => seen.overflowed = true,
            }
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
        let arrived = seen.overflowed || seen.versions.iter().any(|v| v.is(written));
        if !arrived {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key() -> Key {
        Key::new(0, "ns", "a")
    }

    fn at(version: &str, phase: &str) -> Value {
        json!({"metadata": {"uid": "u", "resourceVersion": version}, "status": {"phase": phase}})
    }

    const NO_BACKOFF: fn(&str) -> Option<u64> = |_| None;

    fn stored(at_ms: u64) -> Due {
        Due::Stored {
            at_ms,
            period_ms: 60_000,
        }
    }

    #[test]
    fn cached_keys_share_one_namespace_and_fresh_keys_find_them() {
        let mut c = Cache::default();
        let (a, _) = c.record(key(), &at("1", "Pending"), Due::Now, true, 0);
        let (b, _) = c.record(
            Key::new(0, "ns", "b"),
            &at("1", "Pending"),
            Due::OnEdit,
            true,
            0,
        );
        assert!(a.shares_namespace_with(&b));
        let (again, _) = c.record(key(), &at("2", "Ready"), Due::OnEdit, false, 0);
        assert!(
            again.shares_namespace_with(&b),
            "the cached key, not the fresh one"
        );
        assert_eq!(c.version(&key()).as_deref(), Some("2"));
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn uids_and_versions_read_back_as_observed() {
        let mut c = Cache::default();
        let uid = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
        let object = json!({"metadata": {"uid": uid, "resourceVersion": "0042"}});
        c.record(key(), &object, Due::Now, true, 0);
        assert_eq!(c.uid(&key()).as_deref(), Some(uid));
        assert_eq!(c.version(&key()).as_deref(), Some("0042"));
        c.hold(&key(), "42", None);
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(0), "42 is not 0042");
        let backoff = |u: &str| (u == uid).then_some(700);
        assert_eq!(c.ready_at(&key(), backoff), Some(700));
    }

    #[test]
    fn a_hold_lasts_until_a_newer_version_arrives() {
        let mut c = Cache::default();
        c.record(key(), &at("1", "Pending"), Due::Now, true, 0);
        c.hold(&key(), "1", None);
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), None);
        c.record(key(), &at("1", "Pending"), Due::Now, true, 0);
        assert_eq!(
            c.ready_at(&key(), NO_BACKOFF),
            None,
            "a relist of the same version"
        );
        c.record(key(), &at("2", "Ready"), stored(60_000), true, 0);
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(60_000));
    }

    #[test]
    fn a_timed_hold_and_a_backoff_push_the_due_time_back() {
        let mut c = Cache::default();
        c.record(key(), &at("1", "Pending"), stored(100), true, 0);
        c.hold(&key(), "1", Some(500));
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(500));
        assert_eq!(c.ready_at(&key(), |_| Some(9_000)), Some(9_000));
        c.record(key(), &at("1", "Pending"), Due::OnEdit, true, 0);
        assert_eq!(
            c.ready_at(&key(), NO_BACKOFF),
            None,
            "only a change makes it due"
        );
    }

    #[test]
    fn a_hold_on_an_older_version_than_cached_is_ignored() {
        let mut c = Cache::default();
        c.record(key(), &at("2", "Pending"), Due::Now, true, 0);
        c.hold(&key(), "1", None);
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(0));
    }

    #[test]
    fn phases_are_counted_per_package_and_follow_changes_and_removals() {
        let mut c = Cache::default();
        let ready = Phase::ALL.iter().position(|p| *p == Phase::Ready).unwrap() as u8 + 1;
        c.record(key(), &at("1", "Ready"), Due::OnEdit, true, 0);
        c.record(
            Key::new(0, "ns", "b"),
            &at("1", "Ready"),
            Due::OnEdit,
            true,
            0,
        );
        c.record(
            Key::new(1, "ns", "a"),
            &at("1", "Ready"),
            Due::OnEdit,
            true,
            0,
        );
        assert_eq!(c.count(0, ready), 2);
        c.record(key(), &at("2", "Bogus"), Due::OnEdit, true, 0);
        assert_eq!(c.count(0, ready), 1, "unknown text is not counted");
        c.remove(&Key::new(0, "ns", "b"));
        assert_eq!(c.count(0, ready), 0);
        assert_eq!(c.count(1, ready), 1);
        assert_eq!(slot_label(0), "None");
        assert_eq!(slot_label(ready), "Ready");
    }

    #[test]
    fn keys_missing_from_a_list_are_found_within_its_scope_only() {
        let mut c = Cache::default();
        for (ns, name) in [("a", "x"), ("a", "y"), ("b", "z")] {
            c.record(
                Key::new(0, ns, name),
                &at("1", "Ready"),
                Due::OnEdit,
                true,
                0,
            );
        }
        let listed: HashSet<Key> = [Key::new(0, "a", "x")].into();
        assert_eq!(c.missing_from(0, "a", &listed), vec![Key::new(0, "a", "y")]);
        let mut all = c.missing_from(0, "", &listed);
        all.sort();
        assert_eq!(all.len(), 2);
        assert!(c.missing_from(1, "", &listed).is_empty());
    }

    #[test]
    fn versions_before_our_last_write_decide_nothing_until_it_arrives() {
        let mut c = Cache::default();
        c.record(key(), &at("1", "Pending"), Due::Now, true, 0);
        c.await_version(&key(), "3");
        c.record(key(), &at("2", "Reconciling"), Due::Now, true, 0);
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), None, "our own publish");
        c.record(key(), &at("3", "Ready"), stored(60_000), true, 0);
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(60_000));
        c.record(key(), &at("4", "Ready"), Due::Now, true, 0);
        assert_eq!(
            c.ready_at(&key(), NO_BACKOFF),
            Some(0),
            "someone's edit after it"
        );
    }

    #[test]
    fn the_process_schedule_decides_once_set_and_a_later_stored_time_moves_it() {
        let mut c = Cache::default();
        c.record(key(), &at("1", "Ready"), stored(60_000), true, 0);
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(60_000), "first seen");
        c.schedule(&key(), 130_000);
        c.record(key(), &at("1", "Ready"), stored(60_000), false, 70_000);
        assert_eq!(
            c.ready_at(&key(), NO_BACKOFF),
            Some(130_000),
            "a quiet check left the stored time behind"
        );
        c.record(key(), &at("2", "Ready"), stored(200_000), true, 80_000);
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(200_000));
        c.record(key(), &at("3", "Ready"), Due::Now, true, 90_000);
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(90_000), "an edit");
    }

    #[test]
    fn a_stored_time_already_passed_when_first_seen_is_spread_by_the_uid() {
        let mut c = Cache::default();
        c.record(key(), &at("1", "Ready"), stored(1_000), true, 500_000);
        let spread = jitter::extra_ms(60_000, "u");
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(500_000 + spread));
    }

    #[test]
    fn a_repair_outranks_a_check_asked_for_before_or_after_it() {
        let mut c = Cache::default();
        c.record(key(), &at("1", "Ready"), stored(60_000), true, 0);
        c.request(&key(), Request::Repair);
        c.request(&key(), Request::Check);
        assert_eq!(c.take_request(&key()), Request::Repair);
        c.request(&key(), Request::Check);
        c.request(&key(), Request::Repair);
        assert_eq!(c.take_request(&key()), Request::Repair);
    }

    #[test]
    fn a_request_makes_it_due_now_past_holds_once_our_write_arrived_but_not_past_backoff() {
        let mut c = Cache::default();
        assert!(!c.request(&key(), Request::Check), "not cached");
        c.record(key(), &at("1", "Ready"), stored(60_000), true, 0);
        c.await_version(&key(), "2");
        assert!(c.request(&key(), Request::Check));
        assert_eq!(
            c.ready_at(&key(), NO_BACKOFF),
            None,
            "our write is on its way"
        );
        c.record(key(), &at("2", "Ready"), stored(60_000), true, 0);
        c.hold(&key(), "2", None);
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(0));
        assert_eq!(c.ready_at(&key(), |_| Some(700)), Some(700));
        assert_eq!(c.take_request(&key()), Request::Check);
        assert_eq!(c.take_request(&key()), Request::None, "taken once");
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), None, "the hold again");
        c.request(&key(), Request::Check);
        c.hold(&key(), "2", Some(300));
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(300), "a busy lock");
    }

    #[test]
    fn an_edit_watched_after_our_write_within_the_pass_decides_at_once() {
        let mut c = Cache::default();
        c.record(key(), &at("1", "Pending"), Due::Now, true, 0);
        c.begin_pass(&key());
        c.record(key(), &at("2", "Reconciling"), Due::Now, true, 0);
        c.record(key(), &at("3", "Ready"), stored(60_000), true, 0);
        // Someone's edit arrives before the pass has ended.
        c.record(key(), &at("4", "Ready"), Due::Now, true, 0);
        c.end_pass(&key(), Some("3"));
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(0), "the edit");
        // Not yet watched when the pass ended: awaited as before.
        c.begin_pass(&key());
        c.end_pass(&key(), Some("6"));
        c.record(key(), &at("5", "Reconciling"), Due::Now, true, 0);
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), None, "our own publish");
        assert!(c.passes.is_empty(), "nothing kept after a pass");
    }

    #[test]
    fn a_list_ends_the_wait_for_a_written_version() {
        let mut c = Cache::default();
        c.record(key(), &at("1", "Pending"), Due::Now, true, 0);
        c.await_version(&key(), "3");
        c.record(key(), &at("5", "Pending"), Due::Now, false, 0);
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(0));
        c.await_version(&key(), "5");
        assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(0), "already cached");
    }
}
