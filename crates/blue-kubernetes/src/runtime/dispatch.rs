//! From cache to queue: objects observed (listed or watched) and passes
//! finished update the cache, and the dispatch loop fires the timers.
//!
//! # Guarantees
//! - A resource found due when its version arrives is queued at once; a
//!   watch event's object goes with it, so the pass acts on it without a
//!   read (a newer event replaces it in the queue). A listed object is not
//!   kept: a list holds every resource, and the worker reads the few due
//!   ones, as it does when a timer fires.
//! - Otherwise its timer fires when the due rules say (interval, retry
//!   time), pushed back by write backoff or a hold, and coalesced with
//!   the timers due near it (at most `timer_slack_ms` and a tenth of the
//!   wait later); the loop wakes at least every `poll_ms` so a clock that
//!   jumps (or a fake one) is noticed.
//! - After every pass the resource is looked at again, so an event that
//!   arrived while it was running is not lost.

use super::cache::{slot_label, Cache};
use super::key::Key;
use super::queue::Work;
use super::scheduler::Slack;
use super::{outcome, Shared};
use crate::domain::resource;
use crate::reconcile::Request;
use crate::telemetry::QUEUE_NAME;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::MutexGuard;
use std::time::Duration;
use tokio::sync::watch;

/// The cache and the timers, changed together under one lock.
#[derive(Default)]
pub(super) struct Book {
    pub(super) cache: Cache,
    pub(super) timers: super::scheduler::Scheduler,
    /// Related objects: what each maps to.
    pub(super) related: super::related::RelatedCache,
    /// Which resources refer to which.
    pub(super) references: super::references::ReferenceIndex,
}

pub(super) fn book(shared: &Shared) -> MutexGuard<'_, Book> {
    shared.book.lock().unwrap_or_else(|e| e.into_inner())
}

/// The key of a listed or watched object of package `package`.
pub(super) fn key_of(package: usize, object: &Value) -> Key {
    Key::new(package, resource::namespace(object), resource::name(object))
}

/// A version of an object arrived, from a watch (`in_order`) or a list:
/// record it and decide when to look. Returns the cache's key for it, to
/// keep instead of `key`.
pub(super) fn take_in(shared: &Shared, key: Key, object: Value, in_order: bool) -> Key {
    let now = shared.controller.now();
    shared.backoff.forget_if_edited(&object, now);
    let due = shared.controller.due(&object);
    let (key, ready, version, new_version) = {
        let mut book = book(shared);
        let version_now = resource::str_at(&object, &["metadata", "resourceVersion"]);
        let new_version = !book
            .cache
            .has_version(&key, version_now.unwrap_or_default());
        let (key, phases) = book.cache.record(key, &object, due, in_order, now);
        let ready = book.cache.ready_at(&key, |uid| shared.backoff.until(uid));
        let version = book.cache.version(&key).unwrap_or_default();
        set_phase_gauges(shared, &book.cache, key.package(), phases);
        (key, ready, version, new_version)
    };
    let referrers = super::references::track(shared, &key, &object, new_version);
    let lane = match crate::steps::left_running(&object) {
        true => Lane::First,
        false => Lane::InTurn,
    };
    let delivered = in_order.then_some(object);
    decide(shared, key.clone(), ready, delivered, version, now, lane);
    for referrer in referrers {
        if request(shared, &referrer) {
            shared.counters.requested();
        }
    }
    key
}

/// An object is gone (deleted, or missing from a list).
pub(super) fn forget(shared: &Shared, key: &Key) {
    let (removed, referrers) = {
        let mut book = book(shared);
        book.references.remove(key);
        let referrers = book.references.referrers(key);
        book.timers.cancel(key);
        let removed = book.cache.remove(key);
        if let Some((_, phase)) = &removed {
            set_phase_gauges(shared, &book.cache, key.package(), [*phase, None]);
        }
        (removed, referrers)
    };
    shared.queue.forget(key);
    // What referred to it waits again.
    for referrer in referrers {
        if request(shared, &referrer) {
            shared.counters.requested();
        }
    }
    if let Some((uid, _)) = removed {
        shared.backoff.forget(&uid.text());
    }
    let subject = outcome::subject(shared, key);
    shared.failures.retain(|s| *s != subject);
}

