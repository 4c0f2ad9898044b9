//! The one cache of related objects: for each object of a related kind
//! the runtime watches, its resourceVersion and the resources it mapped to
//! when that version arrived (what the book asks to check), and for the
//! kinds declared [`cached`](crate::related::Related::cached) its text too,
//! for the packages' reads ([`Api::cached`](crate::package::Api::cached)).
//!
//! # Guarantees
//! - Read-your-own-writes: after a write this process made to an object
//!   of a cached kind (through a package's API handle, a connection or the
//!   controller itself: every write goes through the controller's client,
//!   whose [`OwnWrites`] hook marks it), a read of that object waits until
//!   the watch delivered the written resourceVersion or a later one, and
//!   after a delete until the deletion arrived.
//! - The wait is bounded ([`Config::cached_read_wait_ms`](crate::Config::cached_read_wait_ms)):
//!   past it the read goes to the API server and is counted
//!   (`blue_cached_read_fallbacks_total{reason="wait"}`), as is every read
//!   while the kind's scope does not watch (before its first list, after a
//!   watch gap until the relist, with the per-call transport, and without
//!   a runtime: `reason="not_watching"`).
//!
//! # Caveats
//! - Another process's writes are seen when their events arrive, as with
//!   any informer cache; only this process's own are waited for.
//! - resourceVersions are compared as numbers when both are numbers (etcd
//!   revisions, as every API server gives them), else only for equality.

mod own_writes;

pub(crate) use own_writes::OwnWrites;

use crate::domain::resource::kept_text;
use crate::runtime::key::{Key, Namespaces};
use crate::runtime::token::Token;
use crate::telemetry::Metrics;
use blue_kubernetes_client::{Client, Error, LabelSelector, ResourceDescriptor};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use serde_json::Value;
use std::collections::hash_map::Entry as Slot;
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;

/// What a write of this process left to wait for.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Mark {
    /// The version the write stored.
    Version(String),
    /// The object was deleted.
    Deleted,
}

/// What an object mapped to; one target (the usual case) needs no
/// allocation of its own.
enum Targets {
    None,
    One(Key),
    Many(Box<[Key]>),
}

impl Targets {
    fn of(mut keys: Vec<Key>) -> Self {
        match keys.len() {
            0 => Targets::None,
            1 => Targets::One(keys.remove(0)),
            _ => Targets::Many(keys.into_boxed_slice()),
        }
    }

    fn keys(&self) -> &[Key] {
        match self {
            Targets::None => &[],
            Targets::One(key) => std::slice::from_ref(key),
            Targets::Many(keys) => keys,
        }
    }
}

/// A related object: its resourceVersion, the resources it mapped to, and
/// its JSON text when its kind is cached and selects it.
struct Kept {
    version: Token,
    targets: Targets,
    text: Option<Box<str>>,
}

/// Keyed by (kind index, namespace, name).
#[derive(Default)]
struct State {
    objects: HashMap<Key, Kept>,
    namespaces: Namespaces,
    marks: HashMap<Key, Mark>,
    /// (kind, namespace scope) watched now, `""` for every namespace.
    watching: HashSet<(usize, String)>,
}

impl State {
    fn watched(&self, kind: usize, namespace: &str) -> bool {
        self.watching.contains(&(kind, String::new()))
            || self.watching.contains(&(kind, namespace.to_string()))
    }

    /// Drops the mark of `key` if what arrived settles it.
    fn settle(&mut self, key: &Key) {
        let settled = match (self.marks.get(key), self.objects.get(key)) {
            (Some(Mark::Deleted), None) => true,
            (Some(Mark::Version(written)), Some(kept)) => at_least(&kept.version.text(), written),
            _ => false,
        };
        if settled {
            self.marks.remove(key);
        }
    }
}

/// `seen` is `written` or later.
fn at_least(seen: &str, written: &str) -> bool {
    match (seen.parse::<u64>(), written.parse::<u64>()) {
        (Ok(seen), Ok(written)) => seen >= written,
        _ => seen == written,
    }
}

/// The related objects, with this process's writes to the cached kinds
/// still on their way. One per controller.
pub(crate) struct ObjectStore {
    /// Per related kind index, when it is cached: its group, plural, and
    /// the selector of the objects kept.
    kinds: Vec<Option<(String, String, LabelSelector)>>,
    wait: Duration,
    state: Mutex<State>,
    changed: Notify,
    fallbacks: Family<[(&'static str, &'static str); 1], Counter>,
}

