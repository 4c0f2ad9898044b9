//! The one owner of the runtime's per-resource state: cache entries,
//! timers, holds, requests, the reference index, resources parked for
//! another replica's shard, and write backoff. Related objects are the
//! controller's one cache of them (`cached`): the book hears what they
//! mapped to.
//!
//! A state machine that does no I/O and keeps no clock: each method takes
//! one event (an object arrived or is gone, a list completed, a watch
//! opened or closed, a pass began or ended, a check was requested, a
//! related object changed, a shard was gained, timers came due) and the
//! time, and returns the [`Decision`]s the dispatcher acts on, holding
//! the one lock around it once per event.
//!
//! # Guarantees
//! - A resource found due when its version arrives is queued at once;
//!   otherwise its timer is set for when the due rules say, pushed back by
//!   a hold or write backoff (only for a watched resource: a listed one is
//!   decided by its next list).
//! - A pass acts on the last version that arrived, whatever queued it, as
//!   long as its scope has watched without a gap since: a gap drops the
//!   copies until the relist brings them again, and a pass that lost a
//!   write to a newer version drops its copy. Without a copy (after a
//!   start until the first list, after a gap, with the per-call
//!   transport) the worker reads the object. Acting on a copy is as safe
//!   as a read: every write carries its resourceVersion, so against a
//!   newer version the first write fails with Conflict before any effect.
//! - After every pass the resource is decided again, so an event that
//!   arrived while it ran is not lost.
//! - A resource gone (deleted, or missing from a complete list) is
//!   forgotten here in one event: its entry, timer, references, parking
//!   and backoff, and a [`Decision::Forget`] tells the dispatcher to drop
//!   what lives outside (the controller's memory of it, its queue entry);
//!   a pass that released it decides the same `Forget` at once.

pub(super) mod protocol;

use super::backoff::WriteBackoff;
use super::cache::Cache;
use super::key::Key;
use super::queue::Work;
use super::references::ReferenceIndex;
use super::scheduler::{Scheduler, Slack};
use super::Feed;
use crate::domain::resource::kept_text;
use crate::reconcile::Request;
use crate::resource::Phase;
use crate::telemetry::Verdict;
use protocol::{Arrival, Decision, Ended, Out, Settings};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

pub(super) struct Book {
    settings: Settings,
    cache: Cache,
    timers: Scheduler,
    references: ReferenceIndex,
    /// Resources whose last pass found their shard held elsewhere.
    parked: HashMap<u32, HashSet<Key>>,
    backoff: WriteBackoff,
    /// Per reflector scope: what it feeds, its namespace, whether it
    /// watches now. Timers serve watched resources only.
    scopes: Vec<(Feed, String, bool)>,
    /// Related reflector scopes whose first list completed.
    seeded: HashSet<usize>,
}

impl Book {
    pub(super) fn new(
        settings: Settings,
        request_annotation: &str,
        scopes: Vec<(Feed, String)>,
    ) -> Self {
        Self {
            settings,
            cache: Cache::default(),
            timers: Scheduler::default(),
            references: ReferenceIndex::default(),
            parked: HashMap::new(),
            backoff: WriteBackoff::new(request_annotation),
            scopes: scopes.into_iter().map(|(f, ns)| (f, ns, false)).collect(),
            seeded: HashSet::new(),
        }
    }

    /// A version of a resource arrived. Returns the cache's key for it (its
    /// namespace interned: keep it rather than the one given).
    pub(super) fn arrived(&mut self, a: Arrival, now: u64) -> (Key, Out) {
        let mut out = Vec::new();
        self.backoff.forget_if_edited(&a.object, now);
        let version = crate::domain::resource::str_at(&a.object, &["metadata", "resourceVersion"]);
        let new_version = !self.cache.has_version(&a.key, version.unwrap_or_default());
        let (key, phases) = self.cache.record(a.key, &a.object, a.due, a.watched, now);
        self.count_phases(key.package(), phases, &mut out);
        // A relist brings unchanged versions again: their copy is kept.
        if self.settings.keep_copies && (new_version || !self.cache.has_copy(&key)) {
            self.cache.keep_copy(&key, kept_text(&a.object));
        }
        let referrers = self.track(&key, a.names, a.digest, new_version);
        self.decide(&key, a.left_running, now, &mut out);
        for referrer in referrers {
            self.request(&referrer, Request::Check, now, &mut out);
        }
        (key, out)
    }

