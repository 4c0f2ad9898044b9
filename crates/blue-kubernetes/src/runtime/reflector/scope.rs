//! Which list-and-watch a reflector runs (where what it sees goes is the
//! dispatcher's: `dispatch::observed`).

use crate::runtime::Feed;
use blue_kubernetes_client::{PageRequest, ResourceDescriptor};

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

/// What the failure log and the log lines call a `verb` of `scope`.
pub(super) fn subject(scope: &Scope, verb: &str) -> String {
    let d = &scope.descriptor;
    match scope.namespace.as_str() {
        "" => format!("{verb} {}", d.qualified_plural()),
        ns => format!("{verb} {} in {ns}", d.qualified_plural()),
    }
}
