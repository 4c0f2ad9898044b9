//! The work queue: at most one pending entry per resource, none while that
//! resource is being reconciled, and none for a listed version that a
//! finished pass has already written past.

use serde_json::Value;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use tokio::sync::Notify;

/// A resource: package index, namespace, name.
pub(crate) type Key = (usize, String, String);

#[derive(Default)]
struct State {
    order: VecDeque<Key>,
    /// Latest listed snapshot of each pending key.
    pending: HashMap<Key, Value>,
    running: HashSet<Key>,
    /// The resourceVersion each key was listed at when a pass wrote to it.
    /// A list that started before that write still shows the old version as
    /// due; re-reading it would cost a kubectl call to learn nothing.
    superseded: HashMap<Key, String>,
    closed: bool,
}

fn resource_version(snapshot: &Value) -> Option<&str> {
    snapshot
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
}

#[derive(Default)]
pub(crate) struct WorkQueue {
    state: Mutex<State>,
    notify: Notify,
}

impl WorkQueue {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `key`. A pending entry takes the newer snapshot; a running one
    /// is skipped (the next poll sees its outcome). Returns true if queued.
    pub(crate) fn push(&self, key: Key, snapshot: Value) -> bool {
        let mut s = self.state();
        if s.closed || s.running.contains(&key) {
            return false;
        }
        let stale = match (s.superseded.get(&key), resource_version(&snapshot)) {
            (Some(written_over), Some(listed)) => written_over == listed,
            _ => false,
        };
        if stale {
            return false;
        }
        if let Some(slot) = s.pending.get_mut(&key) {
            *slot = snapshot;
            return false;
        }
        s.order.push_back(key.clone());
        s.pending.insert(key, snapshot);
        drop(s);
        self.notify.notify_one();
        true
    }

    /// Waits for the next entry and marks it running; `None` once closed.
    pub(crate) async fn pop(&self) -> Option<(Key, Value)> {
        loop {
            let notified = self.notify.notified();
            {
                let mut s = self.state();
                if s.closed {
                    return None;
                }
                if let Some(key) = s.order.pop_front() {
                    let snapshot = s.pending.remove(&key).unwrap_or_default();
                    s.running.insert(key.clone());
                    // Pass the wake-up on: more entries may be waiting.
                    if !s.order.is_empty() {
                        self.notify.notify_one();
                    }
                    return Some((key, snapshot));
                }
            }
            notified.await;
        }
    }

    /// Marks `key` finished. `wrote_over` is the listed resourceVersion the
    /// pass started from when it wrote to the object, so stale lists of that
    /// version are ignored.
    pub(crate) fn done(&self, key: &Key, wrote_over: Option<String>) {
        let mut s = self.state();
        s.running.remove(key);
        match wrote_over {
            Some(rv) => s.superseded.insert(key.clone(), rv),
            None => s.superseded.remove(key),
        };
    }

    /// Forgets superseded versions of `package`'s resources missing from
    /// its latest list, so deleted resources leave nothing behind.
    pub(crate) fn retain_listed(&self, package: usize, listed: &HashSet<Key>) {
        self.state()
            .superseded
            .retain(|k, _| k.0 != package || listed.contains(k));
    }

    /// Stops handing out work and drops what is queued.
    pub(crate) fn close(&self) {
        let mut s = self.state();
        s.closed = true;
        s.order.clear();
        s.pending.clear();
        drop(s);
        self.notify.notify_waiters();
    }

    /// Entries waiting (not running).
    pub(crate) fn len(&self) -> usize {
        self.state().order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(name: &str) -> Key {
        (0, "ns".into(), name.into())
    }

    #[tokio::test]
    async fn pending_entry_coalesces_and_keeps_the_newest_snapshot() {
        let q = WorkQueue::default();
        assert!(q.push(key("a"), json!(1)));
        assert!(!q.push(key("a"), json!(2)));
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop().await, Some((key("a"), json!(2))));
    }

    #[tokio::test]
    async fn running_entry_is_not_queued_again_until_done() {
        let q = WorkQueue::default();
        q.push(key("a"), json!(1));
        let (k, _) = q.pop().await.unwrap();
        assert!(!q.push(key("a"), json!(2)));
        q.done(&k, None);
        assert!(q.push(key("a"), json!(3)));
    }

    fn at(rv: &str) -> Value {
        json!({"metadata": {"resourceVersion": rv}})
    }

    #[tokio::test]
    async fn stale_listing_of_a_version_already_written_over_is_not_requeued() {
        let q = WorkQueue::default();
        q.push(key("a"), at("7"));
        let (k, _) = q.pop().await.unwrap();
        q.done(&k, Some("7".into()));
        assert!(!q.push(key("a"), at("7")), "listed before our write");
        assert!(q.push(key("a"), at("9")), "a newer version is work again");
    }

    #[tokio::test]
    async fn versions_a_pass_did_not_write_over_stay_eligible() {
        let q = WorkQueue::default();
        q.push(key("a"), at("7"));
        let (k, _) = q.pop().await.unwrap();
        q.done(&k, None);
        assert!(
            q.push(key("a"), at("7")),
            "busy or failed: retry the same version"
        );
    }

    #[tokio::test]
    async fn superseded_versions_of_unlisted_resources_are_forgotten() {
        let q = WorkQueue::default();
        q.push(key("a"), at("7"));
        let (k, _) = q.pop().await.unwrap();
        q.done(&k, Some("7".into()));
        q.retain_listed(0, &HashSet::new());
        assert!(
            q.push(key("a"), at("7")),
            "recreated objects are work again"
        );
    }

    #[tokio::test]
    async fn close_drops_queued_work_and_wakes_waiters() {
        let q = std::sync::Arc::new(WorkQueue::default());
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { q.pop().await }
        });
        tokio::task::yield_now().await;
        q.close();
        assert_eq!(waiter.await.unwrap(), None);
        assert!(!q.push(key("b"), json!(1)));
        assert_eq!(q.len(), 0);
    }
}
