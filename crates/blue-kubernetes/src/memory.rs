//! What the controller remembers of each resource besides its status and
//! the runtime's book, the same whether a runtime runs or not: the values
//! its connection Secret must hold, how far this process went in its
//! durable-steps runs, its repeating pass failures. One owner, forgotten
//! in one call when the resource is released or gone: the book's `Forget`
//! decision makes it on the runtime's path, a one-shot pass that released
//! the resource on the other.

use crate::connection::Store;
use crate::steps::Marks;
use crate::telemetry::failure_log::FailureLog;
use crate::telemetry::Metrics;
use blue_kubernetes_client::ResourceDescriptor;
use std::sync::Arc;

/// Every resource's memory outside the book, by uid (failures: by log
/// subject). One per controller.
pub(crate) struct Memory {
    pub(crate) connections: Arc<Store>,
    pub(crate) step_marks: Marks,
    /// Failures of the runtime's passes (and reads) of each resource.
    pub(crate) failures: FailureLog,
}

impl Memory {
    pub(crate) fn new(metrics: &Metrics) -> Self {
        Self {
            connections: Arc::default(),
            step_marks: Marks::new(metrics),
            failures: FailureLog::default(),
        }
    }

    /// Resource `uid`, logged as `subject`, was released or is gone.
    pub(crate) fn forget(&self, uid: &str, subject: &str) {
        self.connections.forget(uid);
        self.step_marks.forget(uid);
        self.failures.forget(subject);
    }

    /// Entries kept, for the tests that prove forgetting.
    #[cfg(feature = "testing")]
    pub(crate) fn len(&self) -> usize {
        self.connections.len() + self.step_marks.len() + self.failures.len()
    }
}

/// A resource's log subject: `plural.group ns/name`.
pub(crate) fn subject(d: &ResourceDescriptor, namespace: &str, name: &str) -> String {
    format!("{} {namespace}/{name}", d.qualified_plural())
}
