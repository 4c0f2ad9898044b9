//! Converge, idle, drift, stop/start, suspend, request tokens, validation.

mod common;

use blue_kubernetes::Report;

use blue_kubernetes::config::{FINALIZER, REQUEST_ANNOTATION};

use blue_kubernetes::resource::{Phase, Reason};
use blue_testkit::{Callback, PLANTED_SECRET};
use common::*;
use serde_json::json;

#[tokio::test]
async fn converges_then_stays_idle_until_the_interval() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(w.infra.get(&World::profile("web")), Some(json!(1)));
    let status = w.status("web");
    assert_eq!(status["phase"], "Ready");
    assert_eq!(status["observedGeneration"], 1);
    assert_eq!(status["retryCount"], 0);
    assert_eq!(status["profile"], "dev--web");
    let hash = blue_identity::state_identity_hash(&w.infra.identity("dev--web"));
    assert_eq!(status["stateIdentity"], hash);
    assert_eq!(finalizers(&w.get("web")), [FINALIZER]);

    w.cluster.reset_calls();
    let wait = w.until_next_check("web");
    assert!(
        (60_000..66_000).contains(&wait),
        "the interval, stretched: {wait}"
    );
    w.clock.advance(wait - 1);
    assert_eq!(w.reconcile("web").await, Report::NotDue);
    assert_eq!(w.cluster.calls().writes(), 0, "not due: nothing written");
    w.clock.advance(1);
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(
        w.infra.count(Callback::Converge),
        1,
        "matching: observed only"
    );
}

#[tokio::test]
async fn periodic_check_repairs_drift() {
    let w = World::new();
    w.create("web", spec(json!("a")));
    w.reconcile("web").await;
    w.infra.set(&World::profile("web"), json!("drifted"));
    w.clock.advance(stretched(60_000));
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(w.infra.get(&World::profile("web")), Some(json!("a")));
    assert_eq!(w.infra.count(Callback::Converge), 2);
}

#[tokio::test]
async fn stopped_state_reaches_callbacks_as_stop_event_and_running_as_create() {
    let w = World::new();
    w.create("web", json!({"state": "stopped", "config": {"value": 1}}));
    w.reconcile("web").await;
    w.edit("web", |s| {
        s["state"] = json!("running");
        s["config"]["value"] = json!(2);
    });
    w.reconcile("web").await;
    let events: Vec<_> = w
        .infra
        .records()
        .into_iter()
        .filter(|r| r.callback == Callback::Converge)
        .map(|r| r.event)
        .collect();
    assert_eq!(events, ["stop", "create"]);
}

#[tokio::test]
async fn suspended_resource_leaves_drift_alone_until_resumed() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    w.reconcile("web").await;
    w.edit("web", |s| s["suspend"] = json!(true));
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Suspended, Reason::Suspended)
    );
    w.infra.set(&World::profile("web"), json!("drift"));
    w.clock.advance(3_600_000);
    assert_eq!(w.reconcile("web").await, Report::NotDue);
    assert_eq!(w.infra.get(&World::profile("web")), Some(json!("drift")));

    w.edit("web", |s| s["suspend"] = json!(false));
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(w.infra.get(&World::profile("web")), Some(json!(1)));
}

#[tokio::test]
async fn changed_request_annotation_asks_for_an_early_check() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    w.reconcile("web").await;
    assert_eq!(w.reconcile("web").await, Report::NotDue);
    w.infra.set(&World::profile("web"), json!("drift"));
    w.cluster
        .set_annotation(&widgets(), NS, "web", REQUEST_ANNOTATION, "token-1");
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(w.status("web")["lastHandledRequest"], "token-1");
    assert_eq!(w.infra.get(&World::profile("web")), Some(json!(1)));
    assert_eq!(w.reconcile("web").await, Report::NotDue);
}

#[tokio::test]
async fn invalid_config_stays_invalid_without_rewriting_status_until_edited() {
    let w = World::new();
    w.create("web", json!({"config": {"value": 1, "invalid": true}}));
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Invalid, Reason::InvalidConfiguration)
    );
    let status = w.status("web");
    assert!(!status.to_string().contains(PLANTED_SECRET));
    assert_eq!(condition(&status, "Stalled")["status"], "True");
    assert_eq!(w.infra.count(Callback::Converge), 0);

    w.cluster.reset_calls();
    w.clock.advance(24 * 3_600_000);
    assert_eq!(w.reconcile("web").await, Report::NotDue);
    assert_eq!(w.cluster.calls().writes(), 0);

    w.edit("web", |s| s["config"]["invalid"] = json!(false));
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
}

