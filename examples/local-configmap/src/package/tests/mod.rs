//! The callbacks against a scripted kubectl that keeps one ConfigMap in
//! memory with the API server's create/replace/delete-precondition rules.

mod controller;
mod kubectl;

use super::*;
use crate::configmap::OWNER_ANNOTATION;
use kubectl::Fixture;
use serde_json::Value;

fn options(state: &str, data: Value) -> (LocalConfigMapConfig, Options) {
    let config = json!({"data": data});
    let opts = Options::from_resource(&json!({
        "metadata": {"name": "app", "namespace": "dev", "uid": "uid-1"},
        "spec": {"state": state, "config": config}
    }));
    (serde_json::from_value(config).unwrap(), opts)
}

/// The same resource's options once it is being deleted.
fn deleting(opts: &Options) -> Options {
    let mut resource = opts.resource().clone();
    resource["metadata"]["deletionTimestamp"] = json!("2026-12-01T00:00:00Z");
    Options::from_resource(&resource)
}

fn foreign_config_map() -> Value {
    json!({
        "metadata": {
            "name": "app", "namespace": "dev", "uid": "cm-uid-0", "resourceVersion": "7",
            "annotations": {OWNER_ANNOTATION: "someone-else"}
        },
        "data": {"theirs": "1"}
    })
}

fn target() -> Target {
    Target {
        namespace: "dev".into(),
        name: "app".into(),
    }
}

#[tokio::test]
async fn converge_creates_then_observes_ready() {
    let f = Fixture::new(None);
    let opts = options("running", json!({"k": "v"}));
    assert_eq!(
        observe(f.client.as_ref(), &f.seen, &opts.0, &opts.1)
            .await
            .unwrap(),
        Observation::ABSENT
    );
    converge(f.client.as_ref(), &f.seen, &opts.0, &opts.1, &f.sink())
        .await
        .unwrap();
    let cm = f.config_map().unwrap();
    assert_eq!(cm["metadata"]["annotations"][OWNER_ANNOTATION], "uid-1");
    assert_eq!(cm["data"], json!({"k": "v"}));
    assert_eq!(
        observe(f.client.as_ref(), &f.seen, &opts.0, &opts.1)
            .await
            .unwrap(),
        Observation::READY
    );
    assert_eq!(f.effects(), [Effect::Created(target())]);
}

#[tokio::test]
async fn drift_is_replaced_and_stop_empties_the_data() {
    let f = Fixture::new(None);
    let first = options("running", json!({"k": "v"}));
    converge(f.client.as_ref(), &f.seen, &first.0, &first.1, &f.sink())
        .await
        .unwrap();
    f.server.lock().unwrap().config_map.as_mut().unwrap()["data"]["k"] = json!("tampered");
    let running = options("running", json!({"k": "v"}));
    assert!(
        !observe(f.client.as_ref(), &f.seen, &running.0, &running.1)
            .await
            .unwrap()
            .matches
    );
    converge(
        f.client.as_ref(),
        &f.seen,
        &running.0,
        &running.1,
        &f.sink(),
    )
    .await
    .unwrap();
    assert_eq!(f.config_map().unwrap()["data"], json!({"k": "v"}));

    let stopped = options("stopped", json!({"k": "v"}));
    assert!(
        !observe(f.client.as_ref(), &f.seen, &stopped.0, &stopped.1)
            .await
            .unwrap()
            .matches
    );
    converge(
        f.client.as_ref(),
        &f.seen,
        &stopped.0,
        &stopped.1,
        &f.sink(),
    )
    .await
    .unwrap();
    assert_eq!(f.config_map().unwrap()["data"], json!({}));
    assert_eq!(
        observe(f.client.as_ref(), &f.seen, &stopped.0, &stopped.1)
            .await
            .unwrap(),
        Observation::READY
    );
    assert_eq!(
        f.effects(),
        [
            Effect::Created(target()),
            Effect::Replaced(target()),
            Effect::Replaced(target())
        ]
    );
}

