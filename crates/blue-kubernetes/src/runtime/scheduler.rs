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
//!
//! The times are kept in a binary heap, one contiguous allocation, rather
//! than a `BTreeSet`, whose node per few timers would be allocated while a
//! list decodes its pages and keep the freed page memory around it
//! resident (see [`Key`]). A heap cannot remove an entry in place, so one
//! whose key was moved earlier, cancelled or fired stays behind as stale:
//! skipped when it surfaces, and dropped in bulk once stale entries
//! outnumber live ones.

use super::key::Key;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// Stale entries tolerated beyond the live ones before the heap is rebuilt.
const STALE_SLACK: usize = 64;

/// Timer coalescing ([`Config::timer_slack_ms`](crate::Config::timer_slack_ms)
/// says what and why): a timer set at `now` for `at` fires at the first
/// multiple of a step at or after `at`, the step being the slack halved
/// until it is at most a tenth of the wait. The steps are the wall
/// clock's, so several replicas line up as well.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slack(pub(crate) u64);

impl Slack {
    /// When a timer set at `now_ms` for `at_ms` fires.
    pub(crate) fn fires_at(self, now_ms: u64, at_ms: u64) -> u64 {
        let tenth = at_ms.saturating_sub(now_ms) / 10;
        let mut step = self.0;
        while step > tenth {
            step /= 2;
        }
        match step {
            0 => at_ms,
            step => at_ms.div_ceil(step).saturating_mul(step),
        }
    }
}

#[derive(Default)]
pub(crate) struct Scheduler {
    /// Key -> its time: the truth; an entry of `order` not matching it is
    /// stale.
    at: HashMap<Key, u64>,
    /// Earliest on top, which is never stale.
    order: BinaryHeap<Reverse<(u64, Key)>>,
}

impl Scheduler {
    /// Fires `key` at `at_ms`, unless it is already set to fire earlier.
    /// Returns true when the earliest time of the whole queue may have
    /// moved earlier (the dispatch loop should re-arm its sleep).
    pub(crate) fn schedule(&mut self, key: Key, at_ms: u64) -> bool {
        if self.at.get(&key).is_some_and(|&current| current <= at_ms) {
            return false;
        }
        // The entry at the old time, if any, is stale from now on; the new
        // one is earlier, so the top stays live.
        self.at.insert(key.clone(), at_ms);
        self.order.push(Reverse((at_ms, key)));
        self.compact();
        true
    }

    /// Drops `key`'s timer, if any.
    pub(crate) fn cancel(&mut self, key: &Key) {
        if self.at.remove(key).is_some() {
            self.drop_stale_top();
            self.compact();
        }
    }

    /// The earliest time set, if any.
    pub(crate) fn next_ms(&self) -> Option<u64> {
        self.order.peek().map(|Reverse((at, _))| *at)
    }

    /// Removes and returns every key whose time is at or before `now_ms`,
    /// earliest first.
    pub(crate) fn pop_due(&mut self, now_ms: u64) -> Vec<Key> {
        let mut due = Vec::new();
        while self.next_ms().is_some_and(|at| at <= now_ms) {
            let Some(Reverse((at, key))) = self.order.pop() else {
                break;
            };
            if self.is_live(&key, at) {
                self.at.remove(&key);
                due.push(key);
            }
        }
        self.drop_stale_top();
        self.compact();
        due
    }

    fn is_live(&self, key: &Key, at_ms: u64) -> bool {
        self.at.get(key) == Some(&at_ms)
    }

    fn drop_stale_top(&mut self) {
        while let Some(Reverse((at, key))) = self.order.peek() {
            if self.is_live(key, *at) {
                break;
            }
            self.order.pop();
        }
    }

    /// Rebuilds the heap from the live times once stale entries outnumber
    /// them: each rebuild follows at least as many operations as it costs.
    fn compact(&mut self) {
        if self.order.len() > 2 * self.at.len() + STALE_SLACK {
            self.order = self
                .at
                .iter()
                .map(|(key, at)| Reverse((*at, key.clone())))
                .collect();
        }
    }

    /// Timers set.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn len(&self) -> usize {
        self.at.len()
    }

    /// Entries in the heap, stale ones included.
    #[cfg(test)]
    fn entries(&self) -> usize {
        self.order.len()
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
        assert!(
            s.schedule(key("a"), 200),
            "built apart, still the same timer"
        );
        assert!(!s.schedule(shared.clone(), 300));
        s.schedule(key("b"), 250);
        assert_eq!(s.len(), 2);
        assert_eq!(s.pop_due(200), vec![shared.clone()]);
        assert!(s.schedule(shared, 900));
        s.cancel(&key("a"));
        assert_eq!(s.pop_due(u64::MAX), vec![key("b")]);
    }

    #[test]
    fn stale_entries_never_fire_and_do_not_pile_up() {
        let mut s = Scheduler::default();
        s.schedule(key("stays"), 1_000_000);
        for i in 0..10_000u64 {
            s.schedule(key("moved"), 500_000 - i);
            s.schedule(key("cancelled"), 10 + i);
            s.cancel(&key("cancelled"));
        }
        assert!(s.entries() <= 2 * s.len() + STALE_SLACK, "{}", s.entries());
        assert_eq!(s.next_ms(), Some(490_001));
        assert_eq!(s.pop_due(u64::MAX), vec![key("moved"), key("stays")]);
        assert_eq!(s.entries(), 0);
    }

    #[test]
    fn a_key_cancelled_and_set_again_at_the_same_time_fires_once() {
        let mut s = Scheduler::default();
        s.schedule(key("b"), 50);
        s.schedule(key("a"), 100);
        s.cancel(&key("a"));
        s.schedule(key("a"), 100);
        assert_eq!(s.pop_due(100), vec![key("b"), key("a")]);
        assert!(s.schedule(key("a"), 100), "fired: set afresh");
        assert_eq!(s.pop_due(100), vec![key("a")]);
        assert_eq!(s.next_ms(), None);
    }

    #[test]
    fn timers_due_within_one_step_fire_together_and_never_early() {
        let slack = Slack(200);
        let now = 0;
        let mut s = Scheduler::default();
        for (name, at) in [("a", 10_001), ("b", 10_150), ("c", 10_200), ("d", 10_201)] {
            s.schedule(key(name), slack.fires_at(now, at));
        }
        assert_eq!(s.next_ms(), Some(10_200));
        assert!(s.pop_due(10_199).is_empty(), "none early");
        assert_eq!(s.pop_due(10_200), vec![key("a"), key("b"), key("c")]);
        assert_eq!(s.next_ms(), Some(10_400));
    }

    #[test]
    fn the_slack_is_at_most_a_tenth_of_the_wait_and_zero_means_on_time() {
        let slack = Slack(200);
        assert_eq!(
            slack.fires_at(0, 10_001),
            10_200,
            "a tenth is 1 s: the whole slack"
        );
        assert_eq!(slack.fires_at(10_000, 10_251), 10_275, "a tenth is 25 ms");
        assert_eq!(slack.fires_at(10_000, 10_005), 10_005, "too close to round");
        assert_eq!(slack.fires_at(20_000, 10_001), 10_001, "already due");
        assert_eq!(Slack(0).fires_at(0, 10_001), 10_001);
        assert_eq!(slack.fires_at(0, u64::MAX - 1), u64::MAX, "saturates");
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
