//! What the Event recorder remembers: each series for aggregation, each
//! object's token bucket, and the progress Events waiting in the outbox
//! that a later Event of their object supersedes.

use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// Events one object may write in a burst.
pub(crate) const BURST: u32 = 10;
/// One more Event per object may be written after this long.
pub(crate) const REFILL_MS: u64 = 60_000;
/// Series remembered for aggregation; the oldest is forgotten beyond this.
pub(super) const MAX_SERIES: usize = 1024;
/// Objects whose token buckets are remembered; full buckets go first.
const MAX_BUCKETS: usize = 4096;
/// `Normal` or `Warning`, as `kubectl describe` shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum EventType {
    Normal,
    Warning,
}

impl EventType {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// (object uid, type, reason): repeats of one series raise its count.
pub(super) type SeriesKey = (String, EventType, String);

pub(super) struct Series {
    pub(super) count: u64,
    /// The Event as stored, once written.
    pub(super) stored: Option<Value>,
    pub(super) first_ms: u64,
    pub(super) last_ms: u64,
}

pub(super) struct Bucket {
    pub(super) tokens: u32,
    pub(super) refilled_ms: u64,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) series: HashMap<SeriesKey, Series>,
    pub(super) buckets: HashMap<String, Bucket>,
    pub(super) sequence: u64,
    /// Object uid -> the sequence and reason of its Normal progress Event
    /// while it waits in the outbox (not yet taken by the writer).
    pub(super) queued_progress: HashMap<String, (u64, &'static str)>,
    /// Sequences of queued Events the writer skips: a progress Event with
    /// its object's outcome queued behind it, or its object released.
    pub(super) superseded: HashSet<u64>,
}

/// The reasons of Normal Events that say work began: each waits in the
/// outbox, and its object's outcome queued behind it (or, for Deleting,
/// the object's release) replaces it.
const PROGRESS: [&str; 2] = ["Reconciling", "Deleting"];

/// `reason` as one of [`PROGRESS`], for a Normal Event.
pub(super) fn progress(kind: EventType, reason: &str) -> Option<&'static str> {
    let found = PROGRESS.iter().find(|p| **p == reason);
    found.copied().filter(|_| kind == EventType::Normal)
}

impl State {
    /// Event `sequence` of series `key` was admitted. A Normal progress
    /// one (Reconciling, Deleting) waits as its object's; any other Event
    /// of that object makes a progress Event still waiting superseded: the
    /// writer skips it, so the outcome is what `kubectl describe` shows, as
    /// aggregation would show the last occurrence, and a new resource costs
    /// one Event write fewer. Its count and token are given back, as if it
    /// had never been recorded.
    pub(super) fn supersede(&mut self, key: &SeriesKey, sequence: u64) {
        let (uid, kind, reason) = key;
        if let Some(reason) = progress(*kind, reason) {
            self.queued_progress.insert(uid.clone(), (sequence, reason));
            return;
        }
        self.supersede_waiting(uid);
    }

    /// The progress Event of object `uid` still waiting is skipped, its
    /// count and token given back.
    pub(super) fn supersede_waiting(&mut self, uid: &str) {
        let Some((waiting, reason)) = self.queued_progress.remove(uid) else {
            return;
        };
        self.superseded.insert(waiting);
        let progress = (uid.to_string(), EventType::Normal, reason.to_string());
        if let Some(series) = self.series.get_mut(&progress) {
            series.count = series.count.saturating_sub(1);
            if series.count == 0 && series.stored.is_none() {
                self.series.remove(&progress);
            }
        }
        if let Some(bucket) = self.buckets.get_mut(uid) {
            bucket.tokens = (bucket.tokens + 1).min(BURST);
        }
    }

    /// Object `uid` is released or gone: its series, its bucket and a
    /// progress Event of it still waiting go. An Event of it already
    /// queued is still written, as a new Event.
    pub(super) fn forget(&mut self, uid: &str) {
        self.supersede_waiting(uid);
        self.series.retain(|(of, _, _), _| of != uid);
        self.buckets.remove(uid);
    }

