//! Deletion: Retain, Destroy, protection, suspension and observed absence.

mod common;

use blue_kubernetes::Report;

use blue_kubernetes::config::FINALIZER;

use blue_kubernetes::resource::{Phase, Reason};
use blue_testkit::{Callback, Misbehaviour};
use common::*;
use serde_json::json;

const OTHER_FINALIZER: &str = "example.com/keep";

/// A Ready resource `web` with `deletionPolicy: Destroy`.
async fn converged_destroyable() -> World {
    let w = World::new();
    w.create(
        "web",
        json!({"deletionPolicy": "Destroy", "config": {"value": 1}}),
    );
    w.reconcile("web").await;
    w
}

#[tokio::test]
async fn retain_removes_only_our_finalizer_and_runs_no_callback() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    w.reconcile("web").await;
    w.cluster.edit(&widgets(), NS, "web", |o| {
        o["metadata"]["finalizers"] = json!([OTHER_FINALIZER, FINALIZER]);
    });
    let before = w.infra.records().len();
    w.cluster.delete(&widgets(), NS, "web");

    assert_eq!(w.reconcile("web").await, Report::Released);
    assert_eq!(w.infra.records().len(), before, "no callback ran");
    assert_eq!(finalizers(&w.get("web")), [OTHER_FINALIZER]);
    assert_eq!(w.infra.get(&World::profile("web")), Some(json!(1)));
    assert_eq!(w.status("web")["deletionObserved"], true);
    assert_eq!(w.reconcile("web").await, Report::NotDue);
}

#[tokio::test]
async fn retain_releases_even_when_config_is_invalid() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    w.reconcile("web").await;
    w.edit("web", |s| s["reconcileInterval"] = json!("10d"));
    w.cluster.delete(&widgets(), NS, "web");
    assert_eq!(w.reconcile("web").await, Report::Released);
    assert!(!w.exists("web"));
    assert_eq!(w.infra.get(&World::profile("web")), Some(json!(1)));
}

#[tokio::test]
async fn destroy_is_blocked_by_protection_even_while_suspended() {
    let w = World::new();
    w.create(
        "web",
        json!({"deletionPolicy": "Destroy", "config": {"value": 1, "compute-prevent-destroy": true}}),
    );
    w.reconcile("web").await;
    w.edit("web", |s| s["suspend"] = json!(true));
    w.reconcile("web").await;
    w.cluster.delete(&widgets(), NS, "web");

    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Blocked, Reason::DestructionProtected)
    );
    let status = w.status("web");
    assert_eq!(condition(&status, "Stalled")["status"], "True");
    assert_eq!(status["deletionObserved"], true);
    assert_eq!(w.infra.count(Callback::Delete), 0);
    assert_eq!(finalizers(&w.get("web")), [FINALIZER]);

    // Rechecked after the interval, still blocked.
    assert_eq!(w.reconcile("web").await, Report::NotDue);
    w.clock.advance(stretched(60_000));
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Blocked, Reason::DestructionProtected)
    );

    w.edit("web", |s| {
        s["config"]["compute-prevent-destroy"] = json!(false)
    });
    assert_eq!(w.reconcile("web").await, Report::Released);
    assert!(!w.exists("web"));
    assert_eq!(w.infra.get(&World::profile("web")), None);
    assert_eq!(w.infra.count(Callback::Delete), 1);
}

#[tokio::test]
async fn destroy_removes_the_finalizer_only_after_absence_is_observed() {
    let w = converged_destroyable().await;
    w.cluster.delete(&widgets(), NS, "web");

    // delete claims success but the infrastructure is still there.
    w.infra.script(Callback::Delete, Misbehaviour::Exit(0));
    let profile = World::profile("web");
    let (report, ()) = tokio::join!(w.reconcile("web"), async {
        w.infra.effects_started(1).await;
    });
    // Exit(0) outcome is success but the fake keeps the item (scripted path).
    assert_eq!(
        report,
        Report::Reconciled(Phase::Failed, Reason::ExecutionFailed)
    );
    assert_eq!(w.infra.get(&profile), Some(json!(1)));
    assert_eq!(finalizers(&w.get("web")), [FINALIZER]);
    assert_eq!(w.status("web")["phase"], "Failed");

    w.clock.advance(1000);
    assert_eq!(w.reconcile("web").await, Report::Released);
    assert!(!w.exists("web"));
    assert_eq!(w.infra.get(&profile), None);
}

#[tokio::test]
async fn failed_delete_keeps_the_finalizer_and_retries() {
    let w = converged_destroyable().await;
    w.cluster.delete(&widgets(), NS, "web");
    w.infra.script(Callback::Delete, Misbehaviour::Panic);
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Failed, Reason::ExecutionFailed)
    );
    assert!(w.exists("web"));
    assert_eq!(w.status("web")["retryCount"], 1);
    w.clock.advance(1000);
    assert_eq!(w.reconcile("web").await, Report::Released);
    assert!(!w.exists("web"));
}

#[tokio::test]
async fn destroy_of_absent_infrastructure_runs_no_delete() {
    let w = converged_destroyable().await;
    w.infra.remove(&World::profile("web"));
    w.cluster.delete(&widgets(), NS, "web");
    assert_eq!(w.reconcile("web").await, Report::Released);
    assert_eq!(w.infra.count(Callback::Delete), 0);
    assert!(!w.exists("web"));
}

#[tokio::test]
async fn deleting_events_reach_callbacks_as_delete() {
    let w = converged_destroyable().await;
    w.cluster.delete(&widgets(), NS, "web");
    w.reconcile("web").await;
    let deletes: Vec<_> = w
        .infra
        .records()
        .into_iter()
        .filter(|r| r.callback == Callback::Delete)
        .map(|r| r.event)
        .collect();
    assert_eq!(deletes, ["delete"]);
}

#[tokio::test]
async fn every_managed_resource_carries_the_finalizer_even_when_already_matching() {
    let w = World::new();
    w.infra.set(&World::profile("web"), json!(1));
    w.create("web", spec(json!(1)));
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(w.infra.count(Callback::Converge), 0);
    assert_eq!(finalizers(&w.get("web")), [FINALIZER]);
}
