//! The generated CRD applied by the fake API server: every status field the
//! controller writes survives, and a schema that lacks them prunes them.

mod common;

use blue_kubernetes::{Error, Report};

use blue_kubernetes::crd::{self, CrdConfig};

use blue_kubernetes::resource::{Phase, Reason};
use blue_testkit::{Callback, FakeCluster, Misbehaviour};
use common::*;
use serde_json::{json, Value};

/// The statuses of one lifecycle: Ready, Failed, Suspended, Blocked, released.
async fn lifecycle(cluster: &FakeCluster) -> Vec<Value> {
    let infra = blue_testkit::FakeInfra::new();
    let package = infra.package(widgets());
    let c = build(
        cluster,
        cluster.clock().as_fn(),
        vec![package.clone()],
        |_| {},
    );
    let d = widgets();
    let mut statuses = Vec::new();
    let mut step = |cluster: &FakeCluster| {
        cluster.clock().advance(120_000);
        statuses.push(cluster.get(&d, NS, "web").map(|o| o["status"].clone()));
    };
    let run = || blue_kubernetes::reconcile(&c, &package, NS, "web");
    cluster.create(
        &d,
        NS,
        "web",
        json!({"deletionPolicy": "Destroy", "config": {"value": 1}}),
    );
    run().await.unwrap();
    step(cluster);
    cluster.edit_spec(&d, NS, "web", |s| s["config"]["value"] = json!(2));
    infra.script(Callback::Converge, Misbehaviour::Error);
    run().await.unwrap();
    step(cluster);
    cluster.set_annotation(
        &d,
        NS,
        "web",
        blue_kubernetes::config::REQUEST_ANNOTATION,
        "t1",
    );
    cluster.edit_spec(&d, NS, "web", |s| s["suspend"] = json!(true));
    run().await.unwrap();
    step(cluster);
    cluster.edit_spec(&d, NS, "web", |s| {
        s["suspend"] = json!(false);
        s["config"]["compute-prevent-destroy"] = json!(true);
    });
    run().await.unwrap();
    cluster.delete(&d, NS, "web");
    run().await.unwrap();
    step(cluster);
    // Each FakeInfra has its own backend, so identities differ between
    // runs; each cluster its own uids, so the intervals' stretch does too.
    let mut statuses: Vec<Value> = statuses.into_iter().flatten().collect();
    for status in &mut statuses {
        let identity = status
            .as_object_mut()
            .and_then(|s| s.remove("stateIdentity"));
        assert!(identity.is_some_and(|i| i.is_string()));
        let next = status
            .as_object_mut()
            .and_then(|s| s.remove("nextReconcileTime"));
        assert!(next.is_none_or(|n| n.is_string()));
    }
    statuses
}

#[tokio::test]
async fn the_generated_crd_keeps_every_status_field_the_controller_writes() {
    let plain = lifecycle(&FakeCluster::new()).await;
    let with_crd = FakeCluster::new();
    let infra_package = blue_testkit::FakeInfra::new().package(widgets());
    with_crd.install_crd(
        &crd::generate(&infra_package, &CrdConfig::default()).unwrap(),
        "v1",
    );
    let admitted = lifecycle(&with_crd).await;
    let phases: Vec<_> = admitted.iter().map(|s| s["phase"].clone()).collect();
    assert_eq!(phases, ["Ready", "Failed", "Suspended", "Blocked"]);
    assert_eq!(admitted[2]["lastHandledRequest"], "t1");
    assert_eq!(admitted, plain, "nothing pruned, nothing refused");
}

#[tokio::test]
async fn a_status_schema_without_fields_prunes_every_status_write() {
    let w = World::new();
    let mut definition = crd::generate(&w.package, &CrdConfig::default()).unwrap();
    let status = "/spec/versions/0/schema/openAPIV3Schema/properties/status";
    *definition.pointer_mut(status).unwrap() = json!({"type": "object"});
    w.cluster.install_crd(&definition, "v1");
    w.create("web", spec(json!(1)));
    // The controller believes it wrote Ready...
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    // ...but the server kept none of it, exactly like a real one.
    assert_eq!(w.status("web"), json!({}));
}

#[tokio::test]
async fn a_status_write_the_schema_refuses_is_an_invalid_error() {
    let w = World::new();
    let mut definition = crd::generate(&w.package, &CrdConfig::default()).unwrap();
    let phase = "/spec/versions/0/schema/openAPIV3Schema/properties/status/properties/phase";
    *definition.pointer_mut(phase).unwrap() = json!({"type": "string", "enum": ["Ready"]});
    w.cluster.install_crd(&definition, "v1");
    w.create("web", spec(json!(1)));
    let err = blue_kubernetes::reconcile(&w.controller, &w.package, NS, "web")
        .await
        .unwrap_err();
    let Error::Transport(e) = err else {
        panic!("{err}")
    };
    assert_eq!(e.kind(), blue_kubernetes_client::ErrorKind::Invalid);
}

#[test]
fn the_crd_defaults_common_fields_and_refuses_bad_ones() {
    let w = World::new();
    w.cluster.install_crd(
        &crd::generate(&w.package, &CrdConfig::default()).unwrap(),
        "v1",
    );
    let created = w.create(
        "web",
        json!({"config": {"value": 1, "extra": {"kept": true}}}),
    );
    assert_eq!(created["spec"]["reconcileInterval"], "60s");
    assert_eq!(created["spec"]["deletionPolicy"], "Retain");
    assert_eq!(
        created["spec"]["config"]["extra"]["kept"], true,
        "untyped config stays open"
    );
    for bad in [
        json!({"reconcileInterval": "1.5s"}),
        json!({"deletionPolicy": "Delete"}),
        json!({"config": {"compute-prevent-destroy": "yes"}}),
    ] {
        let object = json!({"metadata": {"name": "x"}, "spec": bad});
        assert!(w.cluster.admit(&widgets(), object).is_err(), "{bad}");
    }
}

#[test]
#[should_panic(expected = "spec.reconcileInterval: must match")]
fn a_user_edit_the_crd_refuses_fails_the_test_with_the_field() {
    let w = World::new();
    w.cluster.install_crd(
        &crd::generate(&w.package, &CrdConfig::default()).unwrap(),
        "v1",
    );
    w.create("web", spec(json!(1)));
    w.edit("web", |s| s["reconcileInterval"] = json!("1.5s"));
}
