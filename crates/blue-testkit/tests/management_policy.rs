//! `spec.managementPolicy: Observe`: import existing
//! infrastructure. The controller observes and records outputs, never runs
//! `converge` or `delete`, and never blocks deletion on infrastructure.

mod common;

use blue_kubernetes::Report;

use blue_kubernetes::resource::{Phase, Reason};
use blue_testkit::Callback;
use common::{finalizers, spec, World};
use serde_json::json;

fn imported(value: serde_json::Value) -> serde_json::Value {
    let mut s = spec(value);
    s["managementPolicy"] = json!("Observe");
    s
}

#[tokio::test]
async fn an_imported_resource_is_observed_and_recorded_never_converged() {
    let w = World::new();
    let profile = World::profile("db");
    // Exists, but not as the spec says: importing must not change it.
    w.infra.set(&profile, json!("as found"));
    w.infra.set_outputs(&profile, json!({"oid": 16384}));
    w.create("db", imported(json!("wanted")));

    let report = w.reconcile("db").await;

    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(w.infra.count(Callback::Converge), 0);
    assert_eq!(w.infra.get(&profile), Some(json!("as found")));
    assert_eq!(w.status("db")["outputs"], json!({"oid": 16384}));
    assert!(finalizers(&w.get("db")).contains(&blue_kubernetes::config::FINALIZER.to_string()));
}

#[tokio::test]
async fn importing_what_does_not_exist_fails_visibly_and_creates_nothing() {
    let w = World::new();
    w.create("db", imported(json!(1)));
    let report = w.reconcile("db").await;
    assert_eq!(report, Report::Reconciled(Phase::Failed, Reason::NotReady));
    assert_eq!(w.infra.count(Callback::Converge), 0);
    assert_eq!(w.infra.get(&World::profile("db")), None);
}

#[tokio::test]
async fn deleting_an_imported_resource_releases_it_without_delete_even_under_destroy() {
    let w = World::new();
    let profile = World::profile("db");
    w.infra.set(&profile, json!(1));
    let mut s = imported(json!(1));
    s["deletionPolicy"] = json!("Destroy");
    w.create("db", s);
    w.reconcile("db").await;
    w.cluster.delete(&common::widgets(), common::NS, "db");

    assert_eq!(w.reconcile("db").await, Report::Released);
    assert!(!w.exists("db"), "nothing held the deletion");
    assert_eq!(w.infra.count(Callback::Delete), 0);
    assert_eq!(w.infra.get(&profile), Some(json!(1)), "left as it was");
}

#[tokio::test]
async fn an_unknown_management_policy_is_invalid() {
    let w = World::new();
    let mut s = spec(json!(1));
    s["managementPolicy"] = json!("Orphan");
    w.create("db", s);
    assert_eq!(
        w.reconcile("db").await,
        Report::Reconciled(Phase::Invalid, Reason::InvalidConfiguration)
    );
    assert_eq!(w.infra.count(Callback::Observe), 0);
}
