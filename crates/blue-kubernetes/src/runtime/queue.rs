//! The work queue: at most one pending entry per resource, and none while
//! that resource is being reconciled.

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
    closed: bool,
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

    /// Marks `key` finished.
    pub(crate) fn done(&self, key: &Key) {
        self.state().running.remove(key);
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
        q.done(&k);
        assert!(q.push(key("a"), json!(3)));
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
