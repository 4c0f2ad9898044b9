//! Which list-and-watch a reflector runs, and where what it sees goes
//! (the resources' cache or the related objects').

use crate::runtime::dispatch;
use crate::runtime::key::Key;
use crate::runtime::Feed;
use crate::runtime::Shared;
use blue_kubernetes_client::{PageRequest, ResourceDescriptor};
use serde_json::Value;
use std::collections::HashSet;

/// Which list-and-watch this reflector runs.
pub(in crate::runtime) struct Scope {
    /// Index of this reflector (health, list backoff).
    pub(in crate::runtime) index: usize,
    pub(in crate::runtime) feed: Feed,
    pub(in crate::runtime) descriptor: ResourceDescriptor,
    /// `""`: every namespace, or a cluster-scoped type.
    pub(in crate::runtime) namespace: String,
    /// Lists and watches only the objects this label selector matches.
    pub(in crate::runtime) selector: Option<String>,
}

impl Scope {
    /// The first page of a list of this scope.
    pub(super) fn first_page(&self, limit: u32) -> PageRequest {
        let page = PageRequest::first(limit);
        match &self.selector {
            Some(selector) => page.with_label_selector(selector.clone()),
            None => page,
        }
    }
}

/// An object of `scope` was listed or (`in_order`) watched; returns its key.
pub(super) fn observed(shared: &Shared, scope: &Scope, object: Value, in_order: bool) -> Key {
    match scope.feed {
        Feed::Resources(package) => dispatch::take_in(shared, package, object, in_order),
        Feed::Related(kind) => dispatch::related_take_in(shared, scope.index, kind, &object),
    }
}

/// An object of `scope` was deleted.
pub(super) fn deleted(shared: &Shared, scope: &Scope, object: &Value) {
    match scope.feed {
        Feed::Resources(package) => dispatch::forget(shared, &dispatch::key_of(package, object)),
        Feed::Related(kind) => dispatch::related_deleted(shared, kind, object),
    }
}

/// A full list of `scope` showed `listed`: the rest is gone.
pub(super) fn listed_all(shared: &Shared, scope: &Scope, listed: &HashSet<Key>) {
    match scope.feed {
        Feed::Resources(package) => {
            dispatch::forget_missing(shared, package, &scope.namespace, listed)
        }
        Feed::Related(kind) => {
            dispatch::related_listed(shared, scope.index, kind, &scope.namespace, listed)
        }
    }
}

/// What the failure log and the log lines call a `verb` of `scope`.
pub(super) fn subject(scope: &Scope, verb: &str) -> String {
    let d = &scope.descriptor;
    match scope.namespace.as_str() {
        "" => format!("{verb} {}", d.qualified_plural()),
        ns => format!("{verb} {} in {ns}", d.qualified_plural()),
    }
}
