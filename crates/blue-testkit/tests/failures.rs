//! Callback failures, panics, backoff and write conflicts.

mod common;

use blue_kubernetes::Report;

use blue_kubernetes::config::Names;

use blue_kubernetes::resource::{is_due, Phase, Reason};
use blue_testkit::{Callback, Fault, Misbehaviour, Operation, PLANTED_SECRET};
use common::*;
use serde_json::json;

fn next_check_in_ms(w: &World, name: &str) -> u64 {
    let next = w.status(name)["nextReconcileTime"]
        .as_str()
        .unwrap()
        .to_string();
    let next: std::time::SystemTime = humantime::parse_rfc3339_weak(&next).unwrap();
    let next = next
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    next - w.clock.now_ms()
}

#[tokio::test]
async fn callback_errors_and_panics_are_sanitized_and_backed_off() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    w.infra.script(Callback::Converge, Misbehaviour::Error);
    w.infra.script(Callback::Converge, Misbehaviour::Panic);
    w.infra.script(Callback::Converge, Misbehaviour::Exit(3));

    let mut delays = vec![];
    for attempt in 1..=3 {
        let report = w.reconcile("web").await;
        assert_eq!(
            report,
            Report::Reconciled(Phase::Failed, Reason::ExecutionFailed)
        );
        assert!(!format!("{report:?}").contains(PLANTED_SECRET));
        let status = w.status("web");
        assert!(!status.to_string().contains(PLANTED_SECRET));
        assert_eq!(status["retryCount"], attempt);
        assert_eq!(condition(&status, "Reconciling")["status"], "True");
        delays.push(next_check_in_ms(&w, "web"));
        assert_eq!(w.reconcile("web").await, Report::NotDue, "backing off");
        w.clock.advance(*delays.last().unwrap());
    }
    assert_eq!(delays, [1000, 2000, 4000]);
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(w.status("web")["retryCount"], 0);
}

#[tokio::test]
async fn backoff_is_capped_at_retry_max() {
    let w = World::with(|c| {
        c.retry_base_ms = 1000;
        c.retry_max_ms = 3000;
    });
    w.create("web", spec(json!(1)));
    let mut delays = vec![];
    for _ in 0..4 {
        w.infra.script(Callback::Converge, Misbehaviour::Error);
        w.reconcile("web").await;
        let d = next_check_in_ms(&w, "web");
        delays.push(d);
        w.clock.advance(d);
    }
    assert_eq!(delays, [1000, 2000, 3000, 3000]);
}

#[tokio::test]
async fn desired_state_edits_and_request_tokens_reset_the_retry_count() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    for _ in 0..3 {
        w.infra.script(Callback::Converge, Misbehaviour::Error);
        w.reconcile("web").await;
        w.clock.advance(next_check_in_ms(&w, "web"));
    }
    assert_eq!(w.status("web")["retryCount"], 3);

    w.edit("web", |s| s["config"]["value"] = json!(2));
    w.infra.script(Callback::Converge, Misbehaviour::Error);
    w.reconcile("web").await;
    assert_eq!(w.status("web")["retryCount"], 1);
    assert_eq!(next_check_in_ms(&w, "web"), 1000);

    w.clock.advance(1000);
    w.infra.script(Callback::Converge, Misbehaviour::Error);
    w.reconcile("web").await;
    assert_eq!(w.status("web")["retryCount"], 2);
    w.cluster.set_annotation(
        &widgets(),
        NS,
        "web",
        blue_kubernetes::config::REQUEST_ANNOTATION,
        "retry-now",
    );
    w.infra.script(Callback::Converge, Misbehaviour::Error);
    w.reconcile("web").await;
    assert_eq!(w.status("web")["retryCount"], 1);
}

#[tokio::test]
async fn failing_or_panicking_validation_is_validation_failed_with_backoff() {
    for misbehaviour in [Misbehaviour::Error, Misbehaviour::Panic] {
        let w = World::new();
        w.create("web", spec(json!(1)));
        w.infra.script(Callback::Validate, misbehaviour);
        assert_eq!(
            w.reconcile("web").await,
            Report::Reconciled(Phase::Failed, Reason::ValidationFailed)
        );
        assert_eq!(next_check_in_ms(&w, "web"), 1000);
        assert_eq!(w.infra.count(Callback::Converge), 0);
    }
}

