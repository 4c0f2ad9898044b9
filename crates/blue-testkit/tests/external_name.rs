//! The external name: the infrastructure's own ID, reported by the
//! package, recorded by the controller as `<domain>/external-name` and
//! handed to later passes; set by a user, it imports what exists.

mod common;
mod silences;

use blue_kubernetes::{reconcile, Package, Report};

use blue_kubernetes::config::Names;

use blue_kubernetes::resource::{Phase, Reason};
use blue_testkit::{FakeClock, FakeCluster};
use common::{build, NS};
use serde_json::{json, Value};
use silences::{silences, Rig};

fn annotation() -> String {
    Names::default().external_name_annotation()
}

fn external_name(object: &Value) -> Option<&str> {
    object["metadata"]["annotations"][annotation().as_str()].as_str()
}

#[tokio::test]
async fn a_name_reported_by_converge_is_recorded_on_the_resource() {
    let rig = Rig::new();
    rig.cluster.create(
        &silences(),
        NS,
        "quiet",
        json!({"config": {"matcher": "job=db"}}),
    );

    let report = rig.reconcile("quiet").await;

    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(external_name(&rig.get("quiet")), Some("s-1"));
    // The observe that judged the converge already found it by its ID.
    let observed = rig.manager.seen("observe");
    assert_eq!(
        observed.last().unwrap().external_name.as_deref(),
        Some("s-1")
    );
}

#[tokio::test]
async fn later_passes_find_the_infrastructure_by_its_recorded_name() {
    let rig = Rig::new();
    rig.cluster.create(
        &silences(),
        NS,
        "quiet",
        json!({"config": {"matcher": "job=db"}}),
    );
    rig.reconcile("quiet").await;
    rig.cluster.edit_spec(&silences(), NS, "quiet", |spec| {
        spec["config"]["matcher"] = json!("job=web");
    });

    let report = rig.reconcile("quiet").await;

    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    let converges = rig.manager.seen("converge");
    assert_eq!(converges[1].external_name.as_deref(), Some("s-1"));
    assert_eq!(rig.manager.count(), 1, "updated in place, never made twice");
    assert_eq!(rig.manager.silences.lock().unwrap()["s-1"], "job=web");
}

#[tokio::test]
async fn a_user_set_external_name_imports_existing_infrastructure() {
    let rig = Rig::new();
    rig.manager.add("s-42", "job=legacy");
    rig.cluster.create_with(
        &silences(),
        json!({
            "metadata": {"name": "legacy", "namespace": NS, "annotations": {annotation(): "s-42"}},
            "spec": {"managementPolicy": "Observe", "config": {"matcher": "anything"}},
        }),
    );

    let report = rig.reconcile("legacy").await;

    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(
        rig.get("legacy")["status"]["outputs"],
        json!({"id": "s-42"})
    );
    assert!(
        rig.manager.seen("converge").is_empty(),
        "imported, never converged"
    );
    assert_eq!(rig.manager.silences.lock().unwrap()["s-42"], "job=legacy");
    let observed = rig.manager.seen("observe");
    assert_eq!(
        observed[0].policy,
        blue_kubernetes::resource::ManagementPolicy::Observe
    );
}

#[tokio::test]
async fn importing_by_a_name_that_names_nothing_fails_and_creates_nothing() {
    let rig = Rig::new();
    rig.cluster.create_with(
        &silences(),
        json!({
            "metadata": {"name": "legacy", "namespace": NS, "annotations": {annotation(): "s-404"}},
            "spec": {"managementPolicy": "Observe", "config": {"matcher": "anything"}},
        }),
    );

    let report = rig.reconcile("legacy").await;

    assert_eq!(report, Report::Reconciled(Phase::Failed, Reason::NotReady));
    assert_eq!(rig.manager.count(), 0);
}

#[tokio::test]
async fn a_spec_edit_racing_the_record_keeps_the_name_and_leaves_the_edit_to_the_next_pass() {
    let rig = Rig::new();
    rig.cluster.create(
        &silences(),
        NS,
        "quiet",
        json!({"config": {"matcher": "job=db"}}),
    );
    // The user edits the spec while converge runs.
    let cluster = rig.cluster.clone();
    *rig.manager.during_converge.lock().unwrap() = Some(Box::new(move || {
        cluster.edit_spec(&silences(), NS, "quiet", |spec| {
            spec["config"]["matcher"] = json!("job=web");
        });
    }));

    let report = rig.reconcile("quiet").await;

    assert_eq!(report, Report::Conflict);
    let object = rig.get("quiet");
    assert_eq!(
        external_name(&object),
        Some("s-1"),
        "the made silence stays found"
    );
    assert_ne!(
        object["status"]["observedGeneration"],
        json!(2),
        "the edit is not acknowledged"
    );
    assert_eq!(
        rig.reconcile("quiet").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(rig.manager.count(), 1);
    assert_eq!(rig.manager.silences.lock().unwrap()["s-1"], "job=web");
}

#[tokio::test]
async fn the_closure_form_reports_and_reads_an_external_name_too() {
    use blue_kubernetes::package::{WorkflowOutcome, EXTERNAL_NAME_KEY};
    use blue_kubernetes::Observation;
    let clock = FakeClock::default();
    let cluster = FakeCluster::new().with_clock(clock.clone());
    let package = Package::builder(silences())
        .identity(|o| Ok(vec![Some(o.profile().to_string())]))
        .observe(|o| {
            Ok(match o.external_name() {
                Some("c-1") => Observation::READY,
                _ => Observation::ABSENT,
            })
        })
        .converge(|_| {
            let mut outcome = WorkflowOutcome::new();
            outcome.insert(EXTERNAL_NAME_KEY.into(), "c-1".into());
            Ok(outcome)
        })
        .delete(|_| Ok(WorkflowOutcome::new()))
        .build()
        .unwrap();
    let controller = build(&cluster, clock.as_fn(), vec![package.clone()], |_| {});
    cluster.create(&silences(), NS, "quiet", json!({"config": {}}));

    let report = reconcile(&controller, &package, NS, "quiet").await.unwrap();

    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    let object = cluster.get(&silences(), NS, "quiet").unwrap();
    assert_eq!(external_name(&object), Some("c-1"));
}

#[tokio::test]
async fn a_user_set_external_name_under_full_management_adopts_what_exists() {
    let rig = Rig::new();
    rig.manager.add("s-42", "job=old");
    rig.cluster.create_with(
        &silences(),
        json!({
            "metadata": {"name": "adopted", "namespace": NS, "annotations": {annotation(): "s-42"}},
            "spec": {"config": {"matcher": "job=new"}},
        }),
    );

    let report = rig.reconcile("adopted").await;

    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(rig.manager.count(), 1, "adopted, not made anew");
    assert_eq!(rig.manager.silences.lock().unwrap()["s-42"], "job=new");
    assert_eq!(external_name(&rig.get("adopted")), Some("s-42"));
}