impl ObjectStore {
    /// A store for the related kinds `kinds` (in the runtime's order), each
    /// with the selector of the objects kept, for those cached; reads wait
    /// at most `wait_ms`.
    pub(crate) fn new<'a>(
        kinds: impl IntoIterator<Item = (&'a ResourceDescriptor, Option<&'a LabelSelector>)>,
        wait_ms: u64,
        metrics: &Metrics,
    ) -> Self {
        let fallbacks = Family::default();
        metrics.register(
            "blue_cached_read_fallbacks",
            "Cached related reads that went to the API server, by reason",
            fallbacks.clone(),
        );
        let kinds = kinds
            .into_iter()
            .map(|(d, cached)| Some((d.group.clone(), d.plural.clone(), cached?.clone())))
            .collect();
        Self {
            kinds,
            wait: Duration::from_millis(wait_ms),
            state: Mutex::default(),
            changed: Notify::new(),
            fallbacks,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The index of `descriptor`'s kind if it is cached.
    fn index_of(&self, group: &str, plural: &str) -> Option<usize> {
        self.kinds.iter().position(|k| {
            k.as_ref()
                .is_some_and(|(g, p, _)| g == group && p == plural)
        })
    }

    /// Whether any related kind keeps its objects.
    pub(crate) fn any_cached(&self) -> bool {
        self.kinds.iter().any(Option::is_some)
    }

    /// Whether related kind `kind` keeps its objects.
    pub(crate) fn caches(&self, kind: usize) -> bool {
        self.kinds.get(kind).is_some_and(Option::is_some)
    }

    /// A version of `object`, of related kind `kind`, arrived, mapping to
    /// `targets`; its text is kept if its kind is cached and selects it.
    /// Returns its key and the resources to check: none for the same
    /// version again (a relist, a duplicated event), else what it mapped
    /// to before and now.
    pub(crate) fn arrived(
        &self,
        kind: usize,
        object: &Value,
        targets: Vec<Key>,
    ) -> (Key, Vec<Key>) {
        let meta = &object["metadata"];
        let text = |field: &str| meta[field].as_str().unwrap_or_default();
        let selected = matches!(self.kinds.get(kind), Some(Some((.., s))) if s.matches(object));
        let mut state = self.state();
        let key = Key::new(kind, text("namespace"), text("name"));
        let key = state.namespaces.intern(key);
        let check = match state.objects.entry(key.clone()) {
            Slot::Occupied(slot) if slot.get().version.is(text("resourceVersion")) => Vec::new(),
            Slot::Occupied(mut slot) => {
                let check = and(slot.get().targets.keys().to_vec(), &targets);
                *slot.get_mut() = kept(object, targets, selected);
                check
            }
            Slot::Vacant(slot) => slot
                .insert(kept(object, targets, selected))
                .targets
                .keys()
                .to_vec(),
        };
        state.settle(&key);
        drop(state);
        self.changed.notify_waiters();
        (key, check)
    }

    /// Related object `key` is gone (deleted, or missing from a complete
    /// list); `targets` is what its last state maps to. Returns what to
    /// check: what it mapped to, then `targets`.
    pub(crate) fn gone(&self, key: &Key, targets: &[Key]) -> Vec<Key> {
        let mut state = self.state();
        let kept = state.objects.remove(key);
        state.settle(key);
        drop(state);
        self.changed.notify_waiters();
        and(
            kept.map_or(Vec::new(), |k| k.targets.keys().to_vec()),
            targets,
        )
    }

    /// A complete list of related kind `kind` in `namespace` (`""`: every
    /// namespace) showed `listed`: the rest are gone. Returns what each of
    /// them mapped to.
    pub(crate) fn listed(&self, kind: usize, namespace: &str, listed: &HashSet<Key>) -> Vec<Key> {
        let within = |k: &&Key| k.package() == kind && [k.namespace(), ""].contains(&namespace);
        let state = self.state();
        let keys = state.objects.keys().filter(within);
        let gone: Vec<Key> = keys.filter(|k| !listed.contains(*k)).cloned().collect();
        drop(state);
        gone.iter().flat_map(|key| self.gone(key, &[])).collect()
    }

    /// Related objects cached.
    pub(crate) fn len(&self) -> usize {
        self.state().objects.len()
    }

    /// Related kind `kind` in `namespace` (`""`: every namespace) is
    /// watched now, or (`false`) has a gap: reads go to the API server
    /// until the relist and the watch after it.
    pub(crate) fn watching(&self, kind: usize, namespace: &str, watching: bool) {
        if !self.caches(kind) {
            return;
        }
        let scope = (kind, namespace.to_string());
        let mut state = self.state();
        match watching {
            true => state.watching.insert(scope),
            false => state.watching.remove(&scope),
        };
        drop(state);
        self.changed.notify_waiters();
    }

    /// This process wrote `namespace/name` of the kind `group`/`plural`.
    pub(crate) fn written(
        &self,
        group: &str,
        plural: &str,
        namespace: &str,
        name: &str,
        mark: Mark,
    ) {
        let Some(kind) = self.index_of(group, plural) else {
            return;
        };
        let key = Key::new(kind, namespace, name);
        let mut state = self.state();
        state.marks.insert(key.clone(), mark);
        // The watch may have been faster than the write's answer.
        state.settle(&key);
    }

    /// `namespace/name` of `descriptor` as this process last knew it: from
    /// the cache when the kind is cached and watched, once this process's
    /// own write to it arrived; else, or past the wait, from `client`.
    pub(crate) async fn read(
        &self,
        client: &dyn Client,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        let Some(kind) = self.index_of(&descriptor.group, &descriptor.plural) else {
            return client.get_resource(descriptor, namespace, name).await;
        };
        let key = Key::new(kind, namespace, name);
        let deadline = tokio::time::Instant::now() + self.wait;
        let reason = loop {
            // Registered before the state is looked at: a change between
            // the look and the wait still wakes it.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let state = self.state();
                if !state.watched(kind, namespace) {
                    break "not_watching";
                }
                if !state.marks.contains_key(&key) {
                    let text = state.objects.get(&key).and_then(|k| k.text.as_deref());
                    return Ok(text.and_then(|text| serde_json::from_str(text).ok()));
                }
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                break "wait";
            }
        };
        self.fallbacks.get_or_create(&[("reason", reason)]).inc();
        client.get_resource(descriptor, namespace, name).await
    }
}

/// `check`, then those of `more` it lacks.
fn and(mut check: Vec<Key>, more: &[Key]) -> Vec<Key> {
    for key in more {
        if !check.contains(key) {
            check.push(key.clone());
        }
    }
    check
}

/// `object`'s entry: its text only when `selected` (by its cached kind).
fn kept(object: &Value, targets: Vec<Key>, selected: bool) -> Kept {
    let version = object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default();
    Kept {
        version: Token::new(version),
        targets: Targets::of(targets),
        text: selected.then(|| kept_text(object)).flatten(),
    }
}

#[cfg(test)]
mod tests;
