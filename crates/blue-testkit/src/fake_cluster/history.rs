//! The store's bounded change history: what watches replay and what
//! continued list pages are served from, like etcd's MVCC window.

use serde_json::Value;
use std::collections::VecDeque;
use tokio::sync::watch;

/// (group, plural, namespace, name): sorting by it lists a namespace by name.
pub(crate) type Key = (String, String, String, String);

/// How many changes are kept unless told otherwise.
pub(crate) const DEFAULT_HISTORY_LIMIT: usize = 1_000;

/// What a write did to an object, as a watch reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One write of one object.
#[derive(Clone, Debug)]
pub(crate) struct Change {
    /// The cluster revision this write produced.
    pub(crate) revision: u64,
    pub(crate) key: Key,
    pub(crate) kind: ChangeKind,
    /// The object as written (for a deletion: its last state, with the
    /// deletion's resourceVersion).
    pub(crate) object: Value,
    /// The object before the write; `None` for a creation. Lets a list page
    /// be served as of an older revision.
    pub(crate) previous: Option<Value>,
}

#[derive(Debug)]
pub(crate) struct History {
    changes: VecDeque<Change>,
    limit: usize,
    /// Changes up to and including this revision are forgotten: a watch or
    /// a continue token from an older revision is `Gone`.
    compacted: u64,
    /// Rung on every change and every watch control action: open watch
    /// streams wait on it.
    bell: watch::Sender<u64>,
}

impl Default for History {
    fn default() -> Self {
        Self {
            changes: VecDeque::new(),
            limit: DEFAULT_HISTORY_LIMIT,
            compacted: 0,
            bell: watch::channel(0).0,
        }
    }
}

impl History {
    pub(crate) fn push(&mut self, change: Change) {
        self.changes.push_back(change);
        self.trim();
        self.ring();
    }

    /// Wakes every open watch stream to look again.
    pub(crate) fn ring(&self) {
        self.bell.send_modify(|rings| *rings += 1);
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.bell.subscribe()
    }

    fn trim(&mut self) {
        while self.changes.len() > self.limit {
            if let Some(oldest) = self.changes.pop_front() {
                self.compacted = oldest.revision;
            }
        }
    }

    pub(crate) fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
        self.trim();
        self.ring();
    }

    /// Forgets every change up to and including `revision`.
    pub(crate) fn compact(&mut self, revision: u64) {
        while self.changes.front().is_some_and(|c| c.revision <= revision) {
            self.changes.pop_front();
        }
        self.compacted = self.compacted.max(revision);
        self.ring();
    }

    /// Whether every change after `revision` is still known.
    pub(crate) fn covers(&self, revision: u64) -> bool {
        revision >= self.compacted
    }

    /// The changes after `revision`, oldest first.
    pub(crate) fn after(&self, revision: u64) -> impl DoubleEndedIterator<Item = &Change> {
        // Revisions increase along the queue.
        let start = self.changes.partition_point(|c| c.revision <= revision);
        self.changes.range(start..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(revision: u64) -> Change {
        Change {
            revision,
            key: Default::default(),
            kind: ChangeKind::Modified,
            object: Value::Null,
            previous: None,
        }
    }

    #[test]
    fn the_oldest_changes_go_first_and_mark_the_window() {
        let mut history = History::default();
        history.set_limit(2);
        for revision in 1..=3 {
            history.push(change(revision));
        }
        assert!(!history.covers(0));
        assert!(history.covers(1));
        let after: Vec<u64> = history.after(1).map(|c| c.revision).collect();
        assert_eq!(after, [2, 3]);
        history.compact(2);
        assert!(!history.covers(1));
        assert_eq!(history.after(0).count(), 1);
    }
}
