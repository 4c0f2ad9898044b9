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
    let config = &spec["config"];
    assert_eq!(config["required"], serde_json::json!(["serverRef"]));
    let reference = &config["properties"]["serverRef"];
    assert_eq!(
        reference["required"],
        serde_json::json!(["name"]),
        "{reference}"
    );
    assert!(!crd.to_string().contains("x-kubernetes-validations"));
}

#[test]
fn the_manifest_holds_the_server_kind_too_with_outputs_and_no_connection_secret() {
    use postgres_operator::postgres_server;
    let yaml = crd_yaml(false).unwrap();
    let kinds: Vec<_> = yaml
        .lines()
        .filter(|l| l.starts_with("    kind: "))
        .collect();
    assert_eq!(
        kinds,
        ["    kind: PostgresServer", "    kind: PostgresDatabase"]
    );
    let crd = postgres_server::crd(false).unwrap();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
    let outputs = &schema["status"]["properties"]["outputs"]["properties"];
    for field in ["host", "port", "version", "adminSecretRef"] {
        assert!(outputs[field].is_object(), "{field}: {outputs}");
    }
    let spec = &schema["spec"]["properties"];
    assert!(spec["writeConnectionSecretToRef"].is_null(), "{spec}");
    let required = &spec["config"]["required"];
    assert_eq!(required, &serde_json::json!(["host", "adminSecretRef"]));
}

#[test]
fn the_crd_from_the_types_is_the_built_packages() {
    use postgres_operator::package::{crd_options, package};
    let built = package().unwrap();
    for cel in [true, false] {
        let from_package = blue_kubernetes::crd::generate(&built, &crd_options(cel)).unwrap();
        assert_eq!(crd(cel).unwrap(), from_package, "cel: {cel}");
    }
}
