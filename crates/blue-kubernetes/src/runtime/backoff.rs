//! Backoff for passes that could not write: in memory, per object (uid).
//!
//! A failed callback is recorded in status with its retry time, but a
//! failed status or finalizer write (Forbidden, the API server down) cannot
//! record anything, so without this the object would be due, and retried,
//! on every poll. Same doubling as callback retries; a successful write or
//! an edit (new generation or request token) resets it. A conflict is not a
//! failure: the resource is read and checked again at once.

use super::book::protocol::{Ended, Settings};
use crate::domain::due::backoff_ms;
use crate::domain::resource;
use crate::telemetry::Verdict;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;

struct Entry {
    /// Desired state when the failure happened: generation, request token
    /// (`None` when the object could not even be read).
    edit: Option<(i64, String)>,
    attempts: u32,
    until_ms: u64,
}

pub(crate) struct WriteBackoff {
    entries: HashMap<String, Entry>,
    /// The controller's request annotation: a new token is an edit.
    request_annotation: String,
}

impl WriteBackoff {
    /// Records how a pass went (`uid`: the resource's, when known);
    /// returns the hold for the version it started from: `None` until a
    /// newer version.
    pub(super) fn settle(
        &mut self,
        ended: &Ended,
        uid: Option<&str>,
        s: Settings,
        now: u64,
    ) -> Option<u64> {
        let delay = match (&ended.verdict, &ended.started_from) {
            (Verdict::Wrote | Verdict::WroteFailed, object) => {
                if let Some(object) = object {
                    self.succeeded(object);
                }
                return None;
            }
            (Verdict::Skipped, _) => return None,
            (Verdict::Busy, _) => s.poll_ms,
            (Verdict::Conflict, _) => 0,
            (Verdict::Broke(_), Some(object)) => {
                let failed = self.failed(object, now, s.retry_base_ms, s.retry_max_ms);
                failed.unwrap_or(s.retry_base_ms)
            }
            (Verdict::Broke(_), None) => match uid {
                Some(uid) => {
                    let (base, max) = (s.retry_base_ms, s.retry_max_ms);
                    self.failed_read(uid, now, base, max)
                }
                None => s.retry_base_ms,
            },
        };
        Some(now.saturating_add(delay))
    }

    pub(crate) fn new(request_annotation: &str) -> Self {
        Self {
            entries: HashMap::new(),
            request_annotation: request_annotation.to_string(),
        }
    }

    fn edit_of(&self, r: &Value) -> (i64, String) {
        (
            resource::generation(r),
            resource::request_token(r, &self.request_annotation).to_string(),
        )
    }

    /// True while `listed` waits out a backoff. An edit ends the wait.
    pub(crate) fn waiting(&mut self, listed: &Value, now_ms: u64) -> bool {
        let Some(uid) = resource::uid(listed) else {
            return false;
        };
        let edit = self.edit_of(listed);
        let entries = &mut self.entries;
        match entries.get(uid) {
            Some(e) if e.edit.as_ref().is_some_and(|stored| *stored != edit) => {
                entries.remove(uid);
                false
            }
            Some(e) => now_ms < e.until_ms,
            None => false,
        }
    }

    /// An edit of `object` (new generation or request token) ends its wait.
    pub(crate) fn forget_if_edited(&mut self, object: &Value, now_ms: u64) {
        // `waiting` forgets an entry whose edit no longer matches.
        let _ = self.waiting(object, now_ms);
    }

    /// Records a failed pass over `snapshot`; returns the delay chosen.
    pub(crate) fn failed(
        &mut self,
        snapshot: &Value,
        now_ms: u64,
        base_ms: u64,
        max_ms: u64,
    ) -> Option<u64> {
        let uid = resource::uid(snapshot)?;
        Some(self.record(uid, Some(self.edit_of(snapshot)), now_ms, base_ms, max_ms))
    }

    /// Records a failed read of object `uid`; returns the delay chosen.
    pub(crate) fn failed_read(&mut self, uid: &str, now_ms: u64, base_ms: u64, max_ms: u64) -> u64 {
        self.record(uid, None, now_ms, base_ms, max_ms)
    }

    fn record(
        &mut self,
        uid: &str,
        edit: Option<(i64, String)>,
        now_ms: u64,
        base_ms: u64,
        max_ms: u64,
    ) -> u64 {
        let entries = &mut self.entries;
        let attempts = match entries.get(uid) {
            Some(e) if e.edit.is_none() || edit.is_none() || e.edit == edit => {
                e.attempts.saturating_add(1)
            }
            _ => 1,
        };
        let delay = backoff_ms(attempts, base_ms, max_ms);
        entries.insert(
            uid.to_string(),
            Entry {
                edit,
                attempts,
                until_ms: now_ms.saturating_add(delay),
            },
        );
        delay
    }

