//! The cache's due rules, holds and copies, one behaviour each.

use super::entry::slot_label;
use super::*;
use crate::domain::due;
use serde_json::json;

fn key() -> Key {
    Key::new(0, "ns", "a")
}

fn at(version: &str, phase: &str) -> Value {
    json!({"metadata": {"uid": "u", "resourceVersion": version}, "status": {"phase": phase}})
}

const NO_BACKOFF: fn(&str) -> Option<u64> = |_| None;

fn stored(at_ms: u64) -> Due {
    Due::Stored {
        at_ms,
        period_ms: 60_000,
    }
}

#[test]
fn cached_keys_share_one_namespace_and_fresh_keys_find_them() {
    let mut c = Cache::default();
    let (a, _) = c.record(key(), &at("1", "Pending"), Due::Now, true, 0);
    let (b, _) = c.record(
        Key::new(0, "ns", "b"),
        &at("1", "Pending"),
        Due::OnEdit,
        true,
        0,
    );
    assert!(a.shares_namespace_with(&b));
    let (again, _) = c.record(key(), &at("2", "Ready"), Due::OnEdit, false, 0);
    assert!(
        again.shares_namespace_with(&b),
        "the cached key, not the fresh one"
    );
    assert_eq!(c.version(&key()).as_deref(), Some("2"));
    assert_eq!(c.len(), 2);
}

#[test]
fn uids_and_versions_read_back_as_observed() {
    let mut c = Cache::default();
    let uid = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
    let object = json!({"metadata": {"uid": uid, "resourceVersion": "0042"}});
    c.record(key(), &object, Due::Now, true, 0);
    assert_eq!(c.uid(&key()).as_deref(), Some(uid));
    assert_eq!(c.version(&key()).as_deref(), Some("0042"));
    c.hold(&key(), "42", None);
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(0), "42 is not 0042");
    let backoff = |u: &str| (u == uid).then_some(700);
    assert_eq!(c.ready_at(&key(), backoff), Some(700));
}

#[test]
fn a_hold_lasts_until_a_newer_version_arrives() {
    let mut c = Cache::default();
    c.record(key(), &at("1", "Pending"), Due::Now, true, 0);
    c.hold(&key(), "1", None);
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), None);
    c.record(key(), &at("1", "Pending"), Due::Now, true, 0);
    assert_eq!(
        c.ready_at(&key(), NO_BACKOFF),
        None,
        "a relist of the same version"
    );
    c.record(key(), &at("2", "Ready"), stored(60_000), true, 0);
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(60_000));
}

#[test]
fn a_timed_hold_and_a_backoff_push_the_due_time_back() {
    let mut c = Cache::default();
    c.record(key(), &at("1", "Pending"), stored(100), true, 0);
    c.hold(&key(), "1", Some(500));
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(500));
    assert_eq!(c.ready_at(&key(), |_| Some(9_000)), Some(9_000));
    c.record(key(), &at("1", "Pending"), Due::OnEdit, true, 0);
    assert_eq!(
        c.ready_at(&key(), NO_BACKOFF),
        None,
        "only a change makes it due"
    );
}

#[test]
fn a_hold_on_an_older_version_than_cached_is_ignored() {
    let mut c = Cache::default();
    c.record(key(), &at("2", "Pending"), Due::Now, true, 0);
    c.hold(&key(), "1", None);
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(0));
}

#[test]
fn phases_are_counted_per_package_and_follow_changes_and_removals() {
    let mut c = Cache::default();
    let ready = Phase::ALL.iter().position(|p| *p == Phase::Ready).unwrap() as u8 + 1;
    c.record(key(), &at("1", "Ready"), Due::OnEdit, true, 0);
    c.record(
        Key::new(0, "ns", "b"),
        &at("1", "Ready"),
        Due::OnEdit,
        true,
        0,
    );
    c.record(
        Key::new(1, "ns", "a"),
        &at("1", "Ready"),
        Due::OnEdit,
        true,
        0,
    );
    assert_eq!(c.count(0, ready), 2);
    c.record(key(), &at("2", "Bogus"), Due::OnEdit, true, 0);
    assert_eq!(c.count(0, ready), 1, "unknown text is not counted");
    c.remove(&Key::new(0, "ns", "b"));
    assert_eq!(c.count(0, ready), 0);
    assert_eq!(c.count(1, ready), 1);
    assert_eq!(slot_label(0), "None");
    assert_eq!(slot_label(ready), "Ready");
}

#[test]
fn keys_missing_from_a_list_are_found_within_its_scope_only() {
    let mut c = Cache::default();
    for (ns, name) in [("a", "x"), ("a", "y"), ("b", "z")] {
        c.record(
            Key::new(0, ns, name),
            &at("1", "Ready"),
            Due::OnEdit,
            true,
            0,
        );
    }
    let listed: HashSet<Key> = [Key::new(0, "a", "x")].into();
    assert_eq!(c.missing_from(0, "a", &listed), vec![Key::new(0, "a", "y")]);
    let mut all = c.missing_from(0, "", &listed);
    all.sort();
    assert_eq!(all.len(), 2);
    assert!(c.missing_from(1, "", &listed).is_empty());
}