/// A complete list of `package` in `namespace` (`""`: all) showed
/// `listed`: cached resources it lacks are gone.
pub(super) fn forget_missing(
    shared: &Shared,
    package: usize,
    namespace: &str,
    listed: &HashSet<Key>,
) {
    let missing = book(shared).cache.missing_from(package, namespace, listed);
    for key in &missing {
        forget(shared, key);
    }
    set_queue_depth(shared);
}

/// A reflector started watching: timers of its resources were not kept
/// while it only listed (its lists decided), so set them now. Without this
/// a retry set between a list and its watch (a `Busy` pass) would wait for
/// the next resync.
pub(super) fn rearm(shared: &Shared, package: usize, namespace: &str) {
    let now = shared.controller.now();
    let decisions: Vec<_> = {
        let book = book(shared);
        book.cache
            .keys_in(package, namespace)
            .map(|key| {
                let ready = book.cache.ready_at(key, |uid| shared.backoff.until(uid));
                let version = book.cache.version(key).unwrap_or_default();
                (key.clone(), ready, version)
            })
            .collect()
    };
    for (key, ready, version) in decisions {
        decide(shared, key, ready, None, version, now, Lane::InTurn);
    }
}

/// Asks for an early check of `key`, in memory: queued now unless it is
/// running (then looked at again when its pass ends) or backing off.
/// False when `key` is not cached.
pub(super) fn request(shared: &Shared, key: &Key) -> bool {
    request_as(shared, key, Request::Check)
}

/// [`request`], saying why.
pub(super) fn request_as(shared: &Shared, key: &Key, request: Request) -> bool {
    let now = shared.controller.now();
    let (key, ready, version) = {
        let mut book = book(shared);
        if !book.cache.request(key, request) {
            return false;
        }
        let ready = book.cache.ready_at(key, |uid| shared.backoff.until(uid));
        (
            key.clone(),
            ready,
            book.cache.version(key).unwrap_or_default(),
        )
    };
    decide(shared, key, ready, None, version, now, Lane::InTurn);
    true
}

/// A pass over `key` starts: the early check asked for, if any.
pub(super) fn take_request(shared: &Shared, key: &Key) -> Request {
    let mut book = book(shared);
    book.cache.begin_pass(key);
    book.cache.take_request(key)
}

/// What a finished pass tells the dispatcher.
#[derive(Default)]
pub(super) struct Ended {
    /// How long the version it started from keeps the resource from being
    /// dispatched again: `None` until a newer version arrives, or until a
    /// time.
    pub(super) hold: Option<u64>,
    /// The version of its last successful write, whose arrival the earlier
    /// versions (its own Reconciling publish, say) must not pre-empt.
    pub(super) written: Option<String>,
    /// The next check it decided, written or (a quiet check) kept only
    /// here.
    pub(super) next_check: Option<u64>,
    /// It was asked for and could not look (busy lock, transport error):
    /// the request stands.
    pub(super) unserved_request: Request,
    /// With sharding: the resource's shard is held by another replica.
    pub(super) not_owned: Option<u32>,
}

/// A pass over `work` ended: hold, await its write, and keep its next
/// check in memory.
pub(super) fn after_pass(shared: &Shared, work: &Work, ended: Ended) {
    let now = shared.controller.now();
    // A quiet check wrote nothing, so no newer version will come: its
    // next check, not a hold, keeps it from running again at once.
    let quiet = ended.written.is_none() && ended.next_check.is_some();
    let (ready, version) = {
        let mut book = book(shared);
        if !quiet {
            book.cache.hold(&work.key, &work.version, ended.hold);
        }
        if ended.unserved_request.any() {
            book.cache
                .restore_request(&work.key, ended.unserved_request);
        }
        book.cache.end_pass(&work.key, ended.written.as_deref());
        if let Some(at) = ended.next_check {
            book.cache.schedule(&work.key, at);
        }
        let ready = book
            .cache
            .ready_at(&work.key, |uid| shared.backoff.until(uid));
        let version = book.cache.version(&work.key).unwrap_or_default();
        (ready, version)
    };
    decide(
        shared,
        work.key.clone(),
        ready,
        None,
        version,
        now,
        Lane::InTurn,
    );
    if let Some(shard) = ended.not_owned {
        super::shards::park(shared, &work.key, shard);
    }
}

