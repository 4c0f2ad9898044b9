//! Hostile input: forged status, structurally wrong specs and extreme
//! intervals and clocks. None of it may panic, be silently defaulted, or
//! keep the controller away from a resource it must manage.

mod common;

use blue_kubernetes::Report;

use blue_kubernetes::config::{Names, FINALIZER};

use blue_kubernetes::resource::{is_due, Phase, Reason};
use blue_testkit::{rfc3339, Callback};
use common::*;
use serde_json::{json, Value};

fn forged(world: &World, name: &str, status: Value, finalizers: Value) -> Value {
    world.cluster.create_with(
        &widgets(),
        json!({
            "metadata": {"name": name, "namespace": NS, "finalizers": finalizers},
            "spec": spec(json!(1)),
            "status": status,
        }),
    )
}

fn ready_not_due(world: &World) -> Value {
    json!({
        "phase": "Ready",
        "observedGeneration": 1,
        "nextReconcileTime": rfc3339(world.clock.now_ms() + 30_000),
    })
}

#[tokio::test]
async fn status_claiming_ready_without_our_finalizer_is_managed_anyway() {
    let w = World::new();
    forged(&w, "web", ready_not_due(&w), json!([]));
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    let web = w.get("web");
    assert_eq!(finalizers(&web), [FINALIZER]);
    assert_eq!(
        w.infra.count(Callback::Converge),
        1,
        "infrastructure created"
    );
    assert_eq!(web["status"]["profile"], World::profile("web"));
    assert!(web["status"]["stateIdentity"].is_string());
}

#[tokio::test]
async fn status_claiming_ready_without_recorded_identity_is_observed() {
    let w = World::new();
    forged(&w, "web", ready_not_due(&w), json!([FINALIZER]));
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert!(w.status("web")["stateIdentity"].is_string());
}

#[tokio::test]
async fn next_check_forged_into_the_far_future_is_due_now() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    w.reconcile("web").await;
    // Rewrite status the way a user with `/status` access would, keeping
    // every recorded field but the time.
    let mut status = w.status("web");
    status["nextReconcileTime"] = json!("9999-12-31T23:59:59Z");
    let object = w.get("web");
    let client: &dyn blue_kubernetes_client::Client = &w.cluster;
    client
        .update_status(&widgets(), &object, &status)
        .await
        .unwrap();
    let (names, retry_max_ms) = (Names::default(), 60_000);
    assert!(is_due(
        &w.get("web"),
        w.clock.now_ms(),
        &names,
        retry_max_ms
    ));
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    let next = ms_of(&w.status("web")["nextReconcileTime"]);
    let now = w.clock.now_ms();
    assert!(
        (now + 60_000..now + stretched(60_000)).contains(&next),
        "{next}"
    );
}

#[tokio::test]
async fn structurally_wrong_specs_are_invalid_and_run_no_callback() {
    let w = World::new();
    let bad = [
        json!("running"),
        json!(["running"]),
        json!(null),
        json!({"config": "text"}),
        json!({"config": {"profile": 7}}),
        json!({"config": {"profile": ""}}),
        json!({"config": {"compute-prevent-destroy": "yes"}}),
        json!({"suspend": "true"}),
        json!({"reconcileInterval": 60}),
        json!({"reconcileInterval": "999999999999h"}),
        json!({"reconcileInterval": "8761h"}),
    ];
    for (i, spec) in bad.iter().enumerate() {
        let name = format!("bad{i}");
        w.cluster.create_with(
            &widgets(),
            json!({"metadata": {"name": name, "namespace": NS}, "spec": spec}),
        );
        assert_eq!(
            w.reconcile(&name).await,
            Report::Reconciled(Phase::Invalid, Reason::InvalidConfiguration),
            "{spec}"
        );
    }
    for step in [Callback::Observe, Callback::Converge, Callback::Delete] {
        assert_eq!(w.infra.count(step), 0, "{step:?}");
    }
}

#[tokio::test]
async fn the_longest_interval_and_the_last_clock_value_render_without_panic() {
    let w = World::new();
    w.create(
        "web",
        json!({"reconcileInterval": "8760h", "config": {"value": 1}}),
    );
    w.clock.set(u64::MAX - 1);
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(
        w.status("web")["nextReconcileTime"],
        "9999-12-31T23:59:59.999Z"
    );
}

#[tokio::test]
async fn non_ascii_names_and_config_are_handled_like_any_other() {
    let w = World::new();
    w.create(
        "web",
        json!({"config": {"value": "grüße 🚀", "ключ": "значение"}}),
    );
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
}
