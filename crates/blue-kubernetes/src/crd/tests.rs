//! CRD generation from typed and untyped packages.

use super::*;
use crate::package::result::WorkflowOutcome;
use crate::{package::erased::Package, package::observation::Observation};
use blue_kubernetes_client::ResourceDescriptor;
use std::collections::BTreeMap;

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

/// A trait package of widgets, of config `C` and outputs `O`, declaring a
/// connection Secret and an immutable `tier` when `DECLARED`, that does
/// nothing.
struct Typed<C, O = crate::package::infrastructure::NoOutputs, const DECLARED: bool = false> {
    types: std::marker::PhantomData<fn() -> (C, O)>,
}

impl<C, O, const DECLARED: bool> Typed<C, O, DECLARED> {
    fn new() -> Self {
        Self {
            types: std::marker::PhantomData,
        }
    }
}

#[async_trait::async_trait]
impl<C, O, const DECLARED: bool> crate::package::infrastructure::Infrastructure
    for Typed<C, O, DECLARED>
where
    C: serde::de::DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static,
    O: serde::Serialize
        + serde::de::DeserializeOwned
        + schemars::JsonSchema
        + Send
        + Sync
        + 'static,
{
    type Config = C;
    type Outputs = O;

    fn schema() -> ResourceSchema {
        let schema = ResourceSchema::new(widgets());
        match DECLARED {
            true => schema.connection_secret().immutable("tier"),
            false => schema,
        }
    }

    async fn observe(
        &self,
        _: &crate::package::context::Context<C>,
    ) -> crate::package::result::CallbackResult<Observation<O>> {
        Ok(Observation::ABSENT)
    }

    async fn converge(
        &self,
        _: &crate::package::context::Context<C>,
    ) -> crate::package::result::CallbackResult<crate::package::infrastructure::Outcome<O>> {
        Ok(crate::package::infrastructure::Outcome::done())
    }

    async fn delete(
        &self,
        _: &crate::package::context::Context<C>,
    ) -> crate::package::result::CallbackResult<crate::package::infrastructure::Outcome<O>> {
        Ok(crate::package::infrastructure::Outcome::done())
    }
}

fn typed<C>() -> Package
where
    C: serde::de::DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static,
{
    build::<C>().unwrap()
}

fn config_of(package: &Package) -> Value {
    let crd = generate(package, &CrdConfig::default()).unwrap();
    let path = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/config";
    crd.pointer(path).unwrap().clone()
}

#[allow(dead_code)]
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
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