#[test]
fn versions_before_our_last_write_decide_nothing_until_it_arrives() {
    let mut c = Cache::default();
    c.record(key(), &at("1", "Pending"), Due::Now, true, 0);
    c.await_version(&key(), "3");
    c.record(key(), &at("2", "Reconciling"), Due::Now, true, 0);
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), None, "our own publish");
    c.record(key(), &at("3", "Ready"), stored(60_000), true, 0);
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(60_000));
    c.record(key(), &at("4", "Ready"), Due::Now, true, 0);
    assert_eq!(
        c.ready_at(&key(), NO_BACKOFF),
        Some(0),
        "someone's edit after it"
    );
}

#[test]
fn the_process_schedule_decides_once_set_and_a_later_stored_time_moves_it() {
    let mut c = Cache::default();
    c.record(key(), &at("1", "Ready"), stored(60_000), true, 0);
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(60_000), "first seen");
    c.schedule(&key(), 130_000);
    c.record(key(), &at("1", "Ready"), stored(60_000), false, 70_000);
    assert_eq!(
        c.ready_at(&key(), NO_BACKOFF),
        Some(130_000),
        "a quiet check left the stored time behind"
    );
    c.record(key(), &at("2", "Ready"), stored(200_000), true, 80_000);
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(200_000));
    c.record(key(), &at("3", "Ready"), Due::Now, true, 90_000);
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(90_000), "an edit");
}

#[test]
fn a_stored_time_already_passed_when_first_seen_is_spread_by_the_uid() {
    let mut c = Cache::default();
    c.record(key(), &at("1", "Ready"), stored(1_000), true, 500_000);
    let spread = due::extra_ms(60_000, "u");
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(500_000 + spread));
}

#[test]
fn a_repair_outranks_a_check_asked_for_before_or_after_it() {
    let mut c = Cache::default();
    c.record(key(), &at("1", "Ready"), stored(60_000), true, 0);
    c.request(&key(), Request::Repair);
    c.request(&key(), Request::Check);
    assert_eq!(c.take_request(&key()), Request::Repair);
    c.request(&key(), Request::Check);
    c.request(&key(), Request::Repair);
    assert_eq!(c.take_request(&key()), Request::Repair);
}

#[test]
fn a_request_makes_it_due_now_past_holds_once_our_write_arrived_but_not_past_backoff() {
    let mut c = Cache::default();
    assert!(!c.request(&key(), Request::Check), "not cached");
    c.record(key(), &at("1", "Ready"), stored(60_000), true, 0);
    c.await_version(&key(), "2");
    assert!(c.request(&key(), Request::Check));
    assert_eq!(
        c.ready_at(&key(), NO_BACKOFF),
        None,
        "our write is on its way"
    );
    c.record(key(), &at("2", "Ready"), stored(60_000), true, 0);
    c.hold(&key(), "2", None);
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(0));
    assert_eq!(c.ready_at(&key(), |_| Some(700)), Some(700));
    assert_eq!(c.take_request(&key()), Request::Check);
    assert_eq!(c.take_request(&key()), Request::None, "taken once");
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), None, "the hold again");
    c.request(&key(), Request::Check);
    c.hold(&key(), "2", Some(300));
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(300), "a busy lock");
}

#[test]
fn an_edit_watched_after_our_write_within_the_pass_decides_at_once() {
    let mut c = Cache::default();
    c.record(key(), &at("1", "Pending"), Due::Now, true, 0);
    c.begin_pass(&key());
    c.record(key(), &at("2", "Reconciling"), Due::Now, true, 0);
    c.record(key(), &at("3", "Ready"), stored(60_000), true, 0);
    // Someone's edit arrives before the pass has ended.
    c.record(key(), &at("4", "Ready"), Due::Now, true, 0);
    c.end_pass(&key(), Some("3"));
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(0), "the edit");
    // Not yet watched when the pass ended: awaited as before.
    c.begin_pass(&key());
    c.end_pass(&key(), Some("6"));
    c.record(key(), &at("5", "Reconciling"), Due::Now, true, 0);
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), None, "our own publish");
    assert!(c.passes.is_empty(), "nothing kept after a pass");
}

#[test]
fn a_list_ends_the_wait_for_a_written_version() {
    let mut c = Cache::default();
    c.record(key(), &at("1", "Pending"), Due::Now, true, 0);
    c.await_version(&key(), "3");
    c.record(key(), &at("5", "Pending"), Due::Now, false, 0);
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(0));
    c.await_version(&key(), "5");
    assert_eq!(c.ready_at(&key(), NO_BACKOFF), Some(0), "already cached");
}