/// Decides `key` again from what the cache holds (its hold dropped, say).
pub(super) fn redecide(shared: &Shared, key: Key) {
    let now = shared.controller.now();
    let (ready, version) = {
        let book = book(shared);
        let ready = book.cache.ready_at(&key, |uid| shared.backoff.until(uid));
        (ready, book.cache.version(&key).unwrap_or_default())
    };
    decide(shared, key, ready, None, version, now, Lane::InTurn);
}

/// The uid cached for `key`.
pub(super) fn uid_of(shared: &Shared, key: &Key) -> Option<String> {
    book(shared).cache.uid(key).map(|uid| uid.to_string())
}

/// Queues `key` if it is ready now, else sets its timer.
fn decide(
    shared: &Shared,
    key: Key,
    ready: Option<u64>,
    snapshot: Option<Value>,
    version: String,
    now: u64,
    lane: Lane,
) {
    match ready {
        None => {}
        Some(at) if at <= now => queue(shared, key, snapshot, version, lane),
        // Listed (not watched) resources are looked at by the next list.
        Some(_) if !shared.watched(&key) => {}
        Some(at) => {
            let at = Slack(shared.controller.config.timer_slack_ms).fires_at(now, at);
            set_timer(shared, key, at)
        }
    }
}

/// Queued entries that may keep the object they were decided on. Beyond
/// it, entries carry only their key and the worker reads the object (about
/// a millisecond through the proxy): a burst of 10,000 watch events must
/// not hold 10,000 objects in the queue (and the allocator's pages
/// afterwards), and an object that waited long is better read fresh anyway.
const QUEUED_SNAPSHOTS: usize = 256;

/// Where a due resource joins the queue.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lane {
    /// Its recorded run was left `Running` (a dead process's, read from a
    /// list or watch): resuming it comes before checking what is healthy,
    /// so a restart does not make interrupted work wait behind the fleet.
    First,
    InTurn,
}

/// A standby replica queues nothing: its reflectors relist when it leads.
fn queue(shared: &Shared, key: Key, snapshot: Option<Value>, version: String, lane: Lane) {
    if !shared.may_dispatch() {
        return;
    }
    let snapshot = snapshot.filter(|_| shared.queue.len() < QUEUED_SNAPSHOTS);
    let work = Work {
        key,
        snapshot,
        version,
    };
    match lane {
        Lane::First => shared.queue.push_first(work),
        Lane::InTurn => shared.queue.push(work),
    };
    set_queue_depth(shared);
}

fn set_timer(shared: &Shared, key: Key, at: u64) {
    if book(shared).timers.schedule(key, at) {
        shared.wake.notify_one();
    }
}

/// Fires timers as they come due, until stopped.
pub(super) async fn timer_loop(shared: std::sync::Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let poll = shared.controller.config.poll_ms;
    loop {
        let now = shared.controller.now();
        let (fired, next) = {
            let mut book = book(&shared);
            (book.timers.pop_due(now), book.timers.next_ms())
        };
        for key in fired {
            redecide(&shared, key);
        }
        let wait = next.map_or(poll, |at| at.saturating_sub(now).clamp(1, poll));
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(wait)) => {}
            _ = shared.wake.notified() => {}
            _ = stopped.changed() => return,
        }
        if *stopped.borrow() {
            return;
        }
    }
}

fn set_phase_gauges(shared: &Shared, cache: &Cache, package: usize, slots: [Option<u8>; 2]) {
    let controller = shared.controller.config.packages[package]
        .descriptor()
        .qualified_plural();
    let phases = &shared.controller.telemetry.metrics.phases;
    for slot in slots.into_iter().flatten() {
        phases
            .get_or_create(&[
                ("controller", controller.clone()),
                ("phase", slot_label(slot).into()),
            ])
            .set(cache.count(package, slot));
    }
}

pub(super) fn set_queue_depth(shared: &Shared) {
    let depth = i64::try_from(shared.queue.len()).unwrap_or(i64::MAX);
    shared
        .controller
        .telemetry
        .metrics
        .queue_depth
        .get_or_create(&[("name", QUEUE_NAME.into())])
        .set(depth);
}
