//! The committed CRD is the generated one.

use postgres_operator::package::{crd, crd_yaml};

#[test]
fn committed_crd_is_the_generated_one() {
    let committed = include_str!("../manifests/crd.yaml");
    assert!(
        committed == crd_yaml(true).unwrap(),
        "manifests/crd.yaml is stale; regenerate it with\n  \
         cargo run -p postgres-operator -- crd > examples/postgres/manifests/crd.yaml"
    );
}

#[test]
fn the_crd_carries_the_outputs_and_the_connection_secret_reference() {
    let crd = crd(false).unwrap();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
    let outputs = &schema["status"]["properties"]["outputs"]["properties"];
    assert_eq!(outputs["serverVersion"]["type"], "string");
    assert_eq!(outputs["databaseOid"]["type"], "integer");
    let spec = &schema["spec"]["properties"];
    assert!(spec["writeConnectionSecretToRef"].is_object(), "{spec}");
    assert_eq!(
        spec["config"]["required"],
        serde_json::json!(["host", "adminSecretRef"])
    );
    assert!(!crd.to_string().contains("x-kubernetes-validations"));
}

#[test]
fn the_crd_from_the_types_is_the_built_packages() {
    use postgres_operator::package::{crd_options, package};
    use std::sync::Arc;
    let built = package(Arc::new(blue_testkit::FakeCluster::new())).unwrap();
    for cel in [true, false] {
        let from_package = blue_kubernetes::crd(&built, &crd_options(cel)).unwrap();
        assert_eq!(crd(cel).unwrap(), from_package, "cel: {cel}");
    }
}
