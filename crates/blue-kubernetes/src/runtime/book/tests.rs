//! The book as a state machine: events in, decisions out, no runtime.

use super::*;
use crate::domain::due::Due;
use serde_json::json;

const SETTINGS: Settings = Settings {
    poll_ms: 1_000,
    timer_slack_ms: 0,
    retry_base_ms: 1_000,
    retry_max_ms: 60_000,
    keep_copies: true,
};

/// A book over one package watched in every namespace (scope 0) and one
/// related kind (scope 1).
fn book() -> Book {
    let scopes = vec![
        (Feed::Resources(0), String::new()),
        (Feed::Related(0), String::new()),
    ];
    let mut book = Book::new(SETTINGS, crate::config::REQUEST_ANNOTATION, scopes);
    book.watching(0, true, 0);
    book
}

fn key(name: &str) -> Key {
    Key::new(0, "ns", name)
}

fn object(name: &str, version: &str, phase: Option<&str>) -> Value {
    let mut o = json!({"metadata": {
        "name": name, "namespace": "ns", "uid": format!("uid-{name}"),
        "resourceVersion": version, "generation": 1,
    }});
    if let Some(phase) = phase {
        o["status"] = json!({ "phase": phase });
    }
    o
}

fn arrival(name: &str, version: &str, due: Due, watched: bool) -> Arrival {
    Arrival {
        key: key(name),
        object: object(name, version, None),
        due,
        watched,
        left_running: false,
        names: None,
        digest: None,
    }
}

fn at(ms: u64) -> Due {
    Due::Stored {
        at_ms: ms,
        period_ms: 60_000,
    }
}

/// The names of the keys queued.
fn queued(decisions: &[Decision]) -> Vec<String> {
    decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Queue { work, .. } => Some(work.key.name().to_string()),
            _ => None,
        })
        .collect()
}

fn work(name: &str, version: &str) -> Work {
    Work {
        key: key(name),
        version: version.into(),
    }
}

