//! The operator's log: phase transitions at INFO, callback failures at WARN
//! with the author's text (unless turned off), validation messages at INFO,
//! nothing per idle pass. Runs on a current-thread runtime so the
//! thread-local subscriber sees every event of the pass.

mod common;

use blue_testkit::{Misbehaviour, Step, PLANTED_SECRET};
use common::logs::Logs;
use common::*;
use serde_json::json;

#[tokio::test]
async fn a_failed_converge_is_logged_with_its_text_resource_attempt_and_retry() {
    let (logs, _guard) = Logs::capture();
    let w = World::with(|c| c.event_component = Some("test-operator".into()));
    let web = w.create("web", spec(json!(1)));
    w.infra.script(Step::Converge, Misbehaviour::Error);
    w.reconcile("web").await;

    let warnings = logs.lines("callback failed");
    assert_eq!(warnings.len(), 1, "{}", logs.text());
    let line = &warnings[0];
    let uid = web["metadata"]["uid"].as_str().unwrap();
    for needle in [
        "WARN",
        "callback=\"converge\"",
        "failure=\"error\"",
        "attempt=1",
        "namespace=\"dev\"",
        "name=\"web\"",
        "kind=Widget",
        "group=example.com",
        PLANTED_SECRET,
        uid,
    ] {
        assert!(line.contains(needle), "{needle:?} missing from {line}");
    }
    let next = w.status("web")["nextReconcileTime"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(line.contains(&format!("next_retry=\"{next}\"")), "{line}");

    // The text is for the log only: not in status, not in Events.
    assert!(!w.get("web").to_string().contains(PLANTED_SECRET));
    let events = w.cluster.events();
    assert!(!events.is_empty());
    assert!(!serde_json::to_string(&events)
        .unwrap()
        .contains(PLANTED_SECRET));
}

#[tokio::test]
async fn with_the_switch_off_the_failure_is_logged_without_its_text() {
    let (logs, _guard) = Logs::capture();
    let w = World::with(|c| c.log_callback_errors = false);
    w.create("web", spec(json!(1)));
    w.infra.script(Step::Converge, Misbehaviour::Panic);
    w.reconcile("web").await;
    w.create("bad", json!({"config": {"invalid": true}}));
    w.reconcile("bad").await;

    let failures = logs.lines("callback failed");
    assert_eq!(failures.len(), 1, "{}", logs.text());
    assert!(failures[0].contains("failure=\"panic\""), "{}", failures[0]);
    assert_eq!(logs.lines("configuration invalid").len(), 1);
    assert!(!logs.text().contains(PLANTED_SECRET), "{}", logs.text());
}

#[tokio::test]
async fn validation_messages_are_logged_at_info_when_a_resource_becomes_invalid() {
    let (logs, _guard) = Logs::capture();
    let w = World::new();
    w.create("bad", json!({"config": {"invalid": true}}));
    w.reconcile("bad").await;
    let lines = logs.lines("configuration invalid");
    assert_eq!(lines.len(), 1, "{}", logs.text());
    assert!(lines[0].contains(" INFO "), "{}", lines[0]);
    assert!(lines[0].contains(PLANTED_SECRET), "{}", lines[0]);
    assert!(!w.get("bad").to_string().contains(PLANTED_SECRET));
}

#[tokio::test]
async fn each_phase_transition_is_one_info_line_and_an_idle_check_logs_nothing() {
    let (logs, _guard) = Logs::capture();
    let w = World::new();
    w.create("web", spec(json!(1)));
    w.reconcile("web").await;
    let transitions = logs.lines("phase changed");
    assert_eq!(transitions.len(), 2, "{}", logs.text());
    assert!(
        transitions[0].contains("from=\"None\" to=\"Reconciling\""),
        "{}",
        transitions[0]
    );
    assert!(transitions[1].contains("from=\"Reconciling\" to=\"Ready\" reason=\"Converged\""));

    // A periodic check of healthy infrastructure: Ready -> Ready, no line
    // at INFO or above.
    let before = logs.text().len();
    w.clock.advance(60_000);
    w.reconcile("web").await;
    let after = logs.text()[before..].to_string();
    assert!(
        !after
            .lines()
            .any(|l| l.contains(" INFO ") || l.contains(" WARN ")),
        "{after}"
    );
}

#[tokio::test]
async fn every_callback_that_fails_is_named_in_its_line() {
    for (step, name) in [
        (Step::Validate, "validate"),
        (Step::Identity, "identity"),
        (Step::Observe, "observe"),
    ] {
        let (logs, _guard) = Logs::capture();
        let w = World::new();
        w.create("web", spec(json!(1)));
        // Identity runs twice a pass (listed, then re-read): fail both.
        w.infra.script(step, Misbehaviour::Error);
        w.infra.script(step, Misbehaviour::Error);
        w.reconcile("web").await;
        let lines = logs.lines("callback failed");
        assert_eq!(lines.len(), 1, "{name}: {}", logs.text());
        assert!(
            lines[0].contains(&format!("callback=\"{name}\"")),
            "{}",
            lines[0]
        );
    }
}

#[tokio::test]
async fn an_identity_failure_that_no_status_records_is_still_logged() {
    let (logs, _guard) = Logs::capture();
    let w = World::new();
    w.create("web", spec(json!(1)));
    // Only the first call fails: the pass sees the identity change and stops.
    w.infra.script(Step::Identity, Misbehaviour::Error);
    assert_eq!(w.reconcile("web").await, blue_kubernetes::Report::Changed);
    let lines = logs.lines("callback failed");
    assert_eq!(lines.len(), 1, "{}", logs.text());
    assert!(
        lines[0].contains("next_retry=\"next poll\""),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains(PLANTED_SECRET), "{}", lines[0]);
}