#[tokio::test]
async fn a_foreign_config_map_is_a_conflict_and_is_never_written_or_deleted() {
    let f = Fixture::new(Some(foreign_config_map()));
    let opts = options("running", json!({"k": "v"}));
    assert_eq!(
        observe(f.client.as_ref(), &f.seen, &opts.0, &opts.1)
            .await
            .unwrap(),
        Observation::ABSENT
    );
    let err = converge(f.client.as_ref(), &f.seen, &opts.0, &opts.1, &f.sink())
        .await
        .unwrap_err();
    assert!(err.is::<OwnershipConflict>());
    delete(f.client.as_ref(), &f.seen, &opts.0, &opts.1, &f.sink())
        .await
        .unwrap();
    assert_eq!(f.config_map(), Some(foreign_config_map()));
    // converge planned from observe's read; delete read again.
    assert_eq!(f.calls(), ["get", "get"]);
    assert_eq!(f.effects(), [Effect::OwnershipConflict(target())]);
}

#[tokio::test]
async fn converge_acts_on_what_observe_just_read() {
    let f = Fixture::new(None);
    let opts = options("running", json!({"k": "v"}));
    observe(f.client.as_ref(), &f.seen, &opts.0, &opts.1)
        .await
        .unwrap();
    converge(f.client.as_ref(), &f.seen, &opts.0, &opts.1, &f.sink())
        .await
        .unwrap();
    let changed = options("running", json!({"k": "w"}));
    observe(f.client.as_ref(), &f.seen, &changed.0, &changed.1)
        .await
        .unwrap();
    converge(
        f.client.as_ref(),
        &f.seen,
        &changed.0,
        &changed.1,
        &f.sink(),
    )
    .await
    .unwrap();
    assert_eq!(f.calls(), ["get", "create", "get", "replace"]);
    assert_eq!(f.config_map().unwrap()["data"], json!({"k": "w"}));
    converge(
        f.client.as_ref(),
        &f.seen,
        &changed.0,
        &changed.1,
        &f.sink(),
    )
    .await
    .unwrap();
    assert_eq!(
        f.calls()[4..],
        ["get", "replace"],
        "a sighting is used once: without an observe, converge reads"
    );
}

#[tokio::test]
async fn a_change_after_observe_is_never_overwritten_and_costs_one_more_read() {
    let f = Fixture::new(None);
    let opts = options("running", json!({"k": "v"}));
    observe(f.client.as_ref(), &f.seen, &opts.0, &opts.1)
        .await
        .unwrap();
    // Someone else creates the ConfigMap between observe and converge.
    f.server.lock().unwrap().config_map = Some(foreign_config_map());
    let err = converge(f.client.as_ref(), &f.seen, &opts.0, &opts.1, &f.sink())
        .await
        .unwrap_err();
    assert!(err.is::<OwnershipConflict>());
    assert_eq!(f.calls(), ["get", "create", "get"]);
    assert_eq!(f.config_map(), Some(foreign_config_map()));

    // Ours, edited between observe and converge: replaced from a fresh read.
    let g = Fixture::new(None);
    let first = options("running", json!({"k": "old"}));
    converge(g.client.as_ref(), &g.seen, &first.0, &first.1, &g.sink())
        .await
        .unwrap();
    observe(g.client.as_ref(), &g.seen, &opts.0, &opts.1)
        .await
        .unwrap();
    let edited = {
        let mut server = g.server.lock().unwrap();
        let cm = server.config_map.as_mut().unwrap();
        cm["data"]["k"] = json!("tampered");
        cm["metadata"]["resourceVersion"] = json!("999");
        cm.clone()
    };
    converge(g.client.as_ref(), &g.seen, &opts.0, &opts.1, &g.sink())
        .await
        .unwrap();
    assert_eq!(g.calls()[2..], ["get", "replace", "get", "replace"]);
    let cm = g.config_map().unwrap();
    assert_eq!(cm["data"], json!({"k": "v"}));
    assert_ne!(
        cm["metadata"]["resourceVersion"],
        edited["metadata"]["resourceVersion"]
    );
}

