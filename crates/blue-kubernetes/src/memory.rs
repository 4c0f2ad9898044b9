//! What the controller remembers of each resource besides its status and
//! the runtime's book, the same whether a runtime runs or not. One owner,
//! forgotten in one call when the resource is released or gone: the
//! book's `Forget` decision makes it on the runtime's path, a one-shot
//! pass that released the resource on the other.

use crate::connection::{Data, Known};
use crate::steps::{Ignored, Mark};
use crate::telemetry::events::EventMemory;
use crate::telemetry::failure_log::FailureLog;
use crate::telemetry::Metrics;
use blue_kubernetes_client::ResourceDescriptor;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What is remembered of one resource, by uid.
#[derive(Default)]
struct Remembered {
    /// The values its connection Secret must hold (see [`Known`]).
    connection: Option<Data>,
    /// How far this process went in its durable-steps runs.
    steps: Option<Mark>,
}

/// Every resource's memory outside the book. One per controller.
pub(crate) struct Memory {
    by_uid: Mutex<HashMap<String, Remembered>>,
    /// Failures of the runtime's passes (and reads) of each resource, by
    /// log subject.
    pub(crate) failures: FailureLog,
    /// The Event recorder's series and token bucket of each resource.
    events: Option<EventMemory>,
}

impl Memory {
    /// Empty, with the step records ignored counted from zero in `metrics`
    /// (the marks are what they are checked against).
    pub(crate) fn new(metrics: &Metrics, events: Option<EventMemory>) -> Self {
        Ignored::count_from_zero(metrics);
        Self {
            by_uid: Mutex::default(),
            failures: FailureLog::default(),
            events,
        }
    }

    /// How far this process went in resource `uid`'s durable-steps runs.
    pub(crate) fn steps(&self, uid: &str) -> Option<Mark> {
        self.lock().get(uid).and_then(|r| r.steps)
    }

    /// Moves resource `uid`'s mark (see [`Mark::started`], [`Mark::ended`]).
    pub(crate) fn mark_steps(&self, uid: &str, to: impl FnOnce(Option<Mark>) -> Mark) {
        let mut by_uid = self.lock();
        let remembered = by_uid.entry(uid.to_string()).or_default();
        remembered.steps = Some(to(remembered.steps));
    }

    /// Resource `uid`, logged as `subject`, was released or is gone.
    pub(crate) fn forget(&self, uid: &str, subject: &str) {
        self.lock().remove(uid);
        self.failures.forget(subject);
        if let Some(events) = &self.events {
            events.forget(uid);
        }
    }

    /// Entries kept, for the tests that prove forgetting.
    #[cfg(feature = "testing")]
    pub(crate) fn len(&self) -> usize {
        let events = self.events.as_ref().map_or(0, EventMemory::len);
        self.lock().len() + self.failures.len() + events
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Remembered>> {
        self.by_uid.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Known for Memory {
    fn known(&self, uid: &str) -> Option<Data> {
        self.lock().get(uid).and_then(|r| r.connection.clone())
    }

    fn keep(&self, uid: &str, data: Data) {
        self.lock().entry(uid.to_string()).or_default().connection = Some(data);
    }
}

/// A resource's log subject: `plural.group ns/name`.
pub(crate) fn subject(d: &ResourceDescriptor, namespace: &str, name: &str) -> String {
    format!("{} {namespace}/{name}", d.qualified_plural())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forgetting_a_resource_drops_its_connection_and_its_step_mark_only() {
        let memory = Memory::new(&Metrics::new(), None);
        for uid in ["gone", "kept"] {
            memory.keep(uid, [("password".into(), "x".into())].into());
            memory.mark_steps(uid, |mark| Mark::started(mark, 1));
        }
        memory.forget("gone", "widgets.example.com ns/gone");
        assert_eq!(memory.known("gone"), None);
        assert_eq!(memory.steps("gone"), None);
        assert!(memory.known("kept").is_some());
        assert_eq!(memory.steps("kept").map(|m| m.sequence), Some(1));
    }
}
