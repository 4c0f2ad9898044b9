//! The timer queue: when each resource should be looked at next.
//!
//! Modelled on kube-runtime's `scheduler.rs`: one entry per key, and when a
//! key is scheduled twice the earlier time wins. Times are the controller's
//! clock (milliseconds), not tokio's, so a fake clock drives it in tests;
//! the dispatch loop turns the earliest time into a sleep.
//!
//! A timer is only a hint: when it fires, the cache decides whether the
//! resource is really due (a later version may have moved its time), so an
//! early or stale timer costs a lookup, never a reconcile.

use super::key::Key;
use std::collections::{BTreeSet, HashMap};

#[derive(Default)]
pub(crate) struct Scheduler {
    /// Key -> its time; the source of truth for `order`.
    at: HashMap<Key, u64>,
    order: BTreeSet<(u64, Key)>,
}

impl Scheduler {
    /// Fires `key` at `at_ms`, unless it is already set to fire earlier.
    /// Returns true when the earliest time of the whole queue may have
    /// moved earlier (the dispatch loop should re-arm its sleep).
    pub(crate) fn schedule(&mut self, key: Key, at_ms: u64) -> bool {
        match self.at.get(&key) {
            Some(&current) if current <= at_ms => return false,
            Some(&current) => {
                self.order.remove(&(current, key.clone()));
            }
            None => {}
        }
        self.at.insert(key.clone(), at_ms);
        self.order.insert((at_ms, key));
        true
    }

    /// Drops `key`'s timer, if any.
    pub(crate) fn cancel(&mut self, key: &Key) {
        if let Some(at) = self.at.remove(key) {
            self.order.remove(&(at, key.clone()));
        }
    }

    /// The earliest time set, if any.
    pub(crate) fn next_ms(&self) -> Option<u64> {
        self.order.first().map(|(at, _)| *at)
    }

    /// Removes and returns every key whose time is at or before `now_ms`,
    /// earliest first.
    pub(crate) fn pop_due(&mut self, now_ms: u64) -> Vec<Key> {
        let mut due = Vec::new();
        while let Some((at, _)) = self.order.first() {
            if *at > now_ms {
                break;
            }
            let Some((_, key)) = self.order.pop_first() else {
                break;
            };
            self.at.remove(&key);
            due.push(key);
        }
        due
    }

    /// Timers set.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.at.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Key {
        Key::new(0, "ns", name)
    }

    #[test]
    fn the_earlier_time_wins_and_a_key_fires_once() {
        let mut s = Scheduler::default();
        assert!(s.schedule(key("a"), 500));
        assert!(s.schedule(key("a"), 100));
        assert!(!s.schedule(key("a"), 300));
        assert_eq!(s.len(), 1);
        assert_eq!(s.next_ms(), Some(100));
        assert_eq!(s.pop_due(99), Vec::<Key>::new());
        assert_eq!(s.pop_due(100), vec![key("a")]);
        assert_eq!(s.pop_due(1_000), Vec::<Key>::new());
    }

    #[test]
    fn due_keys_come_out_earliest_first_and_later_ones_stay() {
        let mut s = Scheduler::default();
        s.schedule(key("late"), 300);
        s.schedule(key("b"), 200);
        s.schedule(key("a"), 100);
        assert_eq!(s.pop_due(250), vec![key("a"), key("b")]);
        assert_eq!(s.next_ms(), Some(300));
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn a_cancelled_key_never_fires() {
        let mut s = Scheduler::default();
        s.schedule(key("a"), 100);
        s.cancel(&key("a"));
        assert_eq!(s.next_ms(), None);
        assert!(s.pop_due(u64::MAX).is_empty());
        // Scheduling again after a cancel starts afresh.
        assert!(s.schedule(key("a"), 900));
        assert_eq!(s.next_ms(), Some(900));
    }

    #[test]
    fn clones_and_equal_keys_built_apart_share_one_timer_and_the_earliest_wins() {
        let mut s = Scheduler::default();
        let shared = key("a");
        assert!(s.schedule(shared.clone(), 500));
        assert!(s.schedule(key("a"), 200), "built apart, still the same timer");
        assert!(!s.schedule(shared.clone(), 300));
        s.schedule(key("b"), 250);
        assert_eq!(s.len(), 2);
        assert_eq!(s.pop_due(200), vec![shared.clone()]);
        assert!(s.schedule(shared, 900));
        s.cancel(&key("a"));
        assert_eq!(s.pop_due(u64::MAX), vec![key("b")]);
    }

    #[test]
    fn a_later_time_for_a_fired_key_is_kept() {
        let mut s = Scheduler::default();
        s.schedule(key("a"), 100);
        s.pop_due(100);
        assert!(s.schedule(key("a"), 60_100));
        assert_eq!(s.next_ms(), Some(60_100));
    }
}