/// The resourceVersion of the copy a pass over `name` would act on.
fn copy_version(book: &mut Book, name: &str) -> Option<String> {
    let (_, copy) = book.pass_began(&key(name));
    copy.map(|o| {
        o["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string()
    })
}

fn ended(verdict: Verdict, name: &str) -> Ended {
    Ended {
        verdict,
        started_from: Some(object(name, "1", None)),
        written: None,
        next_check: None,
        unserved_request: Request::None,
        not_owned: None,
        released: false,
    }
}

fn broke() -> Verdict {
    Verdict::Broke(crate::telemetry::failure_log::Failure::new(
        "forbidden",
        "replace",
    ))
}

#[test]
fn a_pass_acts_on_the_last_copy_while_the_watch_has_no_gap() {
    let mut book = book();
    let mut a = arrival("a", "1", Due::Now, true);
    a.object["metadata"]["managedFields"] = json!([{"manager": "kubectl"}]);
    let (_, out) = book.arrived(a, 0);
    assert_eq!(queued(&out), ["a"]);
    book.arrived(arrival("a", "2", Due::Now, true), 0);
    let (_, copy) = book.pass_began(&key("a"));
    let copy = copy.expect("a copy while watching");
    assert_eq!(copy["metadata"]["resourceVersion"], "2", "the last one");
    assert!(copy["metadata"].get("managedFields").is_none());

    book.watching(0, false, 0);
    assert_eq!(copy_version(&mut book, "a"), None, "a gap: read it");
    book.arrived(arrival("a", "3", Due::Now, false), 0);
    assert_eq!(
        copy_version(&mut book, "a"),
        None,
        "listed, not yet watched since"
    );
    book.watching(0, true, 0);
    assert_eq!(
        copy_version(&mut book, "a").as_deref(),
        Some("3"),
        "the relist's"
    );
}

#[test]
fn a_relist_of_an_unchanged_version_restores_its_copy() {
    let mut book = book();
    book.arrived(arrival("a", "1", Due::Now, true), 0);
    book.watching(0, false, 0);
    assert_eq!(copy_version(&mut book, "a"), None, "a gap: read it");
    book.arrived(arrival("a", "1", Due::Now, false), 0);
    book.watching(0, true, 0);
    assert_eq!(copy_version(&mut book, "a").as_deref(), Some("1"));
}

#[test]
fn a_pass_that_lost_its_write_to_a_newer_version_reads_the_next_time() {
    let mut book = book();
    book.arrived(arrival("a", "1", Due::Now, true), 0);
    assert_eq!(copy_version(&mut book, "a").as_deref(), Some("1"));
    book.pass_ended(&work("a", "1"), ended(Verdict::Conflict, "a"), 0);
    assert_eq!(copy_version(&mut book, "a"), None);
    book.arrived(arrival("a", "2", Due::Now, true), 0);
    assert_eq!(copy_version(&mut book, "a").as_deref(), Some("2"));
}

#[test]
fn a_copy_behind_our_own_write_is_read_instead() {
    let mut book = book();
    book.arrived(arrival("a", "1", Due::Now, true), 0);
    book.pass_began(&key("a"));
    let wrote = Ended {
        written: Some("2".into()),
        ..ended(Verdict::WroteFailed, "a")
    };
    book.pass_ended(&work("a", "1"), wrote, 0);
    book.requested(&key("a"), Request::Check, 0);
    assert_eq!(
        copy_version(&mut book, "a"),
        None,
        "a check on 1 could miss 2"
    );
    book.arrived(arrival("a", "2", at(500), true), 0);
    assert_eq!(copy_version(&mut book, "a").as_deref(), Some("2"));
}

#[test]
fn a_new_version_s_stored_time_replaces_a_schedule_decided_on_another() {
    let mut book = book();
    book.arrived(arrival("a", "1", at(5_000), true), 0);
    // A quiet check on 1 keeps its next check an hour away, in memory.
    let quiet = Ended {
        next_check: Some(3_600_000),
        ..ended(Verdict::Wrote, "a")
    };
    book.pass_ended(&work("a", "1"), quiet, 5_000);
    // Someone else's version stores a retry soon: it decides.
    book.arrived(arrival("a", "2", at(6_000), true), 5_500);
    assert_eq!(queued(&book.timers_due(6_000).0), ["a"]);
}

#[test]
fn without_watches_no_copy_is_kept() {
    let settings = Settings {
        keep_copies: false,
        ..SETTINGS
    };
    let mut book = Book::new(settings, "r", vec![(Feed::Resources(0), String::new())]);
    book.arrived(arrival("a", "1", Due::Now, false), 0);
    assert_eq!(copy_version(&mut book, "a"), None);
}

#[test]
fn a_version_due_later_sets_a_timer_only_while_its_scope_watches() {
    let mut book = book();
    let (_, out) = book.arrived(arrival("a", "1", at(5_000), true), 0);
    assert_eq!(out.last(), Some(&Decision::WakeTimers));
    assert!(queued(&out).is_empty());
    let (early, next) = book.timers_due(4_999);
    assert!(early.is_empty());
    assert_eq!(next, Some(5_000));
    let (fired, _) = book.timers_due(5_000);
    assert_eq!(queued(&fired), ["a"]);

    book.watching(0, false, 5_000);
    let (_, out) = book.arrived(arrival("b", "1", at(9_000), false), 5_000);
    assert!(queued(&out).is_empty());
    assert!(
        !out.contains(&Decision::WakeTimers),
        "a listed one waits for the next list"
    );
    let rearmed = book.watching(0, true, 5_000);
    assert!(
        rearmed.contains(&Decision::WakeTimers),
        "a watch that opens sets it"
    );
    assert_eq!(queued(&book.timers_due(9_000).0), ["b"]);
}

#[test]
fn a_pass_that_wrote_holds_its_version_until_a_newer_one_arrives() {
    let mut book = book();
    book.arrived(arrival("a", "1", Due::Now, true), 0);
    assert_eq!(book.pass_began(&key("a")).0, Request::None);
    let out = book.pass_ended(&work("a", "1"), ended(Verdict::Wrote, "a"), 0);
    assert!(queued(&out).is_empty(), "held: its write is on its way");
    let (_, again) = book.arrived(arrival("a", "1", Due::Now, false), 1);
    assert!(
        queued(&again).is_empty(),
        "the same version again keeps the hold"
    );
    let (_, newer) = book.arrived(arrival("a", "2", Due::Now, true), 2);
    assert_eq!(queued(&newer), ["a"]);
}

#[test]
fn a_failed_pass_backs_off_doubling_and_an_edit_ends_the_wait() {
    let mut book = book();
    book.arrived(arrival("a", "1", Due::Now, true), 0);
    book.pass_began(&key("a"));
    let out = book.pass_ended(&work("a", "1"), ended(broke(), "a"), 0);
    assert!(queued(&out).is_empty());
    assert_eq!(queued(&book.timers_due(1_000).0), ["a"]);
    book.pass_began(&key("a"));
    book.pass_ended(&work("a", "1"), ended(broke(), "a"), 1_000);
    assert!(queued(&book.timers_due(2_999).0).is_empty(), "doubled");
    assert_eq!(queued(&book.timers_due(3_000).0), ["a"]);
    book.pass_ended(&work("a", "1"), ended(broke(), "a"), 3_000);
    let mut edited = arrival("a", "2", Due::Now, true);
    edited.object["metadata"]["generation"] = json!(2);
    let (_, out) = book.arrived(edited, 3_001);
    assert_eq!(queued(&out), ["a"], "an edit is not backed off");
}

#[test]
fn a_busy_lock_looks_again_after_a_poll_period_and_a_conflict_at_once() {
    let mut book = book();
    book.arrived(arrival("a", "1", Due::Now, true), 0);
    let out = book.pass_ended(&work("a", "1"), ended(Verdict::Busy, "a"), 0);
    assert!(queued(&out).is_empty());
    assert_eq!(queued(&book.timers_due(1_000).0), ["a"]);
    let out = book.pass_ended(&work("a", "1"), ended(Verdict::Conflict, "a"), 1_000);
    assert_eq!(queued(&out), ["a"]);
}

#[test]
fn a_quiet_check_keeps_its_next_check_in_memory() {
    let mut book = book();
    book.arrived(arrival("a", "1", at(0), true), 0);
    let quiet = Ended {
        next_check: Some(60_000),
        ..ended(Verdict::Wrote, "a")
    };
    let out = book.pass_ended(&work("a", "1"), quiet, 0);
    assert!(queued(&out).is_empty(), "no hold, yet not due again");
    let (fired, next) = book.timers_due(59_999);
    assert!(queued(&fired).is_empty());
    assert_eq!(next, Some(60_000));
    assert_eq!(queued(&book.timers_due(60_000).0), ["a"]);
}

#[test]
fn a_request_queues_a_cached_resource_and_outlives_a_pass_that_could_not_look() {
    let mut book = book();
    assert_eq!(
        book.requested(&key("a"), Request::Check, 0),
        None,
        "not cached"
    );
    book.arrived(arrival("a", "1", Due::OnEdit, true), 0);
    let out = book.requested(&key("a"), Request::Check, 0).unwrap();
    assert_eq!(out[0], Decision::Requested);
    assert_eq!(queued(&out), ["a"]);
    assert_eq!(book.pass_began(&key("a")).0, Request::Check);
    let unserved = Ended {
        unserved_request: Request::Check,
        ..ended(Verdict::Busy, "a")
    };
    book.pass_ended(&work("a", "1"), unserved, 0);
    assert_eq!(queued(&book.timers_due(1_000).0), ["a"]);
    assert_eq!(book.pass_began(&key("a")).0, Request::Check, "it stood");
}

#[test]
fn a_resource_gone_is_forgotten_in_one_event_and_its_referrers_wait_again() {
    let mut book = book();
    let server = Key::new(1, "ns", "s");
    let mut referrer = arrival("db", "1", Due::OnEdit, true);
    referrer.names = Some(vec![server.clone()]);
    book.arrived(referrer, 0);
    let referenced = Arrival {
        key: server.clone(),
        object: object("s", "1", Some("Ready")),
        due: Due::OnEdit,
        watched: true,
        left_running: false,
        names: None,
        digest: Some(7),
    };
    book.arrived(referenced, 0);
    book.pass_ended(&work("db", "1"), ended(broke(), "db"), 0);
    book.pass_ended(
        &Work {
            key: server.clone(),
            version: "1".into(),
        },
        Ended {
            not_owned: Some(3),
            ..ended(Verdict::Skipped, "s")
        },
        0,
    );

    let out = book.gone(&server, 10);
    let forget = Decision::Forget {
        key: server.clone(),
        uid: "uid-s".into(),
    };
    assert!(out.contains(&forget), "{out:?}");
    assert!(out.contains(&Decision::Requested), "its referrer is asked");
    assert!(out.contains(&Decision::Phases {
        package: 1,
        slot: 1, // Ready
        count: 0
    }));
    assert!(book.parked.values().all(|keys| keys.is_empty()));
    assert!(
        book.shard_gained(3, 10).is_empty(),
        "nothing parked is left"
    );
    assert_eq!(book.len(), 1);
    let out = book.gone(&key("db"), 10);
    assert!(book.backoff.until("uid-db").is_none(), "backoff forgotten");
    assert_eq!(book.requested(&key("db"), Request::Check, 10), None);
    assert!(out.iter().any(|d| matches!(d, Decision::Forget { .. })));
}

#[test]
fn a_complete_list_forgets_what_it_lacks_in_its_namespace_only() {
    let mut book = book();
    book.arrived(arrival("a", "1", Due::OnEdit, false), 0);
    let mut other = arrival("b", "1", Due::OnEdit, false);
    other.key = Key::new(0, "other", "b");
    book.arrived(other, 0);
    let out = book.listed(0, "ns", &HashSet::new(), 0);
    let forgotten: Vec<_> = out
        .iter()
        .filter_map(|d| match d {
            Decision::Forget { key, .. } => Some(key.name().to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(forgotten, ["a"]);
    assert_eq!(book.len(), 1);
}

#[test]
fn a_referenced_change_asks_every_referrer_and_a_new_version_only_the_waiting() {
    let mut book = book();
    let server = Key::new(1, "ns", "s");
    for (name, phase) in [("ready", "Ready"), ("waiting", "Waiting")] {
        let mut a = arrival(name, "1", Due::OnEdit, true);
        a.object = object(name, "1", Some(phase));
        a.names = Some(vec![server.clone()]);
        book.arrived(a, 0);
    }
    let referenced = |version: &str, digest| Arrival {
        key: server.clone(),
        object: object("s", version, None),
        due: Due::OnEdit,
        watched: true,
        left_running: false,
        names: None,
        digest: Some(digest),
    };
    let (_, first) = book.arrived(referenced("1", 1), 0);
    let mut asked = queued(&first);
    assert_eq!(asked, ["waiting"], "first seen: only a waiting referrer");
    let (_, changed) = book.arrived(referenced("2", 2), 0);
    asked = queued(&changed);
    asked.sort();
    assert_eq!(asked, ["ready", "waiting"]);
}

/// The controller's cache of related objects, as the dispatcher feeds it
/// beside the book: one uncached kind.
fn related() -> crate::cached::ObjectStore {
    let metrics = crate::telemetry::Metrics::new();
    crate::cached::ObjectStore::new([], 0, &metrics)
}

/// Version `version` of ConfigMap `cm`, mapping to `a`, arrives from
/// reflector scope 1, through the cache and then the book.
fn related_arrived(book: &mut Book, cache: &crate::cached::ObjectStore, version: &str) -> Out {
    let cm = json!({"metadata": {"namespace": "ns", "name": "cm", "resourceVersion": version}});
    let (_, check) = cache.arrived(0, &cm, vec![key("a")]);
    book.related_arrived(1, check, 0)
}

#[test]
fn a_related_object_asks_its_targets_except_while_seeding_or_repeated() {
    let (mut book, cache) = (book(), related());
    let cm = Key::new(0, "ns", "cm");
    book.arrived(arrival("a", "1", Due::OnEdit, true), 0);
    let seeding = related_arrived(&mut book, &cache, "1");
    assert!(seeding.is_empty(), "the first list only seeds");
    let gone = cache.listed(0, "", &HashSet::from([cm.clone()]));
    book.related_listed(1, gone, 0);
    let same = related_arrived(&mut book, &cache, "1");
    assert!(same.is_empty());
    let newer = related_arrived(&mut book, &cache, "2");
    assert_eq!(queued(&newer), ["a"]);
    assert_eq!(book.pass_began(&key("a")).0, Request::Check);
    book.related_gone(cache.gone(&cm, &[]), 0);
    assert_eq!(
        book.pass_began(&key("a")).0,
        Request::Repair,
        "a deletion repairs"
    );
    assert_eq!(cache.len(), 0);
}

#[test]
fn a_released_resource_is_forgotten_outside_the_book_at_once_and_not_queued_again() {
    let mut book = book();
    book.arrived(arrival("a", "1", Due::Now, true), 0);
    book.pass_began(&key("a"));
    let released = Ended {
        released: true,
        ..ended(Verdict::Wrote, "a")
    };
    let out = book.pass_ended(&work("a", "1"), released, 0);
    let forget = Decision::Forget {
        key: key("a"),
        uid: "uid-a".into(),
    };
    assert_eq!(out, [forget]);
    // Gone later: forgotten again, the book's entry with it.
    assert!(matches!(
        book.gone(&key("a"), 0)[..],
        [.., Decision::Forget { .. }]
    ));
    assert_eq!(book.len(), 0);
}

#[test]
fn a_deleting_resource_is_not_asked_to_repair_what_its_destroy_deleted() {
    let mut book = book();
    let mut deleting = arrival("a", "1", Due::OnEdit, true);
    deleting.object = object("a", "1", Some("Deleting"));
    book.arrived(deleting, 0);
    let cm = Key::new(0, "ns", "cm");
    let out = book.related_gone(related().gone(&cm, &[key("a")]), 0);
    assert!(out.is_empty());
}

#[test]
fn a_resource_parked_for_another_shard_is_decided_again_when_the_shard_comes() {
    let mut book = book();
    book.arrived(arrival("a", "1", Due::Now, true), 0);
    let not_owned = Ended {
        not_owned: Some(2),
        ..ended(Verdict::Skipped, "a")
    };
    let out = book.pass_ended(&work("a", "1"), not_owned, 0);
    assert!(queued(&out).is_empty(), "held: another replica handles it");
    assert!(book.shard_gained(1, 0).is_empty());
    assert_eq!(queued(&book.shard_gained(2, 0)), ["a"]);
}

#[test]
fn a_run_left_running_is_queued_first() {
    let mut book = book();
    let mut a = arrival("a", "1", Due::Now, true);
    a.left_running = true;
    let (_, out) = book.arrived(a, 0);
    assert!(matches!(
        out.last(),
        Some(Decision::Queue { first: true, .. })
    ));
}
