//! Cached related reads: the objects of the related kinds declared
//! [`cached`](crate::related::Related::cached), kept from the watches the
//! runtime runs anyway, for the packages' reads
//! ([`Api::cached`](crate::package::Api::cached)).
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
use crate::telemetry::Metrics;
use blue_kubernetes_client::{Client, Error, LabelSelector, ResourceDescriptor};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;

/// An object of a cached kind: (kind index, namespace, name).
type ObjectKey = (usize, String, String);

/// What a write of this process left to wait for.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Mark {
    /// The version the write stored.
    Version(String),
    /// The object was deleted.
    Deleted,
}

/// A kept object: its resourceVersion and its JSON text.
struct Kept {
    version: Box<str>,
    text: Box<str>,
}

#[derive(Default)]
struct State {
    objects: HashMap<ObjectKey, Kept>,
    marks: HashMap<ObjectKey, Mark>,
    /// (kind, namespace scope) watched now, `""` for every namespace.
    watching: HashSet<(usize, String)>,
}

impl State {
    fn watched(&self, kind: usize, namespace: &str) -> bool {
        self.watching.contains(&(kind, String::new()))
            || self.watching.contains(&(kind, namespace.to_string()))
    }

    /// Drops the mark of `key` if what arrived settles it.
    fn settle(&mut self, key: &ObjectKey) {
        let settled = match (self.marks.get(key), self.objects.get(key)) {
            (Some(Mark::Deleted), None) => true,
            (Some(Mark::Version(written)), Some(kept)) => at_least(&kept.version, written),
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

/// The objects of the cached related kinds, with this process's writes
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

    /// A version of an object of related kind `kind` arrived. One the
    /// cached declarations do not select is not kept (or no longer).
    pub(crate) fn arrived(&self, kind: usize, object: &Value) {
        let Some(Some((_, _, selector))) = self.kinds.get(kind) else {
            return;
        };
        let key = key_of(kind, object);
        if !selector.matches(object) {
            return self.gone(kind, &key.1, &key.2);
        }
        let version = object["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default();
        let mut state = self.state();
        // A relist brings unchanged versions again: kept as they are.
        let kept = state
            .objects
            .get(&key)
            .is_some_and(|k| &*k.version == version);
        if !kept {
            let Some(text) = kept_text(object) else {
                return;
            };
            let version = version.into();
            state.objects.insert(key.clone(), Kept { version, text });
        }
        state.settle(&key);
        drop(state);
        self.changed.notify_waiters();
    }

    /// An object of related kind `kind` is gone (deleted, or missing from
    /// a complete list).
    pub(crate) fn gone(&self, kind: usize, namespace: &str, name: &str) {
        if !self.caches(kind) {
            return;
        }
        let key = (kind, namespace.to_string(), name.to_string());
        let mut state = self.state();
        state.objects.remove(&key);
        state.settle(&key);
        drop(state);
        self.changed.notify_waiters();
    }

    /// A complete list of related kind `kind` in `namespace` (`""`: every
    /// namespace) showed the objects `listed` says it did: the rest are gone.
    pub(crate) fn listed(&self, kind: usize, namespace: &str, listed: impl Fn(&str, &str) -> bool) {
        if !self.caches(kind) {
            return;
        }
        let mut state = self.state();
        let gone: Vec<ObjectKey> = state
            .objects
            .keys()
            .filter(|(k, ns, name)| {
                *k == kind && (namespace.is_empty() || ns == namespace) && !listed(ns, name)
            })
            .cloned()
            .collect();
        for key in &gone {
            state.objects.remove(key);
            state.settle(key);
        }
        drop(state);
        self.changed.notify_waiters();
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
        let key = (kind, namespace.to_string(), name.to_string());
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
        let key = (kind, namespace.to_string(), name.to_string());
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
                    let kept = state.objects.get(&key);
                    return Ok(kept.and_then(|k| serde_json::from_str(&k.text).ok()));
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

fn key_of(kind: usize, object: &Value) -> ObjectKey {
    let meta = &object["metadata"];
    let text = |field: &str| meta[field].as_str().unwrap_or_default().to_string();
    (kind, text("namespace"), text("name"))
}

#[cfg(test)]
mod tests;