#[tokio::test]
async fn delete_acts_on_what_observe_just_read_and_rereads_after_a_change() {
    let f = Fixture::new(None);
    let opts = options("running", json!({"k": "v"}));
    converge(f.client.as_ref(), &f.seen, &opts.0, &opts.1, &f.sink())
        .await
        .unwrap();
    let deleting = deleting(&opts.1);
    observe(f.client.as_ref(), &f.seen, &opts.0, &deleting)
        .await
        .unwrap();
    f.server.lock().unwrap().config_map.as_mut().unwrap()["metadata"]["resourceVersion"] =
        json!("999");
    delete(f.client.as_ref(), &f.seen, &opts.0, &deleting, &f.sink())
        .await
        .unwrap();
    assert_eq!(f.config_map(), None);
    assert_eq!(f.calls()[2..], ["get", "delete", "get", "delete"]);
}

#[tokio::test]
async fn a_check_that_finds_everything_matching_keeps_no_read() {
    let f = Fixture::new(None);
    let opts = options("running", json!({"k": "v"}));
    converge(f.client.as_ref(), &f.seen, &opts.0, &opts.1, &f.sink())
        .await
        .unwrap();
    observe(f.client.as_ref(), &f.seen, &opts.0, &opts.1)
        .await
        .unwrap();
    converge(f.client.as_ref(), &f.seen, &opts.0, &opts.1, &f.sink())
        .await
        .unwrap();
    // The converge after a matching observe (none follows in a pass) reads.
    assert_eq!(f.calls()[2..], ["get", "get", "replace"]);
}

#[tokio::test]
async fn delete_removes_ours_and_tolerates_absence() {
    let f = Fixture::new(None);
    let opts = options("running", json!({}));
    converge(f.client.as_ref(), &f.seen, &opts.0, &opts.1, &f.sink())
        .await
        .unwrap();
    delete(f.client.as_ref(), &f.seen, &opts.0, &opts.1, &f.sink())
        .await
        .unwrap();
    assert_eq!(f.config_map(), None);
    delete(f.client.as_ref(), &f.seen, &opts.0, &opts.1, &f.sink())
        .await
        .unwrap();
    assert_eq!(f.calls(), ["get", "create", "get", "delete", "get"]);
    assert_eq!(
        f.effects(),
        [Effect::Created(target()), Effect::Deleted(target())]
    );
}

#[tokio::test]
async fn invalid_options_fail_before_any_kubectl_call() {
    let f = Fixture::new(None);
    let mut opts = options("running", json!({"k": "v"}));
    opts.0.config_map_name = Some("Not_A_Name".into());
    assert!(observe(f.client.as_ref(), &f.seen, &opts.0, &opts.1)
        .await
        .is_err());
    assert!(
        converge(f.client.as_ref(), &f.seen, &opts.0, &opts.1, &f.sink())
            .await
            .is_err()
    );
    assert!(f.calls().is_empty());
}

#[test]
fn the_package_builds_and_names_its_type() {
    let f = Fixture::new(None);
    let package = package(f.client.clone(), Arc::new(|_: &Effect| {})).unwrap();
    assert_eq!(
        package.descriptor().qualified_plural(),
        "localconfigmaps.examples.blue.dev"
    );
    assert_eq!(
        Effect::OwnershipConflict(target()).to_string(),
        "localconfigmap dev/app: configmap belongs to someone else; not touched"
    );
}

#[test]
fn names_are_the_operators_own_domain_not_the_references() {
    let names = names();
    assert_eq!(names.finalizer, FINALIZER);
    assert_eq!(names.request_annotation, REQUEST_ANNOTATION);
    assert_eq!(names.destroy_protection_key, DESTROY_PROTECTION_KEY);
    assert_ne!(names, Names::reference());
}