#[tokio::test]
async fn malformed_common_fields_are_invalid_configuration() {
    for bad in [
        json!({"reconcileInterval": "0s"}),
        json!({"reconcileInterval": "1.5s"}),
        json!({"reconcileInterval": "10d"}),
        json!({"state": "paused"}),
        json!({"deletionPolicy": "Delete"}),
    ] {
        let w = World::new();
        w.create("web", bad.clone());
        assert_eq!(
            w.reconcile("web").await,
            Report::Reconciled(Phase::Invalid, Reason::InvalidConfiguration),
            "{bad}"
        );
        assert_eq!(w.infra.count(Callback::Validate), 0, "{bad}");
    }
}

#[tokio::test]
async fn profile_and_identity_are_immutable_once_recorded() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    w.reconcile("web").await;
    let recorded = w.status("web");
    w.edit("web", |s| s["config"]["profile"] = json!("other"));
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Invalid, Reason::ImmutableStateIdentity)
    );
    let status = w.status("web");
    assert_eq!(status["profile"], recorded["profile"]);
    assert_eq!(status["stateIdentity"], recorded["stateIdentity"]);
    assert!(w.infra.get("other").is_none());

    w.edit("web", |s| {
        s["config"].as_object_mut().unwrap().remove("profile");
    });
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
}

#[tokio::test]
async fn a_changed_identity_outranks_a_malformed_common_field() {
    // Rule 2 comes before rule 3: the identity is computed before the
    // common fields are judged, and the first rule that applies wins.
    let w = World::new();
    w.create("web", spec(json!(1)));
    w.reconcile("web").await;
    w.edit("web", |s| {
        s["config"]["profile"] = json!("other");
        s["reconcileInterval"] = json!("1.5s");
    });
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Invalid, Reason::ImmutableStateIdentity)
    );
    // Back to the recorded identity, the malformed field is what remains.
    w.edit("web", |s| {
        s["config"].as_object_mut().unwrap().remove("profile");
    });
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Invalid, Reason::InvalidConfiguration)
    );
    assert_eq!(w.infra.count(Callback::Validate), 1, "only the first pass");
}

#[tokio::test]
async fn matching_but_unready_is_retried_by_observing_not_converging() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    w.infra.set_ready(&World::profile("web"), false);
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Failed, Reason::NotReady)
    );
    for _ in 0..3 {
        w.clock.advance(60_000);
        assert_eq!(
            w.reconcile("web").await,
            Report::Reconciled(Phase::Failed, Reason::NotReady)
        );
    }
    assert_eq!(w.infra.count(Callback::Converge), 1);
    w.infra.set_ready(&World::profile("web"), true);
    w.clock.advance(60_000);
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(w.infra.count(Callback::Converge), 1);
}

#[tokio::test]
async fn conditions_follow_kstatus_and_keep_transition_times() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    w.reconcile("web").await;
    let first = w.status("web");
    assert_eq!(condition(&first, "Ready")["status"], "True");
    assert_eq!(condition(&first, "Ready")["reason"], "Converged");
    assert_eq!(condition(&first, "Ready")["observedGeneration"], 1);
    assert_eq!(condition(&first, "Reconciling")["status"], "False");
    assert_eq!(condition(&first, "Stalled")["status"], "False");

    w.clock.advance(stretched(60_000));
    w.reconcile("web").await;
    let second = w.status("web");
    assert_eq!(
        condition(&second, "Ready")["lastTransitionTime"],
        condition(&first, "Ready")["lastTransitionTime"]
    );
    assert_ne!(second["lastReconcileTime"], first["lastReconcileTime"]);

    w.infra.set_ready(&World::profile("web"), false);
    w.clock.advance(stretched(60_000));
    w.reconcile("web").await;
    let third = w.status("web");
    assert_eq!(condition(&third, "Ready")["status"], "False");
    assert_eq!(condition(&third, "Reconciling")["status"], "True");
    assert_ne!(
        condition(&third, "Ready")["lastTransitionTime"],
        condition(&first, "Ready")["lastTransitionTime"]
    );
}

#[tokio::test]
async fn sync_callbacks_run_the_same_lifecycle() {
    let w = World::new();
    let package = w.infra.sync_package(widgets());
    w.create("web", spec(json!(1)));
    let report = blue_kubernetes::reconcile(&w.controller, &package, NS, "web")
        .await
        .unwrap();
    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(w.infra.get(&World::profile("web")), Some(json!(1)));
}

#[tokio::test]
async fn missing_resource_is_reported_not_found() {
    let w = World::new();
    assert_eq!(w.reconcile("ghost").await, Report::NotFound);
}
