//! The dispatcher: the one place that takes the [`Book`]'s lock. It turns
//! what the reflectors, workers, triggers and the sharding task report into
//! the book's events (deriving from an object, outside the lock, what the
//! book needs of it), and acts on the decisions that come back: queue the
//! work, wake the timer loop, count, set gauges, forget what lives outside
//! the book. One lock acquisition per event.

use super::book::protocol::{Arrival, Decision, Ended};
use super::book::Book;
use super::key::Key;
use super::queue::Work;
use super::reflector::scope::Scope;
use super::{Feed, Shared};
use crate::domain::resource;
use crate::reconcile::Request;
use crate::telemetry::QUEUE_NAME;
use serde_json::Value;
use std::collections::HashSet;
use std::time::Duration;
use tokio::sync::watch;

/// Runs one event on the book and acts on its decisions, under one lock
/// acquisition: gauges set from counts taken under it land in order.
fn event<T>(shared: &Shared, event: impl FnOnce(&mut Book, u64) -> (T, Vec<Decision>)) -> T {
    let mut book = shared.book.lock().unwrap_or_else(|e| e.into_inner());
    let (value, decisions) = event(&mut book, shared.controller.now());
    act(shared, decisions);
    value
}

/// The key of a listed or watched object of package (or related kind)
/// `index`.
pub(super) fn key_of(index: usize, object: &Value) -> Key {
    Key::new(index, resource::namespace(object), resource::name(object))
}

/// An object of `scope` was listed or (`in_order`) watched; returns its key.
pub(super) fn observed(shared: &Shared, scope: &Scope, object: Value, in_order: bool) -> Key {
    match scope.feed {
        Feed::Resources(package) => take_in(shared, package, object, in_order),
        Feed::Related(kind) => related_take_in(shared, scope.index, kind, &object),
    }
}

/// An object of `scope` was deleted.
pub(super) fn deleted(shared: &Shared, scope: &Scope, object: &Value) {
    match scope.feed {
        Feed::Resources(package) => forget(shared, &key_of(package, object)),
        Feed::Related(kind) => related_deleted(shared, kind, object),
    }
}

/// A full list of `scope` showed `listed`: the rest is gone.
pub(super) fn listed_all(shared: &Shared, scope: &Scope, listed: &HashSet<Key>) {
    match scope.feed {
        Feed::Resources(package) => forget_missing(shared, package, &scope.namespace, listed),
        Feed::Related(kind) => related_listed(shared, scope.index, kind, &scope.namespace, listed),
    }
}

/// A version of a resource of `package` arrived, from a watch
/// (`watched`) or a list. Returns the cache's key for it.
fn take_in(shared: &Shared, package: usize, object: Value, watched: bool) -> Key {
    let controller = &shared.controller;
    let packages = &controller.config.packages;
    let refers = !packages[package].schema().references.is_empty();
    let finalizer = &controller.config.names.finalizer;
    let arrival = Arrival {
        key: key_of(package, &object),
        due: controller.due(&object),
        watched,
        left_running: crate::steps::left_running(&object),
        names: refers.then(|| super::references::named_by(packages, package, &object)),
        digest: shared.referenced[package].then(|| crate::references::digest(&object, finalizer)),
        object,
    };
    event(shared, |book, now| book.arrived(arrival, now))
}

/// A resource is gone (deleted).
pub(super) fn forget(shared: &Shared, key: &Key) {
    event(shared, |book, now| ((), book.gone(key, now)))
}

/// A complete list of `package` in `namespace` (`""`: all) showed
/// `listed`: cached resources it lacks are gone.
fn forget_missing(shared: &Shared, package: usize, ns: &str, listed: &HashSet<Key>) {
    event(shared, |book, now| {
        ((), book.listed(package, ns, listed, now))
    })
}

/// Reflector `index` (of `feed` in `namespace`) watches now, or lists only.
pub(super) fn watching(
    shared: &Shared,
    index: usize,
    feed: &super::Feed,
    namespace: &str,
    watching: bool,
) {
    event(shared, |book, now| {
        ((), book.watching(index, watching, now))
    });
    if let super::Feed::Related(kind) = *feed {
        let objects = &shared.controller.objects;
        objects.watching(kind, namespace, watching);
    }
}

/// Asks for an early check of `key`, in memory: queued now unless it is
/// running (then looked at again when its pass ends) or backing off.
/// False when `key` is not cached.
pub(super) fn request(shared: &Shared, key: &Key, request: Request) -> bool {
    event(shared, |book, now| {
        match book.requested(key, request, now) {
            Some(decisions) => (true, decisions),
            None => (false, Vec::new()),
        }
    })
}