/// The package built on `C`, or why it cannot be.
fn build<C>() -> Result<Package, Error>
where
    C: serde::de::DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static,
{
    Package::new(Typed::<C>::new())
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind")]
enum Backend {
    S3 { bucket: String },
    Local { path: String },
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum Loose {
    Number(u32),
    Words(Vec<String>),
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Unions {
    backend: Option<Backend>,
    loose: Loose,
}

#[test]
fn data_carrying_enums_are_refused_naming_the_field_when_the_package_is_built() {
    let err = build::<WithShape>().expect_err("refused");
    assert!(err.to_string().contains("spec.config.shape"), "{err}");
    assert!(err.to_string().contains("unit variants"), "{err}");
    let schema = ResourceSchema::new(ResourceDescriptor::new(
        "example.com",
        "v1",
        "widgets",
        "Widget",
    ));
    let err = generate(&schema.config::<WithShape>(), &CrdConfig::default()).unwrap_err();
    assert!(err.to_string().contains("spec.config.shape"), "{err}");
    let err = build::<Unions>().expect_err("refused");
    assert!(err.to_string().contains("spec.config.backend"), "{err}");
    let err = build::<u32>().expect_err("refused");
    assert!(err.to_string().contains("struct or a map"), "{err}");
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct LooseOnly {
    loose: Loose,
}

#[test]
fn untagged_enums_other_than_integer_or_string_are_refused_naming_the_field() {
    let err = build::<LooseOnly>().expect_err("refused");
    assert!(err.to_string().contains("spec.config.loose"), "{err}");
    assert!(err.to_string().contains("untagged"), "{err}");
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Outputs {
    backend: Backend,
}

#[test]
fn an_outputs_type_without_a_structural_schema_is_refused_when_the_package_is_built() {
    // The closure form's declared outputs are checked the same way.
    let err = Package::builder(ResourceSchema::new(widgets()).outputs::<Outputs>())
        .identity(|_o| Ok(vec![]))
        .observe(|_o| Ok(Observation::ABSENT))
        .converge(|_o| Ok(WorkflowOutcome::new()))
        .delete(|_o| Ok(WorkflowOutcome::new()))
        .build()
        .expect_err("refused");
    assert!(err.to_string().contains("status.outputs.backend"), "{err}");
}

fn hello() -> String {
    "hello".into()
}

#[allow(dead_code)]
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct Defaults {
    #[serde(default)]
    comment: String,
    #[serde(default = "hello")]
    greeting: String,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    tier: Option<Tier>,
    #[serde(default)]
    note: Option<String>,
}

#[test]
fn strings_take_an_empty_string_on_kubernetes_1_20() {
    // 1.20 reads "" as null: a string that is not nullable refuses it,
    // in an object and as a default.
    let config = config_of(&typed::<Defaults>());
    let p = &config["properties"];
    assert_eq!(p["comment"]["default"], "");
    assert_eq!(p["comment"]["nullable"], true, "{config}");
    assert_eq!(p["greeting"]["nullable"], true);
    assert_eq!(p["tags"]["items"]["nullable"], true);
    assert_eq!(p["labels"]["additionalProperties"]["nullable"], true);
    assert_eq!(p["note"]["nullable"], true);
    // A null default is no default.
    assert_eq!(p["note"].get("default"), None, "{config}");
}

#[test]
fn enums_are_never_nullable_so_a_null_is_pruned_rather_than_refused() {
    let config = config_of(&typed::<Defaults>());
    let tier = &config["properties"]["tier"];
    assert_eq!(tier["enum"], json!(["small", "large"]), "{tier}");
    assert_eq!(tier.get("nullable"), None, "{tier}");
    assert_eq!(tier.get("default"), None, "{tier}");
}

fn gibibyte() -> String {
    "1Gi".into()
}

#[allow(dead_code)]
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct Limits {
    #[serde(default = "gibibyte")]
    memory: String,
    #[serde(default)]
    burst: Option<u32>,
    #[serde(default, skip_deserializing)]
    derived: u32,
    #[serde(default)]
    tier: Option<Tier>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory: gibibyte(),
            burst: None,
            derived: 7,
            tier: None,
        }
    }
}

#[allow(dead_code)]
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct WithLimits {
    #[serde(default)]
    limits: Limits,
    #[serde(default)]
    per_zone: BTreeMap<String, Limits>,
}

#[test]
fn a_default_holds_only_the_fields_its_node_declares_and_no_nulls() {
    let config = config_of(&typed::<WithLimits>());
    // `derived` is serialized with the rest but never read; the server
    // refuses a default it would prune, and a null where none is allowed.
    assert_eq!(
        config["properties"]["limits"]["default"],
        json!({"memory": "1Gi"}),
        "{config}"
    );
    assert_eq!(config["properties"]["per_zone"]["default"], json!({}));
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Sets {
    #[serde(default)]
    names: std::collections::BTreeSet<String>,
}

#[test]
fn sets_carry_no_unique_items_which_the_server_refuses() {
    let config = config_of(&typed::<Sets>());
    assert_eq!(config["properties"]["names"]["type"], "array");
    assert_eq!(config["properties"]["names"].get("uniqueItems"), None);
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Flattened {
    name: String,
    #[serde(flatten)]
    extra: BTreeMap<String, String>,
}

#[test]
fn a_flattened_map_keeps_its_extra_keys_beside_the_declared_fields() {
    // The server takes no map schema beside `properties`.
    let config = config_of(&typed::<Flattened>());
    assert_eq!(config.get("additionalProperties"), None, "{config}");
    assert_eq!(config["x-kubernetes-preserve-unknown-fields"], true);
    assert_eq!(config["properties"]["name"]["type"], "string");
    assert_eq!(config["required"], json!(["name"]));
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum IntOrString {
    Int(u16),
    Str(String),
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Ports {
    port: IntOrString,
    #[serde(default)]
    target: Option<IntOrString>,
}

#[test]
fn an_untagged_integer_or_string_is_int_or_string() {
    let config = config_of(&typed::<Ports>());
    let int_or_string = json!({
        "x-kubernetes-int-or-string": true,
        "anyOf": [{"type": "integer"}, {"type": "string"}],
    });
    assert_eq!(config["properties"]["port"], int_or_string, "{config}");
    assert_eq!(config["properties"]["target"], int_or_string, "{config}");
    assert_eq!(config["required"], json!(["port"]));
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
    let options = CrdConfig {
        cel: false,
        ..CrdConfig::default()
    };
    let without = generate(&untyped, &options).unwrap();
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
    let scope = |p: &Package| generate(p, &CrdConfig::default()).unwrap()["spec"]["scope"].clone();
    assert_eq!(scope(&build(d.clone())), "Namespaced");
    assert_eq!(scope(&build(d.cluster_scoped())), "Cluster");
}

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
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
        .connection_secret()
        .immutable("tier");
    let options = CrdConfig::default();
    let from_types = generate(&schema, &options).unwrap();
    assert_eq!(
        generate(
            &ResourceSchema::of::<Typed<Rich, Endpoint, true>>(),
            &options
        )
        .unwrap(),
        from_types
    );
    let built = Package::new(Typed::<Rich, Endpoint, true>::new()).unwrap();
    assert_eq!(generate(&built, &options).unwrap(), from_types);
    // Each declared part is in it: a schema without them differs.
    let spec = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties";
    assert!(from_types
        .pointer(&format!("{spec}/writeConnectionSecretToRef"))
        .is_some());
    let untyped = generate(&ResourceSchema::new(built.descriptor().clone()), &options).unwrap();
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
    let crd = generate(&schema, &CrdConfig::default()).unwrap();
    let path = "/spec/versions/0/schema/openAPIV3Schema/properties/status/properties/outputs";
    let outputs = crd.pointer(path).unwrap();
    let secret = &outputs["properties"]["secret"];
    assert_eq!(secret["properties"]["name"]["type"], "string", "{outputs}");
    // `additionalProperties` beside `properties`: the API server refuses it.
    assert!(secret.get("additionalProperties").is_none(), "{secret}");
    assert_eq!(outputs["properties"]["port"]["type"], "integer");
}

#[test]
fn declared_immutable_fields_and_the_deprecated_list_get_one_cel_rule_each() {
    let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    let schema = ResourceSchema::new(d).immutable("zone").immutable("kind");
    #[allow(deprecated)]
    let options = CrdConfig::default().with_immutable_config(vec!["kind".into(), "ttl".into()]);
    let crd = generate(&schema, &options).unwrap();
    let config = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/config";
    let rules = crd
        .pointer(&format!("{config}/x-kubernetes-validations"))
        .and_then(Value::as_array)
        .unwrap();
    let messages: Vec<&str> = rules.iter().filter_map(|r| r["message"].as_str()).collect();
    assert_eq!(
        messages,
        [
            "profile is immutable",
            "zone is immutable",
            "kind is immutable",
            "ttl is immutable"
        ]
    );
    let without = generate(&schema, &options.with_cel(false)).unwrap();
    assert!(without
        .pointer(&format!("{config}/x-kubernetes-validations"))
        .is_none());
}
