//! CRD generation from typed and untyped packages.

use super::*;
use crate::{Observation, Package, WorkflowOutcome};
use blue_kubernetes_client::ResourceDescriptor;
use std::collections::BTreeMap;

fn typed<C>() -> Package
where
    C: serde::de::DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static,
{
    Package::builder(ResourceDescriptor::new(
        "example.com",
        "v1",
        "widgets",
        "Widget",
    ))
    .config::<C>()
    .identity(|_c, _o| Ok(vec![]))
    .observe(|_c, _o| Ok(Observation::ABSENT))
    .converge(|_c, _o| Ok(WorkflowOutcome::new()))
    .delete(|_c, _o| Ok(WorkflowOutcome::new()))
    .build()
    .unwrap()
}

fn config_of(package: &Package) -> Value {
    let crd = crd(package, &CrdOptions::default()).unwrap();
    let path = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/config";
    crd.pointer(path).unwrap().clone()
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Tier {
    Small,
    Large,
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Disk {
    size_gb: u64,
    #[serde(default)]
    encrypted: bool,
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Rich {
    tier: Option<Tier>,
    disks: Vec<Disk>,
    labels: BTreeMap<String, String>,
    ratio: f64,
    extra: serde_json::Value,
    boot_disk: Disk,
}

#[test]
fn structs_lists_maps_options_and_unit_enums_are_structural() {
    let config = config_of(&typed::<Rich>());
    let p = &config["properties"];
    assert_eq!(p["tier"]["type"], "string");
    assert_eq!(p["tier"]["enum"], json!(["small", "large"]));
    assert_eq!(
        p["disks"]["items"]["properties"]["sizeGb"].get("type"),
        None
    );
    assert_eq!(
        p["disks"]["items"]["properties"]["size_gb"]["type"],
        "integer"
    );
    assert_eq!(
        p["disks"]["items"]["properties"]["encrypted"]["default"],
        false
    );
    assert_eq!(p["labels"]["additionalProperties"]["type"], "string");
    assert_eq!(p["ratio"]["type"], "number");
    assert_eq!(p["extra"]["x-kubernetes-preserve-unknown-fields"], true);
    assert_eq!(p["bootDisk"]["type"], "object");
    assert_eq!(p["profile"]["type"], "string");
    assert_eq!(p["compute-prevent-destroy"]["type"], "boolean");
    let text = config.to_string();
    for foreign in ["$ref", "$schema", "anyOf", "oneOf", "uint64", "title"] {
        assert!(!text.contains(foreign), "{foreign} in {text}");
    }
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
enum Shape {
    Circle { radius: u32 },
    Square(u32),
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WithShape {
    shape: Shape,
}

#[test]
fn data_carrying_enums_are_refused_with_the_field() {
    let err = crd(&typed::<WithShape>(), &CrdOptions::default()).unwrap_err();
    assert!(err.to_string().contains("spec.config.shape"), "{err}");
    let err = crd(&typed::<u32>(), &CrdOptions::default()).unwrap_err();
    assert!(err.to_string().contains("struct or a map"), "{err}");
}

#[test]
fn untyped_configs_stay_open_and_cel_is_optional() {
    let untyped = Package::builder(ResourceDescriptor::new(
        "example.com",
        "v1",
        "widgets",
        "Widget",
    ))
    .identity(|_o| Ok(vec![]))
    .observe(|_o| Ok(Observation::ABSENT))
    .converge(|_o| Ok(WorkflowOutcome::new()))
    .delete(|_o| Ok(WorkflowOutcome::new()))
    .build()
    .unwrap();
    let config = config_of(&untyped);
    assert_eq!(config["x-kubernetes-preserve-unknown-fields"], true);
    assert_eq!(
        config["x-kubernetes-validations"][0]["message"],
        "profile is immutable"
    );
    let options = CrdOptions {
        cel: false,
        ..CrdOptions::default()
    };
    let without = crd(&untyped, &options).unwrap();
    assert!(!without.to_string().contains("x-kubernetes-validations"));
}

#[test]
fn dashed_fields_are_escaped_for_cel() {
    let rule = immutable_rule("compute-prevent-destroy");
    assert!(rule["rule"]
        .as_str()
        .unwrap()
        .starts_with("has(self.compute__dash__prevent__dash__destroy)"));
    assert_eq!(rule["message"], "compute-prevent-destroy is immutable");
}

#[test]
fn a_cluster_scoped_descriptor_generates_a_cluster_scoped_crd() {
    let d = ResourceDescriptor::new("example.com", "v1", "racks", "Rack");
    let build = |d: ResourceDescriptor| {
        Package::builder(d)
            .identity(|_o| Ok(vec![]))
            .observe(|_o| Ok(Observation::ABSENT))
            .converge(|_o| Ok(WorkflowOutcome::new()))
            .delete(|_o| Ok(WorkflowOutcome::new()))
            .build()
            .unwrap()
    };
    let scope = |p: &Package| crd(p, &CrdOptions::default()).unwrap()["spec"]["scope"].clone();
    assert_eq!(scope(&build(d.clone())), "Namespaced");
    assert_eq!(scope(&build(d.cluster_scoped())), "Cluster");
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Endpoint {
    host: String,
}

#[test]
fn the_schema_alone_generates_the_crd_of_the_package_built_on_it() {
    let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    let schema = ResourceSchema::new(d.clone())
        .config::<Rich>()
        .outputs::<Endpoint>()
        .connection_secret();
    let declared = Package::builder(d)
        .config::<Rich>()
        .outputs::<Endpoint>()
        .connection_secret();
    let options = CrdOptions::default().with_immutable_config(vec!["tier".into()]);
    let from_types = crd(&schema, &options).unwrap();
    assert_eq!(crd(&declared, &options).unwrap(), from_types);
    let built = declared
        .identity(|_c, _o| Ok(vec![]))
        .observe(|_c, _o| Ok(Observation::ABSENT))
        .converge(|_c, _o| Ok(WorkflowOutcome::new()))
        .delete(|_c, _o| Ok(WorkflowOutcome::new()))
        .build()
        .unwrap();
    assert_eq!(crd(&built, &options).unwrap(), from_types);
    // Each declared part is in it: a schema without them differs.
    let spec = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties";
    assert!(from_types
        .pointer(&format!("{spec}/writeConnectionSecretToRef"))
        .is_some());
    let untyped = crd(&ResourceSchema::new(built.descriptor().clone()), &options).unwrap();
    assert_ne!(untyped, from_types);
    assert!(untyped
        .pointer(&format!("{spec}/writeConnectionSecretToRef"))
        .is_none());
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Strict {
    name: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct NestedOutputs {
    secret: Strict,
    port: Option<u16>,
}

#[test]
fn outputs_are_made_structural_like_the_config() {
    let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    let schema = ResourceSchema::new(d).outputs::<NestedOutputs>();
    let crd = crd(&schema, &CrdOptions::default()).unwrap();
    let path = "/spec/versions/0/schema/openAPIV3Schema/properties/status/properties/outputs";
    let outputs = crd.pointer(path).unwrap();
    let secret = &outputs["properties"]["secret"];
    assert_eq!(secret["properties"]["name"]["type"], "string", "{outputs}");
    // `additionalProperties` beside `properties`: the API server refuses it.
    assert!(secret.get("additionalProperties").is_none(), "{secret}");
    assert_eq!(outputs["properties"]["port"]["type"], "integer");
}