    /// Keeps the reference index up to date; returns the referrers to
    /// check: all of them when what they depend on changed, and, for any
    /// new version, those waiting. (A waiting referrer read the referenced
    /// resource itself, fresher than this book may have been: a lost event
    /// can leave the digest unchanged across the very change it waits for.)
    fn track(
        &mut self,
        key: &Key,
        names: Option<Vec<Key>>,
        digest: Option<u64>,
        new_version: bool,
    ) -> Vec<Key> {
        if let Some(names) = names {
            self.references.set(key, names);
        }
        let Some(digest) = digest else {
            return Vec::new();
        };
        let changed = self.cache.swap_digest(key, digest);
        let mut referrers = self.references.referrers(key);
        if !changed {
            referrers.retain(|r| new_version && self.cache.phase_is(r, Phase::Waiting));
        }
        referrers
    }

    /// A resource is gone (deleted, or missing from a list): everything
    /// about it is forgotten, and what referred to it waits again.
    pub(super) fn gone(&mut self, key: &Key, now: u64) -> Out {
        let mut out = Vec::new();
        self.references.remove(key);
        let referrers = self.references.referrers(key);
        self.timers.cancel(key);
        for keys in self.parked.values_mut() {
            keys.remove(key);
        }
        let uid = match self.cache.remove(key) {
            Some((uid, phase)) => {
                self.count_phases(key.package(), [phase, None], &mut out);
                let uid = uid.text().to_string();
                self.backoff.forget(&uid);
                uid
            }
            None => String::new(),
        };
        out.push(Decision::Forget {
            key: key.clone(),
            uid,
        });
        for referrer in referrers {
            self.request(&referrer, Request::Check, now, &mut out);
        }
        out
    }

    /// A complete list of `package` in `namespace` (`""`: all) showed
    /// `listed`: cached resources it lacks are gone.
    pub(super) fn listed(
        &mut self,
        package: usize,
        namespace: &str,
        listed: &HashSet<Key>,
        now: u64,
    ) -> Out {
        let missing = self.cache.missing_from(package, namespace, listed);
        missing.iter().flat_map(|key| self.gone(key, now)).collect()
    }

    /// Reflector scope `scope` watches now, or (`false`) lists only. A
    /// scope that stops watching has a gap: its copies go until the relist
    /// brings them again. A scope that starts watching sets the timers its
    /// lists did not keep, so a retry set between a list and its watch does
    /// not wait for the next resync.
    pub(super) fn watching(&mut self, scope: usize, watching: bool, now: u64) -> Out {
        let mut out = Vec::new();
        let Some((feed, namespace, flag)) = self.scopes.get_mut(scope) else {
            return out;
        };
        let was = std::mem::replace(flag, watching);
        let Feed::Resources(package) = *feed else {
            return out;
        };
        let namespace = namespace.clone();
        match (was, watching) {
            (true, false) => self.cache.drop_copies(package, &namespace),
            (false, true) => {
                let keys: Vec<Key> = self.cache.keys_in(package, &namespace).cloned().collect();
                for key in keys {
                    self.decide(&key, false, now, &mut out);
                }
            }
            _ => {}
        }
        out
    }

    /// Asks for an early check of `key`: queued now unless it is running
    /// (then decided again when its pass ends) or backing off. `None` when
    /// `key` is not cached (nothing is remembered then).
    pub(super) fn requested(&mut self, key: &Key, request: Request, now: u64) -> Option<Out> {
        let mut out = Vec::new();
        self.request(key, request, now, &mut out).then_some(out)
    }

    fn request(&mut self, key: &Key, request: Request, now: u64, out: &mut Out) -> bool {
        if !self.cache.request(key, request) {
            return false;
        }
        out.push(Decision::Requested);
        self.decide(key, false, now, out);
        true
    }

    /// A pass over `key` begins: returns the early check asked for, if any
    /// (the pass serves it from now on), and the copy to act on while the
    /// watch has been continuous since it arrived (`None`: read it).
    pub(super) fn pass_began(&mut self, key: &Key) -> (Request, Option<Value>) {
        self.cache.begin_pass(key);
        let copy = self.watched(key).then(|| self.cache.copy(key)).flatten();
        (self.cache.take_request(key), copy)
    }

    /// A pass over `work` ended: settle its backoff, hold its version,
    /// await its write, keep its next check, and decide again.
    pub(super) fn pass_ended(&mut self, work: &Work, ended: Ended, now: u64) -> Out {
        let mut out = Vec::new();
        let key = &work.key;
        let uid = self.cache.uid(key);
        let hold = self
            .backoff
            .settle(&ended, uid.as_deref(), self.settings, now);
        if ended.verdict == Verdict::Conflict {
            // The copy is behind (an event on its way, or lost): the next
            // pass reads rather than lose the same race again.
            self.cache.drop_copy(key);
        }
        // A quiet check wrote nothing, so no newer version will come: its
        // next check, not a hold, keeps it from running again at once.
        let quiet = ended.written.is_none() && ended.next_check.is_some();
        if ended.released {
            self.cache.release(key);
            // Released: what the controller remembers of it goes now.
            let uid = self
                .cache
                .uid(key)
                .map(|uid| uid.to_string())
                .unwrap_or_default();
            out.push(Decision::Forget {
                key: key.clone(),
                uid,
            });
        } else if !quiet {
            self.cache.hold(key, &work.version, hold);
        }
        if ended.unserved_request.any() {
            self.cache.request(key, ended.unserved_request);
        }
        self.cache.end_pass(key, ended.written.as_deref());
        if let Some(at) = ended.next_check {
            self.cache.schedule(key, at);
        }
        if let Some(shard) = ended.not_owned {
            self.parked.entry(shard).or_default().insert(key.clone());
        }
        self.decide(key, false, now, &mut out);
        out
    }