/// A pass over `key` begins: the early check asked for, if any, and the
/// copy to act on (`None`: read it).
pub(super) fn pass_began(shared: &Shared, key: &Key) -> (Request, Option<serde_json::Value>) {
    event(shared, |book, _| (book.pass_began(key), Vec::new()))
}

/// A pass over `work` ended. With sharding, a resource parked for a shard
/// gained meanwhile is decided again at once (the gain did not see it).
pub(super) fn pass_ended(shared: &Shared, work: &Work, ended: Ended) {
    let not_owned = ended.not_owned;
    event(shared, |book, now| ((), book.pass_ended(work, ended, now)));
    if let Some(shard) = not_owned {
        let now = shared.controller.now();
        let table = shared.controller.shards.as_ref();
        if table.is_some_and(|t| t.dispatching(shard, now)) {
            shard_gained(shared, shard);
        }
    }
}

/// `shard` is dispatched here now.
pub(super) fn shard_gained(shared: &Shared, shard: u32) {
    event(shared, |book, now| ((), book.shard_gained(shard, now)))
}

/// A version of a related object of kind `kind` arrived from reflector
/// `scope`. Returns the related cache's key for it.
fn related_take_in(shared: &Shared, scope: usize, kind: usize, object: &Value) -> Key {
    let targets = shared.related[kind].targets(&shared.controller.config.packages, object);
    let (key, check) = shared.controller.objects.arrived(kind, object, targets);
    event(shared, |book, now| {
        ((), book.related_arrived(scope, check, now))
    });
    key
}

/// A related object of kind `kind` was deleted; `object`, its last state,
/// maps too.
fn related_deleted(shared: &Shared, kind: usize, object: &Value) {
    let targets = shared.related[kind].targets(&shared.controller.config.packages, object);
    let objects = &shared.controller.objects;
    let check = objects.gone(&key_of(kind, object), &targets);
    event(shared, |book, now| ((), book.related_gone(check, now)))
}

/// A complete list of related kind `kind` from reflector `scope` showed
/// `listed`.
fn related_listed(shared: &Shared, scope: usize, kind: usize, ns: &str, listed: &HashSet<Key>) {
    let check = shared.controller.objects.listed(kind, ns, listed);
    event(shared, |book, now| {
        ((), book.related_listed(scope, check, now))
    })
}

/// Resources and related objects cached.
pub(super) fn cached(shared: &Shared) -> (usize, usize) {
    let related = shared.controller.objects.len();
    event(shared, |book, _| ((book.len(), related), Vec::new()))
}

/// Entries of the book's per-resource maps.
#[cfg(feature = "testing")]
pub(super) fn remembered(shared: &Shared) -> usize {
    event(shared, |book, _| (book.remembered(), Vec::new()))
}

/// Carries out the book's decisions.
fn act(shared: &Shared, decisions: Vec<Decision>) {
    for decision in decisions {
        match decision {
            Decision::Queue { work, first } => queue(shared, work, first),
            Decision::WakeTimers => shared.wake.notify_one(),
            Decision::Requested => shared.counters.requested(),
            Decision::Phases {
                package,
                slot,
                count,
            } => set_phase_gauge(shared, package, slot, count),
            // The one place the runtime forgets a resource.
            Decision::Forget { key, uid } => {
                shared.queue.forget(&key);
                shared.controller.memory.forget(&uid, &shared.subject(&key));
                set_queue_depth(shared);
            }
        }
    }
}

/// A standby replica queues nothing: its reflectors relist when it leads.
/// A resource whose run was left `Running` (a dead process's) goes first:
/// resuming it comes before checking what is healthy.
fn queue(shared: &Shared, work: Work, first: bool) {
    if !shared.may_dispatch() {
        return;
    }
    match first {
        true => shared.queue.push_first(work),
        false => shared.queue.push(work),
    };
    set_queue_depth(shared);
}

/// Fires timers as they come due, until stopped; wakes at least every
/// `poll_ms` so a clock that jumps (or a fake one) is noticed.
pub(super) async fn timer_loop(shared: std::sync::Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let poll = shared.controller.config.poll_ms;
    loop {
        let now = shared.controller.now();
        let next = event(&shared, |book, now| {
            let (decisions, next) = book.timers_due(now);
            (next, decisions)
        });
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

fn set_phase_gauge(shared: &Shared, package: usize, slot: u8, count: i64) {
    let controller = shared.controller.config.packages[package]
        .descriptor()
        .qualified_plural();
    let phase = super::cache::entry::slot_label(slot);
    let labels = [("controller", controller), ("phase", phase.into())];
    let phases = &shared.controller.telemetry.metrics.phases;
    phases.get_or_create(&labels).set(count);
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
