//! The migration's rules as tables: readings and results in, what to do
//! next out, without a cluster.

use super::*;

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("m.example.com", "v1", "widgets", "Widget")
}

fn hash(version: &str) -> String {
    storage_version_hash("m.example.com", version, "Widget")
}

/// A reading: the CRD stores at `storage`, with `stored` versions,
/// generation `generation`; discovery reports the hash of `discovered`.
fn facts(storage: &str, stored: &[&str], generation: i64, discovered: &str) -> Facts {
    Facts {
        storage: (!storage.is_empty()).then(|| storage.to_owned()),
        stored_versions: stored.iter().map(|v| v.to_string()).collect(),
        generation,
        resource_version: format!("rv{generation}"),
        discovered_hash: (!discovered.is_empty()).then(|| hash(discovered)),
    }
}

fn mark(generation: i64) -> Mark {
    Mark {
        storage: "v1".into(),
        generation,
        hash: hash("v1"),
    }
}

#[test]
fn a_pass_starts_only_once_discovery_shows_the_packages_storage_version() {
    let table = [
        (facts("", &[], 0, ""), Start::Wait(Waiting::NotInstalled)),
        (
            facts("v1alpha1", &["v1alpha1"], 1, "v1alpha1"),
            Start::Wait(Waiting::StoredElsewhere),
        ),
        (
            facts("v1alpha1", &["v1alpha1", "v1"], 3, "v1alpha1"),
            Start::Wait(Waiting::StoredElsewhere),
        ),
        (
            facts("v1", &["v1alpha1", "v1"], 2, "v1alpha1"),
            Start::Wait(Waiting::DiscoveryBehind),
        ),
        (
            facts("v1", &["v1alpha1", "v1"], 2, ""),
            Start::Wait(Waiting::DiscoveryBehind),
        ),
        (facts("v1", &["v1"], 2, "v1alpha1"), Start::Done),
        (facts("v1", &["v1"], 2, "v1"), Start::Done),
        (
            facts("v1", &["v1alpha1", "v1"], 2, "v1"),
            Start::Pass(mark(2)),
        ),
        // No recorded versions at all: a pass, which then records v1.
        (facts("v1", &[], 2, "v1"), Start::Pass(mark(2))),
    ];
    for (i, (reading, expected)) in table.into_iter().enumerate() {
        assert_eq!(
            start(&widgets(), &reading),
            expected,
            "row {i}: {reading:?}"
        );
    }
}

#[test]
fn a_pass_counts_only_if_the_spec_and_the_discovered_hash_held() {
    let retire = End::Retire {
        stored_versions: vec!["v1".into()],
        resource_version: "rv2".into(),
    };
    let table = [
        (facts("v1", &["v1alpha1", "v1"], 2, "v1"), retire),
        // The storage flag moved away and back: the generation tells.
        (
            facts("v1", &["v1alpha1", "v1"], 4, "v1"),
            End::Again(Changed::Spec),
        ),
        (
            facts("v1alpha1", &["v1alpha1", "v1"], 2, "v1"),
            End::Again(Changed::Spec),
        ),
        (
            facts("v1", &["v1alpha1", "v1"], 2, "v1alpha1"),
            End::Again(Changed::Hash),
        ),
        (
            facts("v1", &["v1alpha1", "v1"], 2, ""),
            End::Again(Changed::Hash),
        ),
        (facts("v1", &["v1"], 2, "v1"), End::Done),
    ];
    for (i, (reading, expected)) in table.into_iter().enumerate() {
        assert_eq!(end(&mark(2), &reading), expected, "row {i}: {reading:?}");
    }
}

#[test]
fn every_write_result_is_counted_and_only_refusals_stop_the_pass() {
    let mut pass = Pass::new(mark(2));
    let page = Listed::Page {
        items: 5,
        remaining: Some(3),
    };
    assert_eq!(pass.listed(page), Next::Go);
    assert_eq!(pass.tally.left, 8);
    let writes = [
        Written::Rewritten,
        Written::Current,
        Written::Conflict,
        Written::Gone,
        Written::Rewritten,
    ];
    for written in writes {
        assert_eq!(pass.written(None, written), Next::Go, "{written:?}");
    }
    let expected = Tally {
        rewritten: 2,
        current: 1,
        conflicts: 1,
        gone: 1,
        left: 3,
    };
    assert_eq!(pass.tally, expected);
    for kind in [
        ErrorKind::Forbidden,
        ErrorKind::Invalid,
        ErrorKind::Unauthorized,
    ] {
        let mut pass = Pass::new(mark(2));
        assert_eq!(pass.written(None, Written::Failed(kind)), Next::Stop(kind));
    }
    let mut pass = Pass::new(mark(2));
    assert_eq!(
        pass.listed(Listed::Failed(ErrorKind::Forbidden)),
        Next::Stop(ErrorKind::Forbidden)
    );
}