    /// A write succeeded: no more waiting.
    pub(crate) fn succeeded(&mut self, snapshot: &Value) {
        if let Some(uid) = resource::uid(snapshot) {
            self.entries.remove(uid);
        }
    }

    /// Until when object `uid` waits, if it does.
    pub(crate) fn until(&self, uid: &str) -> Option<u64> {
        self.entries.get(uid).map(|e| e.until_ms)
    }

    /// Forgets a deleted object.
    pub(crate) fn forget(&mut self, uid: &str) {
        self.entries.remove(uid);
    }

    #[cfg(feature = "testing")]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Backoff for a package type whose list fails (Forbidden, the API server
/// down): the same doubling, reset by the first list that succeeds, so a
/// missing `list` permission costs one request per minute, not one per poll.
#[derive(Default)]
pub(crate) struct ListBackoff {
    /// Package index -> (failed attempts, waiting until).
    entries: Mutex<HashMap<usize, (u32, u64)>>,
}

impl ListBackoff {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<usize, (u32, u64)>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn waiting(&self, package: usize, now_ms: u64) -> bool {
        self.entries()
            .get(&package)
            .is_some_and(|(_, until)| now_ms < *until)
    }

    pub(crate) fn failed(&self, package: usize, now_ms: u64, base_ms: u64, max_ms: u64) -> u64 {
        let mut entries = self.entries();
        let attempts = entries
            .get(&package)
            .map_or(1, |(a, _)| a.saturating_add(1));
        let delay = backoff_ms(attempts, base_ms, max_ms);
        entries.insert(package, (attempts, now_ms.saturating_add(delay)));
        delay
    }

    pub(crate) fn succeeded(&self, package: usize) {
        self.entries().remove(&package);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(generation: i64) -> Value {
        json!({"metadata": {"uid": "u1", "generation": generation}})
    }

    #[test]
    fn failures_double_the_wait_up_to_the_maximum() {
        let mut b = WriteBackoff::new(crate::config::REQUEST_ANNOTATION);
        let delays: Vec<_> = (0..8)
            .map(|_| b.failed(&object(1), 0, 1000, 60_000).unwrap())
            .collect();
        assert_eq!(delays, [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]);
    }

    #[test]
    fn waiting_ends_when_the_delay_passes() {
        let mut b = WriteBackoff::new(crate::config::REQUEST_ANNOTATION);
        b.failed(&object(1), 10_000, 1000, 60_000);
        assert!(b.waiting(&object(1), 10_999));
        assert!(!b.waiting(&object(1), 11_000));
    }

    #[test]
    fn an_edit_or_a_successful_write_resets_the_backoff() {
        let mut b = WriteBackoff::new(crate::config::REQUEST_ANNOTATION);
        for _ in 0..5 {
            b.failed(&object(1), 0, 1000, 60_000);
        }
        assert!(!b.waiting(&object(2), 1), "edited: due at once");
        assert_eq!(b.failed(&object(2), 0, 1000, 60_000), Some(1000));
        b.succeeded(&object(2));
        assert!(!b.waiting(&object(2), 1));
        assert_eq!(b.failed(&object(2), 0, 1000, 60_000), Some(1000));
    }

    #[test]
    fn failing_lists_wait_doubling_delays_until_one_succeeds() {
        let b = ListBackoff::default();
        assert_eq!(b.failed(0, 0, 1000, 60_000), 1000);
        assert_eq!(b.failed(0, 1000, 1000, 60_000), 2000);
        assert!(b.waiting(0, 2999));
        assert!(!b.waiting(0, 3000));
        assert!(!b.waiting(1, 0), "other types list as usual");
        b.succeeded(0);
        assert!(!b.waiting(0, 1001));
        assert_eq!(b.failed(0, 0, 1000, 60_000), 1000);
    }

    #[test]
    fn objects_without_uid_are_not_tracked_and_deleted_ones_are_forgotten() {
        let mut b = WriteBackoff::new(crate::config::REQUEST_ANNOTATION);
        assert_eq!(b.failed(&json!({}), 0, 1000, 60_000), None);
        b.failed(&object(1), 0, 1000, 60_000);
        assert_eq!(b.until("u1"), Some(1000));
        b.forget("u1");
        assert!(!b.waiting(&object(1), 1));
        assert_eq!(b.until("u1"), None);
    }

    #[test]
    fn failed_reads_double_too_and_no_edit_ends_them() {
        let mut b = WriteBackoff::new(crate::config::REQUEST_ANNOTATION);
        assert_eq!(b.failed_read("u1", 0, 1000, 60_000), 1000);
        assert_eq!(b.failed_read("u1", 0, 1000, 60_000), 2000);
        assert!(
            b.waiting(&object(7), 1_999),
            "an unread object has no edit to compare"
        );
        assert_eq!(b.failed(&object(7), 0, 1000, 60_000), Some(4000));
    }
}
