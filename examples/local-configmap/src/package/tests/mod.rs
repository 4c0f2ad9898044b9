//! The callbacks against a scripted kubectl that keeps one ConfigMap in
//! memory with the API server's create/replace/delete-precondition rules.

mod controller;
mod kubectl;

use super::*;
use crate::configmap::OWNER_ANNOTATION;
use blue_kubernetes::Package;
use kubectl::Fixture;
use serde_json::{json, Value};

/// The resource `app` in `dev`, asking for `data`.
fn options(state: &str, data: Value) -> Value {
    json!({
        "metadata": {"name": "app", "namespace": "dev", "uid": "uid-1"},
        "spec": {"state": state, "config": {"data": data}}
    })
}

/// The same resource once it is being deleted.
fn deleting(resource: &Value) -> Value {
    let mut resource = resource.clone();
    resource["metadata"]["deletionTimestamp"] = json!("2026-12-01T00:00:00Z");
    resource
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

#[tokio::test]
async fn converge_creates_then_observes_ready() {
    let f = Fixture::new(None);
    let opts = options("running", json!({"k": "v"}));
    assert_eq!(f.observe(&opts).await.unwrap(), Observation::ABSENT);
    f.converge(&opts).await.unwrap();
    let cm = f.config_map().unwrap();
    assert_eq!(cm["metadata"]["annotations"][OWNER_ANNOTATION], "uid-1");
    assert_eq!(cm["data"], json!({"k": "v"}));
    assert_eq!(f.observe(&opts).await.unwrap(), Observation::READY);
}

#[tokio::test]
async fn drift_is_replaced_and_stop_empties_the_data() {
    let f = Fixture::new(None);
    let first = options("running", json!({"k": "v"}));
    f.converge(&first).await.unwrap();
    f.server.lock().unwrap().config_map.as_mut().unwrap()["data"]["k"] = json!("tampered");
    let running = options("running", json!({"k": "v"}));
    assert!(!f.observe(&running).await.unwrap().matches);
    f.converge(&running).await.unwrap();
    assert_eq!(f.config_map().unwrap()["data"], json!({"k": "v"}));

    let stopped = options("stopped", json!({"k": "v"}));
    assert!(!f.observe(&stopped).await.unwrap().matches);
    f.converge(&stopped).await.unwrap();
    assert_eq!(f.config_map().unwrap()["data"], json!({}));
    assert_eq!(f.observe(&stopped).await.unwrap(), Observation::READY);
}

#[tokio::test]
async fn a_foreign_config_map_is_a_conflict_and_is_never_written_or_deleted() {
    let f = Fixture::new(Some(foreign_config_map()));
    let opts = options("running", json!({"k": "v"}));
    assert_eq!(f.observe(&opts).await.unwrap(), Observation::ABSENT);
    let err = f.converge(&opts).await.unwrap_err();
    assert!(err.is::<OwnershipConflict>());
    f.delete(&opts).await.unwrap();
    assert_eq!(f.config_map(), Some(foreign_config_map()));
    // Without a runtime each callback reads (a controller's cache would
    // not even hold the foreign ConfigMap: it is not labelled as ours).
    assert_eq!(f.calls(), ["get", "get", "get"]);
}

#[tokio::test]
async fn each_callback_plans_from_its_own_read() {
    let f = Fixture::new(None);
    let opts = options("running", json!({"k": "v"}));
    f.observe(&opts).await.unwrap();
    f.converge(&opts).await.unwrap();
    let changed = options("running", json!({"k": "w"}));
    f.converge(&changed).await.unwrap();
    // Without a runtime the reads are live; under one they come from the
    // controller's cache of our ConfigMaps, and cost nothing.
    assert_eq!(f.calls(), ["get", "get", "create", "get", "replace"]);
    assert_eq!(f.config_map().unwrap()["data"], json!({"k": "w"}));
}

#[tokio::test]
async fn a_change_after_observe_is_never_overwritten() {
    let f = Fixture::new(None);
    let opts = options("running", json!({"k": "v"}));
    f.observe(&opts).await.unwrap();
    // Someone else creates the ConfigMap between observe and converge.
    f.server.lock().unwrap().config_map = Some(foreign_config_map());
    let err = f.converge(&opts).await.unwrap_err();
    assert!(err.is::<OwnershipConflict>());
    assert_eq!(f.calls(), ["get", "get"]);
    assert_eq!(f.config_map(), Some(foreign_config_map()));
}

#[tokio::test]
async fn delete_removes_exactly_what_it_read() {
    let f = Fixture::new(None);
    let opts = options("running", json!({"k": "v"}));
    f.converge(&opts).await.unwrap();
    let deleting = deleting(&opts);
    f.observe(&deleting).await.unwrap();
    f.server.lock().unwrap().config_map.as_mut().unwrap()["metadata"]["resourceVersion"] =
        json!("999");
    f.delete(&deleting).await.unwrap();
    assert_eq!(f.config_map(), None);
    assert_eq!(f.calls()[2..], ["get", "get", "delete"]);
}

#[tokio::test]
async fn delete_removes_ours_and_tolerates_absence() {
    let f = Fixture::new(None);
    let opts = options("running", json!({}));
    f.converge(&opts).await.unwrap();
    f.delete(&opts).await.unwrap();
    assert_eq!(f.config_map(), None);
    f.delete(&opts).await.unwrap();
    assert_eq!(f.calls(), ["get", "create", "get", "delete", "get"]);
}

#[tokio::test]
async fn invalid_options_fail_before_any_kubectl_call() {
    let f = Fixture::new(None);
    let mut opts = options("running", json!({"k": "v"}));
    opts["spec"]["config"]["configMapName"] = json!("Not_A_Name");
    assert!(f.observe(&opts).await.is_err());
    assert!(f.converge(&opts).await.is_err());
    assert!(f.calls().is_empty());
}

#[test]
fn the_package_builds_and_names_its_type() {
    let package = Package::new(LocalConfigMaps::default()).unwrap();
    assert_eq!(
        package.descriptor().qualified_plural(),
        "localconfigmaps.examples.blue.dev"
    );
}

#[test]
fn names_are_the_operators_own_domain_not_the_references() {
    let names = names();
    assert_eq!(names.finalizer, "examples.blue.dev/infrastructure");
    assert_eq!(
        names.request_annotation,
        "examples.blue.dev/reconcile-request"
    );
    assert_eq!(names.destroy_protection_key, "prevent-destroy");
    assert_ne!(names, Names::reference());
}
