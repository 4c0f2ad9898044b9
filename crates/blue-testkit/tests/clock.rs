//! FakeClock is shared between clones and the closure handed to the controller.

use blue_testkit::{rfc3339, FakeClock, DEFAULT_START_MS};

#[test]
fn clones_and_closures_share_the_clock() {
    let clock = FakeClock::default();
    let copy = clock.clone();
    let now = clock.as_fn();
    copy.advance(1_500);
    assert_eq!(clock.now_ms(), DEFAULT_START_MS + 1_500);
    assert_eq!(now(), DEFAULT_START_MS + 1_500);
    clock.set(0);
    assert_eq!((copy.now_ms(), now()), (0, 0));
}

#[test]
fn advancing_saturates_instead_of_wrapping() {
    let clock = FakeClock::new(u64::MAX - 1);
    clock.advance(10);
    assert_eq!(clock.now_ms(), u64::MAX);
}

#[test]
fn timestamps_are_rfc3339_seconds() {
    assert_eq!(rfc3339(DEFAULT_START_MS), "2024-01-01T00:00:00Z");
    assert_eq!(
        rfc3339(DEFAULT_START_MS + 86_400_999),
        "2024-01-02T00:00:00Z"
    );
    assert_eq!(
        FakeClock::new(DEFAULT_START_MS + 3_600_000).rfc3339(),
        "2024-01-01T01:00:00Z"
    );
}