    /// `shard` is dispatched here now: what was parked for it is decided
    /// again from the version at hand, its hold dropped.
    pub(super) fn shard_gained(&mut self, shard: u32, now: u64) -> Out {
        let mut out = Vec::new();
        for key in self.parked.remove(&shard).unwrap_or_default() {
            self.cache.unhold(&key);
            self.decide(&key, false, now, &mut out);
        }
        out
    }

    /// The timers due at `now` fired. Also returns when the next one is.
    pub(super) fn timers_due(&mut self, now: u64) -> (Out, Option<u64>) {
        let mut out = Vec::new();
        for key in self.timers.pop_due(now) {
            self.decide(&key, false, now, &mut out);
        }
        (out, self.timers.next_ms())
    }

    /// A related object's new version arrived from reflector `scope`:
    /// `check`, what it mapped to before and now, is asked to check,
    /// unless it is the scope's first list (seeding: each resource's first
    /// check after a start looks anyway).
    pub(super) fn related_arrived(&mut self, scope: usize, check: Vec<Key>, now: u64) -> Out {
        match self.seeded.contains(&scope) {
            true => self.request_all(&check, Request::Check, now),
            false => Vec::new(),
        }
    }

    /// A related object is gone: what it mapped to (`check`, its last
    /// state's targets among them: its creation may have been an event
    /// that was lost) most likely needs repair.
    pub(super) fn related_gone(&mut self, check: Vec<Key>, now: u64) -> Out {
        self.request_all(&check, Request::Repair, now)
    }

    /// A complete list from related reflector `scope` left out objects
    /// that mapped to `check`: they are gone, and the scope is seeded.
    pub(super) fn related_listed(&mut self, scope: usize, check: Vec<Key>, now: u64) -> Out {
        self.seeded.insert(scope);
        self.related_gone(check, now)
    }

    fn request_all(&mut self, keys: &[Key], request: Request, now: u64) -> Out {
        let mut out = Vec::new();
        for key in keys {
            // A resource being deleted never makes its related objects
            // again, and its own Destroy deleting one is no reason for
            // another pass.
            if request == Request::Repair && self.cache.phase_is(key, Phase::Deleting) {
                continue;
            }
            self.request(key, request, now, &mut out);
        }
        out
    }

    /// Queues `key` if it is ready now, else sets its timer.
    fn decide(&mut self, key: &Key, first: bool, now: u64, out: &mut Out) {
        let backoff = &self.backoff;
        let Some(at) = self.cache.ready_at(key, |uid| backoff.until(uid)) else {
            return;
        };
        if at <= now {
            let version = self.cache.version(key).unwrap_or_default();
            let work = Work {
                key: key.clone(),
                version,
            };
            out.push(Decision::Queue { work, first });
        } else if self.watched(key) {
            let at = Slack(self.settings.timer_slack_ms).fires_at(now, at);
            if self.timers.schedule(key.clone(), at) {
                out.push(Decision::WakeTimers);
            }
        }
    }

    fn watched(&self, key: &Key) -> bool {
        self.scopes.iter().any(|(feed, ns, watching)| {
            *watching
                && *feed == Feed::Resources(key.package())
                && (ns.is_empty() || ns == key.namespace())
        })
    }

    fn count_phases(&self, package: usize, slots: [Option<u8>; 2], out: &mut Out) {
        for slot in slots.into_iter().flatten() {
            let count = self.cache.count(package, slot);
            out.push(Decision::Phases {
                package,
                slot,
                count,
            });
        }
    }

    /// Resources cached.
    pub(super) fn len(&self) -> usize {
        self.cache.len()
    }

    /// Entries of every per-resource map of the book.
    #[cfg(feature = "testing")]
    pub(super) fn remembered(&self) -> usize {
        let parked: usize = self.parked.values().map(HashSet::len).sum();
        let indexes = self.timers.len() + self.references.len() + self.backoff.len();
        self.cache.remembered() + parked + indexes
    }
}

#[cfg(test)]
mod tests;