#[test]
fn an_expired_continue_token_lists_again_skipping_what_the_pass_settled() {
    let mut pass = Pass::new(mark(2));
    let page = Listed::Page {
        items: 3,
        remaining: Some(4),
    };
    assert_eq!(pass.listed(page), Next::Go);
    assert_eq!(pass.written(Some("a"), Written::Rewritten), Next::Go);
    assert_eq!(pass.written(Some("b"), Written::Conflict), Next::Go);
    assert_eq!(
        pass.written(Some("c"), Written::Failed(ErrorKind::Timeout)),
        Next::Retry { after_ms: 200 }
    );
    assert_eq!(pass.listed(Listed::Failed(ErrorKind::Gone)), Next::Relist);
    // The first page again: a and b were settled, c was not.
    let skipped: Vec<bool> = ["a", "b", "c"].map(|uid| pass.skips(Some(uid))).into();
    assert_eq!(skipped, [true, true, false]);
    assert!(!pass.skips(None), "an object without uid is never skipped");
    // One object left on this page, four after it: none of them settled.
    let page = Listed::Page {
        items: 1,
        remaining: Some(4),
    };
    assert_eq!(pass.listed(page), Next::Go);
    assert_eq!(pass.tally.left, 5);
    assert_eq!((pass.tally.rewritten, pass.tally.conflicts), (1, 1));
}

#[test]
fn after_a_relist_the_settled_objects_not_met_again_are_not_counted_as_left() {
    let mut pass = Pass::new(mark(2));
    for uid in ["a", "b", "c"] {
        pass.written(Some(uid), Written::Rewritten);
    }
    assert_eq!(pass.listed(Listed::Failed(ErrorKind::Gone)), Next::Relist);
    // The first page holds a (skipped) and d; b and c are still ahead
    // among the 10 remaining.
    assert!(pass.skips(Some("a")) && !pass.skips(Some("d")));
    let page = Listed::Page {
        items: 1,
        remaining: Some(10),
    };
    pass.listed(page);
    assert_eq!(pass.tally.left, 1 + 10 - 2);
}

#[test]
fn passing_failures_are_retried_with_a_growing_wait_then_stop() {
    let mut pass = Pass::new(mark(2));
    let waits: Vec<Next> = (1..MAX_ATTEMPTS)
        .map(|_| pass.written(None, Written::Failed(ErrorKind::Unavailable)))
        .collect();
    let expected_ms = [200, 400, 800, 1600, 3200, 6400, 10_000];
    let expected: Vec<Next> = expected_ms
        .iter()
        .map(|&after_ms| Next::Retry { after_ms })
        .collect();
    assert_eq!(waits, expected);
    assert_eq!(
        pass.written(None, Written::Failed(ErrorKind::Unavailable)),
        Next::Stop(ErrorKind::Unavailable)
    );
    // A success in between starts the count again.
    let mut pass = Pass::new(mark(2));
    assert_eq!(
        pass.written(None, Written::Failed(ErrorKind::Timeout)),
        Next::Retry { after_ms: 200 }
    );
    assert_eq!(pass.written(None, Written::Rewritten), Next::Go);
    assert_eq!(
        pass.written(None, Written::Failed(ErrorKind::Timeout)),
        Next::Retry { after_ms: 200 }
    );
    assert_eq!(
        pass.listed(Listed::Failed(ErrorKind::Timeout)),
        Next::Retry { after_ms: 400 }
    );
}

#[test]
fn the_pace_spaces_writes_evenly_and_never_bursts_after_a_pause() {
    let mut pace = Pace::new(50);
    let waits: Vec<u64> = [0, 0, 5, 100, 100, 101]
        .iter()
        .map(|&now| pace.wait_ms(now))
        .collect();
    // 20 ms apart: at 0, 20, 40; after a pause, from the moment it ends.
    assert_eq!(waits, [0, 20, 35, 0, 20, 39]);
    let mut slow = Pace::new(0);
    assert_eq!(
        (slow.wait_ms(0), slow.wait_ms(0)),
        (0, 1000),
        "at least one a second"
    );
}
