//! The work queue: at most one pending entry per resource, none while that
//! resource is being reconciled (the dispatch loop looks at it again when
//! the pass ends, so nothing pushed meanwhile is lost). Entries queued
//! [first](WorkQueue::push_first) are handed out before the others, each
//! lane in the order it was queued.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use tokio::sync::Notify;

pub(crate) use super::key::Key;

/// One unit of work.
#[derive(Debug, PartialEq)]
pub(crate) struct Work {
    pub(crate) key: Key,
    /// The cached resourceVersion the decision was made on.
    pub(crate) version: String,
}

#[derive(Default)]
struct State {
    first: VecDeque<Key>,
    order: VecDeque<Key>,
    pending: HashMap<Key, Work>,
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

    /// Queues `work`. A pending entry takes the newer decision; a running
    /// one is skipped.
    /// Returns true if queued as a new entry.
    pub(crate) fn push(&self, work: Work) -> bool {
        self.push_to(work, false)
    }

    /// Queues `work` as [`push`](Self::push) does, ahead of every entry
    /// queued by `push`: after a restart, the runs a dead process left
    /// `Running` resume before the healthy resources are checked. An entry
    /// already pending keeps its place.
    pub(crate) fn push_first(&self, work: Work) -> bool {
        self.push_to(work, true)
    }

    fn push_to(&self, work: Work, first: bool) -> bool {
        let mut s = self.state();
        if s.closed || s.running.contains(&work.key) {
            return false;
        }
        if let Some(slot) = s.pending.get_mut(&work.key) {
            *slot = work;
            return false;
        }
        let lane = if first { &mut s.first } else { &mut s.order };
        lane.push_back(work.key.clone());
        s.pending.insert(work.key.clone(), work);
        drop(s);
        self.notify.notify_one();
        true
    }

    /// Waits for the next entry and marks it running; `None` once closed.
    pub(crate) async fn pop(&self) -> Option<Work> {
        loop {
            let notified = self.notify.notified();
            {
                let mut s = self.state();
                if s.closed {
                    return None;
                }
                while let Some(key) = s.first.pop_front().or_else(|| s.order.pop_front()) {
                    let Some(work) = s.pending.remove(&key) else {
                        continue;
                    };
                    s.running.insert(key);
                    // Pass the wake-up on: more entries may be waiting.
                    if !s.first.is_empty() || !s.order.is_empty() {
                        self.notify.notify_one();
                    }
                    return Some(work);
                }
            }
            notified.await;
        }
    }

    /// Marks `key` finished.
    pub(crate) fn done(&self, key: &Key) {
        self.state().running.remove(key);
    }

    /// Drops a pending entry of `key` (the resource is gone).
    pub(crate) fn forget(&self, key: &Key) {
        self.state().pending.remove(key);
    }

    /// Stops handing out work and drops what is queued.
    pub(crate) fn close(&self) {
        let mut s = self.state();
        s.closed = true;
        s.first.clear();
        s.order.clear();
        s.pending.clear();
        drop(s);
        self.notify.notify_waiters();
    }

    /// Entries waiting (not running).
    pub(crate) fn len(&self) -> usize {
        self.state().pending.len()
    }

    /// Keys held: in the lanes, pending, running.
    #[cfg(feature = "testing")]
    pub(crate) fn remembered(&self) -> usize {
        let s = self.state();
        s.first.len() + s.order.len() + s.pending.len() + s.running.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(name: &str, version: &str) -> Work {
        Work {
            key: Key::new(0, "ns", name),
            version: version.into(),
        }
    }

    #[tokio::test]
    async fn pending_entry_coalesces_and_keeps_the_newest_decision() {
        let q = WorkQueue::default();
        assert!(q.push(work("a", "1")));
        assert!(!q.push(work("a", "2")));
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop().await, Some(work("a", "2")));
    }

    #[tokio::test]
    async fn running_entry_is_not_queued_again_until_done() {
        let q = WorkQueue::default();
        q.push(work("a", "1"));
        let w = q.pop().await.unwrap();
        assert!(!q.push(work("a", "2")));
        q.done(&w.key);
        assert!(q.push(work("a", "3")));
    }

    #[tokio::test]
    async fn entries_queued_first_are_handed_out_before_the_rest_in_order() {
        let q = WorkQueue::default();
        q.push(work("healthy", "1"));
        assert!(q.push_first(work("resumed-a", "1")));
        q.push_first(work("resumed-b", "1"));
        // Already pending: it keeps its place rather than jumping ahead.
        assert!(!q.push_first(work("healthy", "2")));
        let mut names = Vec::new();
        for _ in 0..3 {
            names.push(q.pop().await.unwrap().key.name().to_string());
        }
        assert_eq!(names, ["resumed-a", "resumed-b", "healthy"]);
        assert_eq!(q.len(), 0);
    }

    #[tokio::test]
    async fn a_forgotten_entry_is_never_handed_out() {
        let q = WorkQueue::default();
        q.push(work("gone", "1"));
        q.push(work("b", "1"));
        q.forget(&Key::new(0, "ns", "gone"));
        assert_eq!(q.pop().await.unwrap().key.name(), "b");
        assert_eq!(q.len(), 0);
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
        assert!(!q.push(work("b", "1")));
        assert_eq!(q.len(), 0);
    }
}