    /// The writer takes Event `sequence` of `key`: false when it was
    /// superseded. Once taken it can no longer be.
    pub(super) fn take(&mut self, key: &SeriesKey, sequence: u64) -> bool {
        if self.superseded.remove(&sequence) {
            return false;
        }
        if self.queued_progress.get(&key.0).map(|q| q.0) == Some(sequence) {
            self.queued_progress.remove(&key.0);
        }
        true
    }
}

/// Takes one of object `uid`'s tokens at `now`: false when it has none
/// left (its Event is dropped).
pub(super) fn take_token(buckets: &mut HashMap<String, Bucket>, uid: &str, now: u64) -> bool {
    if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(uid) {
        // A bucket refilled to the full burst is the same as none.
        let full_after = u64::from(BURST) * REFILL_MS;
        buckets.retain(|_, b| now.saturating_sub(b.refilled_ms) < full_after);
    }
    let bucket = buckets.entry(uid.to_string()).or_insert(Bucket {
        tokens: BURST,
        refilled_ms: now,
    });
    let earned = now.saturating_sub(bucket.refilled_ms) / REFILL_MS;
    if earned > 0 {
        bucket.tokens = BURST.min(bucket.tokens.saturating_add(earned as u32));
        bucket.refilled_ms += earned * REFILL_MS;
    }
    if bucket.tokens == 0 {
        return false;
    }
    bucket.tokens -= 1;
    true
}

/// Forgets the series written to longest ago.
pub(super) fn forget_oldest(series: &mut HashMap<SeriesKey, Series>) {
    if let Some(oldest) = series
        .iter()
        .min_by_key(|(_, s)| s.last_ms)
        .map(|(k, _)| k.clone())
    {
        series.remove(&oldest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forgetting_an_object_drops_its_series_bucket_and_waiting_event_only() {
        let mut state = State::default();
        let key = |uid: &str, reason: &str| (uid.to_string(), EventType::Normal, reason.into());
        for uid in ["gone", "kept"] {
            let series = Series {
                count: 1,
                stored: None,
                first_ms: 0,
                last_ms: 0,
            };
            state.series.insert(key(uid, "Ready"), series);
            assert!(take_token(&mut state.buckets, uid, 0));
        }
        state.supersede(&key("gone", "Reconciling"), 7);
        state.forget("gone");
        assert!(!state.take(&key("gone", "Reconciling"), 7), "not written");
        let series: Vec<_> = state.series.keys().map(|k| k.0.as_str()).collect();
        assert_eq!(series, ["kept"]);
        assert_eq!(state.buckets.keys().collect::<Vec<_>>(), ["kept"]);
    }

    #[test]
    fn a_bucket_allows_a_burst_then_one_event_per_refill_period() {
        let mut buckets = HashMap::new();
        let allowed = (0..BURST + 5)
            .filter(|_| take_token(&mut buckets, "u", 0))
            .count();
        assert_eq!(allowed, BURST as usize);
        assert!(!take_token(&mut buckets, "u", REFILL_MS - 1));
        assert!(take_token(&mut buckets, "u", REFILL_MS));
        assert!(!take_token(&mut buckets, "u", REFILL_MS + 1));
        assert!(
            take_token(&mut buckets, "other", 0),
            "buckets are per object"
        );
    }

    fn key(uid: &str, kind: EventType, reason: &str) -> SeriesKey {
        (uid.into(), kind, reason.into())
    }

    #[test]
    fn a_waiting_reconciling_is_superseded_by_its_objects_outcome_only() {
        let mut state = State::default();
        let reconciling = |uid| key(uid, EventType::Normal, "Reconciling");
        state.supersede(&reconciling("a"), 1);
        state.supersede(&reconciling("b"), 2);
        state.supersede(&key("a", EventType::Normal, "Converged"), 3);
        assert!(!state.take(&reconciling("a"), 1), "a's outcome came behind");
        assert!(state.take(&reconciling("b"), 2), "b's did not");
        assert!(state.take(&key("a", EventType::Normal, "Converged"), 3));
        // Taken, it can no longer be superseded.
        state.supersede(&key("b", EventType::Warning, "ExecutionFailed"), 4);
        assert!(state.superseded.is_empty());
        assert!(state.queued_progress.is_empty());
    }
}