#[tokio::test]
async fn panicking_sync_callback_is_a_failed_attempt() {
    let w = World::new();
    let package = w.infra.sync_package(widgets());
    w.create("web", spec(json!(1)));
    w.infra.script(Callback::Observe, Misbehaviour::Panic);
    let report = blue_kubernetes::reconcile(&w.controller, &package, NS, "web")
        .await
        .unwrap();
    assert_eq!(
        report,
        Report::Reconciled(Phase::Failed, Reason::ExecutionFailed)
    );
    let report = {
        w.clock.advance(1000);
        blue_kubernetes::reconcile(&w.controller, &package, NS, "web")
            .await
            .unwrap()
    };
    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
}

#[tokio::test]
async fn conflict_on_finalizer_write_prevents_effects_and_releases_the_lock() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    w.cluster
        .inject(Operation::UpdateFinalizers, Fault::Conflict);
    assert_eq!(w.reconcile("web").await, Report::Conflict);
    assert_eq!(w.infra.count(Callback::Converge), 0);
    assert!(!w.is_locked("web"));
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
}

#[tokio::test]
async fn conflict_on_reconciling_publish_prevents_effects_and_releases_the_lock() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    w.cluster.inject(Operation::UpdateStatus, Fault::Conflict);
    assert_eq!(w.reconcile("web").await, Report::Conflict);
    assert_eq!(w.infra.count(Callback::Converge), 0);
    assert!(!w.is_locked("web"));
}

#[tokio::test]
async fn transport_failure_is_an_error_without_text() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    w.cluster.inject(Operation::Get, Fault::Unavailable);
    let err = blue_kubernetes::reconcile(&w.controller, &w.package, NS, "web")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("unavailable"), "{err}");
    assert!(!format!("{err:?}").contains("web"));
    assert_eq!(w.cluster.calls().writes(), 0);
}

#[tokio::test]
async fn edit_during_converge_cannot_be_acknowledged_by_the_stale_result() {
    let w = World::new();
    w.create("web", spec(json!("old")));
    w.infra.hold_effects();
    let (report, ()) = tokio::join!(w.reconcile("web"), async {
        w.infra.effects_started(1).await;
        w.edit("web", |s| s["config"]["value"] = json!("new"));
        w.infra.release(1);
    });
    assert_eq!(report, Report::Conflict);
    let status = w.status("web");
    assert_ne!(status["phase"], "Ready");
    assert_ne!(status["observedGeneration"], 2);

    w.infra.release(10);
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(w.status("web")["observedGeneration"], 2);
    assert_eq!(w.infra.get(&World::profile("web")), Some(json!("new")));
}

#[tokio::test]
async fn restart_observes_before_repeating_effects() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    // Publish succeeds and the effect runs, but the final status write is
    // lost, as if the process died right after converge.
    w.infra.hold_effects();
    let (first, ()) = tokio::join!(
        blue_kubernetes::reconcile(&w.controller, &w.package, NS, "web"),
        async {
            w.infra.effects_started(1).await;
            w.cluster
                .inject(Operation::UpdateStatus, Fault::Unavailable);
            w.infra.release(1);
        }
    );
    assert!(first.is_err());
    assert_eq!(w.status("web")["phase"], "Reconciling");
    assert_eq!(w.infra.count(Callback::Converge), 1);
    assert!(
        is_due(&w.get("web"), w.clock.now_ms(), &Names::default(), 60_000),
        "an interrupted effect is rechecked at once"
    );

    let restarted = build(&w.cluster, w.clock.as_fn(), vec![w.package.clone()], |_| {});
    let report = blue_kubernetes::reconcile(&restarted, &w.package, NS, "web")
        .await
        .unwrap();
    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(
        w.infra.count(Callback::Converge),
        1,
        "observed, not repeated"
    );
}

#[tokio::test]
async fn failing_identity_is_a_failed_attempt_without_effects() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    // Once for the listed snapshot, once for the re-read.
    w.infra.script(Callback::Identity, Misbehaviour::Panic);
    w.infra.script(Callback::Identity, Misbehaviour::Error);
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Failed, Reason::ExecutionFailed)
    );
    assert_eq!(w.infra.count(Callback::Observe), 0);
    assert!(w.status("web").get("stateIdentity").is_none());
    w.clock.advance(1000);
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
}
