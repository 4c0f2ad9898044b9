//! The matrix: config shapes an author writes with serde and schemars, each
//! with objects a user might create against its CRD.
//!
//! Every shape gets a group of its own (`<shape>.fidelity.test`), so all of
//! them share one API server without their CRDs colliding.

use blue_kubernetes::{
    async_trait, CallbackResult, Context, Infrastructure, Observation, Outcome, Package,
    ResourceSchema,
};

use blue_kubernetes::crd::{self, CrdConfig};

use blue_kubernetes::package::NoOutputs;
use blue_kubernetes_client::ResourceDescriptor;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What a sample should come to on both judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Stored (pruned and defaulted), and its config decodes.
    Stored,
    /// Stored, but the controller cannot decode its config (it reports the
    /// resource Invalid): the schema cannot say everything serde requires.
    StoredUndecodable,
    /// Refused by the API server.
    Refused,
}

/// One object to create: its `spec`.
pub struct Sample {
    pub name: &'static str,
    pub spec: Value,
    pub expect: Expect,
}

/// One config shape and its CRD.
pub struct Shape {
    pub name: &'static str,
    pub descriptor: ResourceDescriptor,
    /// The CRD as `crd --no-cel` ships it, or the generator's refusal.
    pub crd: Result<Value, String>,
    /// Whether the API server should accept the CRD.
    pub crd_accepted: bool,
    /// The field the generator must name when it refuses the type.
    pub refused_naming: Option<&'static str>,
    /// Decodes a stored `spec.config` as the controller would.
    pub decode: fn(&Value) -> Result<(), String>,
    pub samples: Vec<Sample>,
}

fn descriptor(shape: &str) -> ResourceDescriptor {
    ResourceDescriptor::new(format!("{shape}.fidelity.test"), "v1", "widgets", "Widget")
}

fn decode<C: DeserializeOwned>(config: &Value) -> Result<(), String> {
    // The controller reads an absent config as an empty one.
    let mut config = match config {
        Value::Null => json!({}),
        given => given.clone(),
    };
    if let Some(fields) = config.as_object_mut() {
        // The controller's own keys never reach the typed config.
        fields.remove("profile");
        fields.remove(blue_kubernetes::config::DESTROY_PROTECTION_KEY);
    }
    serde_json::from_value::<C>(config)
        .map(drop)
        .map_err(|e| e.to_string())
}

fn any(_: &Value) -> Result<(), String> {
    Ok(())
}

fn options() -> CrdConfig {
    CrdConfig::default().with_cel(false)
}

/// A package of config `C` that does nothing: what a shape's CRD is
/// generated from. Its group is named after `C` (a package's schema is its
/// type's), so every shape's CRD is a resource type of its own.
struct Typed<C> {
    config: std::marker::PhantomData<fn() -> C>,
}

#[async_trait]
impl<C> Infrastructure for Typed<C>
where
    C: DeserializeOwned + JsonSchema + Send + Sync + 'static,
{
    type Config = C;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        let shape = format!("{}.typed", C::schema_name().to_lowercase());
        ResourceSchema::new(descriptor(&shape))
    }

    async fn observe(&self, _: &Context<C>) -> CallbackResult<Observation<NoOutputs>> {
        Ok(Observation::ABSENT)
    }

    async fn converge(&self, _: &Context<C>) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }

    async fn delete(&self, _: &Context<C>) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }
}

/// A typed shape: its CRD from the generator, and the package built on it
/// must judge the type the same way (refused when the package is built).
fn typed<C>(name: &'static str, samples: Vec<Sample>) -> Shape
where
    C: DeserializeOwned + JsonSchema + Send + Sync + 'static,
{
    let d = Typed::<C>::schema().descriptor().clone();
    let built = Package::new(Typed::<C> {
        config: std::marker::PhantomData,
    });
    let crd = match built {
        Ok(package) => crd::generate(&package, &options()).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    Shape {
        name,
        descriptor: d,
        crd,
        crd_accepted: true,
        refused_naming: None,
        decode: decode::<C>,
        samples,
    }
}

/// A typed shape the generator cannot express: building its package
/// fails naming `field`.
fn inexpressible<C>(name: &'static str, field: &'static str) -> Shape
where
    C: DeserializeOwned + JsonSchema + Send + Sync + 'static,
{
    Shape {
        refused_naming: Some(field),
        ..typed::<C>(name, vec![])
    }
}

/// A shape whose `spec.config` schema is written by hand (as an author
/// editing a generated CRD might): judges the fake's CRD checks.
fn hand_written(name: &'static str, config: Value, accepted: bool, samples: Vec<Sample>) -> Shape {
    let d = descriptor(name);
    let schema = ResourceSchema::new(d.clone());
    let mut crd = crd::generate(&schema, &options()).expect("an untyped CRD");
    let path = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/config";
    *crd.pointer_mut(path).expect("spec.config") = config;
    Shape {
        name,
        descriptor: d,
        crd: Ok(crd),
        crd_accepted: accepted,
        refused_naming: None,
        decode: any,
        samples,
    }
}

fn stored(name: &'static str, config: Value) -> Sample {
    Sample {
        name,
        spec: json!({ "config": config }),
        expect: Expect::Stored,
    }
}

fn undecodable(name: &'static str, config: Value) -> Sample {
    Sample {
        name,
        spec: json!({ "config": config }),
        expect: Expect::StoredUndecodable,
    }
}

fn refused(name: &'static str, config: Value) -> Sample {
    Sample {
        name,
        spec: json!({ "config": config }),
        expect: Expect::Refused,
    }
}

// ---- scalars and their defaults ----

fn hello() -> String {
    "hello".into()
}
fn http() -> u16 {
    8080
}
fn half() -> f64 {
    0.5
}
fn yes() -> bool {
    true
}
fn minus() -> i32 {
    -3
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Scalars {
    #[serde(default)]
    comment: String,
    #[serde(default)]
    enabled: bool,
    #[serde(default)]
    count: u32,
    #[serde(default)]
    offset: i64,
    #[serde(default)]
    small: u8,
    #[serde(default)]
    ratio: f64,
    #[serde(default)]
    scale: f32,
    #[serde(default = "hello")]
    greeting: String,
    #[serde(default = "http")]
    port: u16,
    #[serde(default = "half")]
    share: f64,
    #[serde(default = "yes")]
    on: bool,
    #[serde(default = "minus")]
    delta: i32,
}

fn scalars() -> Shape {
    typed::<Scalars>(
        "scalars",
        vec![
            stored("all-defaults", json!({})),
            stored(
                "all-set",
                json!({"comment": "c", "enabled": true, "count": 3, "offset": -4, "small": 255,
                       "ratio": 1.5, "scale": 2.5, "greeting": "hi", "port": 443, "share": 0.1,
                       "on": false, "delta": 7}),
            ),
            stored("empty-string", json!({"comment": "", "greeting": ""})),
            stored(
                "zero-values",
                json!({"count": 0, "enabled": false, "ratio": 0.0}),
            ),
            stored("integer-for-float", json!({"ratio": 2})),
            stored("integral-float-for-integer", json!({"count": 2.0})),
            stored("unknown-field-pruned", json!({"typo": 1, "count": 1})),
            stored("null-for-number-pruned", json!({"count": null})),
            undecodable("null-for-string", json!({"comment": null})),
            refused("wrong-type", json!({"count": "3"})),
            refused("fractional-integer", json!({"count": 1.5})),
            refused("above-u8", json!({"small": 256})),
            refused("negative-unsigned", json!({"count": -1})),
            refused("beyond-int64", json!({"offset": 18446744073709551615u64})),
            refused("bool-as-string", json!({"enabled": "true"})),
            Sample {
                name: "spec-fields",
                spec: json!({"state": "stopped", "reconcileInterval": "5m", "typo": 1}),
                expect: Expect::Stored,
            },
            Sample {
                name: "spec-field-refused",
                spec: json!({"config": {}, "state": "paused"}),
                expect: Expect::Refused,
            },
            Sample {
                name: "spec-empty-interval",
                spec: json!({"config": {}, "reconcileInterval": ""}),
                expect: Expect::Refused,
            },
        ],
    )
}

// ---- options ----

#[derive(Serialize, Deserialize, JsonSchema, Default, Clone, Copy)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum Tier {
    #[default]
    Small,
    Large,
    #[serde(rename = "x-large")]
    XLarge,
}

#[derive(Serialize, Deserialize, JsonSchema, Default)]
#[allow(dead_code)]
struct Disk {
    size_gb: u64,
    #[serde(default)]
    encrypted: bool,
    #[serde(default)]
    label: String,
}

fn some_port() -> Option<u16> {
    Some(5432)
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Options {
    name: Option<String>,
    size: Option<u32>,
    flag: Option<bool>,
    tier: Option<Tier>,
    disk: Option<Disk>,
    tags: Option<Vec<String>>,
    labels: Option<BTreeMap<String, String>>,
    #[serde(default = "some_port")]
    port: Option<u16>,
    #[serde(default)]
    note: Option<String>,
}

fn option_shape() -> Shape {
    typed::<Options>(
        "options",
        vec![
            stored("absent", json!({})),
            stored(
                "present",
                json!({"name": "a", "size": 1, "flag": true, "tier": "large",
                       "disk": {"size_gb": 10}, "tags": ["x"], "labels": {"k": "v"}, "port": 1}),
            ),
            stored(
                "nulls",
                json!({"name": null, "size": null, "flag": null, "disk": null, "tags": null,
                       "labels": null, "port": null, "note": null}),
            ),
            stored("null-enum", json!({"tier": null})),
            stored("empty-strings", json!({"name": "", "note": ""})),
            refused(
                "nested-required-missing",
                json!({"disk": {"encrypted": true}}),
            ),
            refused("wrong-enum", json!({"tier": "medium"})),
            refused("wrong-item-type", json!({"tags": [1]})),
        ],
    )
}

// ---- unit enums ----

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Enums {
    tier: Tier,
    #[serde(default)]
    fallback: Tier,
    #[serde(default)]
    list: Vec<Tier>,
    #[serde(default)]
    by_zone: BTreeMap<String, Tier>,
}

fn enums() -> Shape {
    typed::<Enums>(
        "enums",
        vec![
            stored("minimal", json!({"tier": "large"})),
            stored(
                "renamed-variant",
                json!({"tier": "x-large", "list": ["small"], "byZone": {"a": "large"}}),
            ),
            stored("null-defaulted", json!({"tier": "small", "fallback": null})),
            refused("missing", json!({})),
            refused("unknown-variant", json!({"tier": "medium"})),
            refused("rust-name", json!({"tier": "XLarge"})),
            refused("empty", json!({"tier": ""})),
            refused(
                "unknown-in-list",
                json!({"tier": "small", "list": ["tiny"]}),
            ),
            refused("null-required", json!({"tier": null})),
        ],
    )
}

// ---- enums with data ----

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
enum Source {
    Git { url: String },
    Image(String),
    Empty,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct ExternallyTagged {
    source: Source,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind")]
#[allow(dead_code)]
enum Backend {
    S3 { bucket: String },
    Local { path: String },
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct InternallyTagged {
    backend: Backend,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(tag = "t", content = "c")]
#[allow(dead_code)]
enum Adjacent {
    Count(u32),
    Name(String),
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct AdjacentlyTagged {
    value: Adjacent,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum Loose {
    Number(u32),
    Words(Vec<String>),
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Untagged {
    value: Loose,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum IntOrString {
    Int(i64),
    Str(String),
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct IntOrStringConfig {
    port: IntOrString,
    #[serde(default)]
    target: Option<IntOrString>,
}

fn data_enums() -> Vec<Shape> {
    vec![
        inexpressible::<ExternallyTagged>("external", "spec.config.source"),
        inexpressible::<InternallyTagged>("internal", "spec.config.backend"),
        inexpressible::<AdjacentlyTagged>("adjacent", "spec.config.value"),
        inexpressible::<Untagged>("untagged", "spec.config.value"),
        typed::<IntOrStringConfig>(
            "int-or-string",
            vec![
                stored("int", json!({"port": 80})),
                stored("string", json!({"port": "http", "target": 8080})),
                refused("object", json!({"port": {"a": 1}})),
                refused("bool", json!({"port": true})),
                refused("missing", json!({})),
            ],
        ),
    ]
}

// ---- maps ----

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Maps {
    labels: BTreeMap<String, String>,
    #[serde(default)]
    limits: BTreeMap<String, u32>,
    #[serde(default)]
    disks: BTreeMap<String, Disk>,
    #[serde(default)]
    nested: HashMap<String, BTreeMap<String, bool>>,
    #[serde(default)]
    maybe: BTreeMap<String, Option<String>>,
    #[serde(default)]
    open: BTreeMap<String, Value>,
}

fn maps() -> Shape {
    typed::<Maps>(
        "maps",
        vec![
            stored("minimal", json!({"labels": {}})),
            stored(
                "full",
                json!({"labels": {"a": "b"}, "limits": {"cpu": 2},
                       "disks": {"root": {"size_gb": 5}}, "nested": {"x": {"y": true}},
                       "maybe": {"k": null, "l": "v"}, "open": {"any": {"deep": [1, "two"]}}}),
            ),
            stored("empty-value", json!({"labels": {"a": ""}})),
            stored(
                "defaults-in-values",
                json!({"labels": {}, "disks": {"d": {"size_gb": 1}}}),
            ),
            stored(
                "unknown-in-value-pruned",
                json!({"labels": {}, "disks": {"d": {"size_gb": 1, "typo": 1}}}),
            ),
            undecodable("null-value", json!({"labels": {"a": null}})),
            refused("missing", json!({})),
            refused("wrong-value-type", json!({"labels": {"a": 1}})),
            refused(
                "wrong-nested-type",
                json!({"labels": {}, "nested": {"x": {"y": "no"}}}),
            ),
            refused(
                "value-required-missing",
                json!({"labels": {}, "disks": {"d": {}}}),
            ),
        ],
    )
}

// ---- nested structs and their defaults ----

fn memory() -> String {
    "1Gi".into()
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Limits {
    #[serde(default)]
    cpu: String,
    #[serde(default = "memory")]
    memory: String,
    #[serde(default)]
    burst: Option<u32>,
    #[serde(default, skip_deserializing)]
    derived: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            cpu: String::new(),
            memory: memory(),
            burst: None,
            derived: 7,
        }
    }
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Endpoint {
    host: String,
    #[serde(default = "http")]
    port: u16,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Nested {
    endpoint: Endpoint,
    #[serde(default)]
    limits: Limits,
    #[serde(default)]
    backup: Option<Endpoint>,
}

fn nested() -> Shape {
    typed::<Nested>(
        "nested",
        vec![
            stored("minimal", json!({"endpoint": {"host": "h"}})),
            stored(
                "inner-defaults",
                json!({"endpoint": {"host": "h"}, "limits": {"cpu": "2"}, "backup": {"host": "b"}}),
            ),
            stored(
                "unknown-pruned",
                json!({"endpoint": {"host": "h", "typo": 1}, "typo": 2}),
            ),
            refused("inner-required-missing", json!({"endpoint": {}})),
            refused(
                "inner-wrong-type",
                json!({"endpoint": {"host": "h", "port": "80"}}),
            ),
            refused("not-an-object", json!({"endpoint": "h"})),
        ],
    )
}

// ---- flatten ----

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Placement {
    region: String,
    #[serde(default)]
    zone: String,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Flattened {
    name: String,
    #[serde(flatten)]
    placement: Placement,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct FlattenedMap {
    name: String,
    #[serde(flatten)]
    extra: BTreeMap<String, String>,
}

fn flatten() -> Vec<Shape> {
    vec![
        typed::<Flattened>(
            "flatten",
            vec![
                stored("full", json!({"name": "n", "region": "r", "zone": "z"})),
                stored("defaulted", json!({"name": "n", "region": "r", "typo": 1})),
                refused("flattened-required-missing", json!({"name": "n"})),
                refused(
                    "nested-form",
                    json!({"name": "n", "placement": {"region": "r"}}),
                ),
            ],
        ),
        typed::<FlattenedMap>(
            "flatten-map",
            vec![
                stored("extras-kept", json!({"name": "n", "a": "b"})),
                stored("no-extras", json!({"name": "n"})),
                undecodable("extra-of-wrong-type", json!({"name": "n", "a": 1})),
                refused("missing", json!({"a": "b"})),
            ],
        ),
    ]
}

// ---- renamed and skipped fields ----

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Renamed {
    display_name: String,
    #[serde(rename = "max-size")]
    max_size: u32,
    #[serde(alias = "replicas", default)]
    count: u32,
    #[serde(skip)]
    cache: u32,
    #[serde(skip_deserializing, default)]
    computed: String,
    #[serde(skip_serializing, default)]
    hint: Option<String>,
}

fn renamed() -> Shape {
    typed::<Renamed>(
        "renamed",
        vec![
            stored(
                "serde-names",
                json!({"displayName": "d", "max-size": 3, "count": 2, "hint": "h"}),
            ),
            stored(
                "rust-names-pruned",
                json!({"displayName": "d", "max-size": 3, "display_name": "x", "max_size": 4}),
            ),
            stored(
                "alias-pruned",
                json!({"displayName": "d", "max-size": 3, "replicas": 5}),
            ),
            stored(
                "skipped-pruned",
                json!({"displayName": "d", "max-size": 3, "cache": 1, "computed": "c"}),
            ),
            refused(
                "rust-names-only",
                json!({"display_name": "d", "max_size": 3}),
            ),
        ],
    )
}

// ---- vectors ----

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Vectors {
    disks: Vec<Disk>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    ports: Vec<u16>,
    #[serde(default)]
    matrix: Vec<Vec<String>>,
    #[serde(default)]
    unique: BTreeSet<String>,
}

fn vectors() -> Shape {
    typed::<Vectors>(
        "vectors",
        vec![
            stored("empty", json!({"disks": []})),
            stored(
                "items-defaulted",
                json!({"disks": [{"size_gb": 1}, {"size_gb": 2, "encrypted": true}],
                       "tags": ["a", ""], "ports": [1], "matrix": [["x"], []], "unique": ["a"]}),
            ),
            stored(
                "unknown-in-item-pruned",
                json!({"disks": [{"size_gb": 1, "typo": 1}]}),
            ),
            stored(
                "duplicates-in-set",
                json!({"disks": [], "unique": ["a", "a"]}),
            ),
            refused("item-required-missing", json!({"disks": [{}]})),
            refused("item-wrong-type", json!({"disks": [], "ports": ["80"]})),
            undecodable("null-item", json!({"disks": [], "tags": [null]})),
            refused("not-a-list", json!({"disks": {"size_gb": 1}})),
        ],
    )
}

// ---- open values ----

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Strict {
    name: String,
    #[serde(default)]
    extra: Value,
}

fn open_values() -> Shape {
    typed::<Strict>(
        "strict",
        vec![
            stored(
                "any-extra",
                json!({"name": "n", "extra": {"a": [1, {"b": null}], "c": ""}}),
            ),
            stored("unknown-pruned", json!({"name": "n", "typo": 1})),
            stored("scalar-extra", json!({"name": "n", "extra": 3})),
        ],
    )
}

// ---- hand-written schemas: what the server refuses in a CRD ----

fn hand_written_shapes() -> Vec<Shape> {
    vec![
        hand_written(
            "hw-empty-default",
            json!({"type": "object", "properties": {"comment": {"type": "string", "default": ""}}}),
            false,
            vec![],
        ),
        hand_written(
            "hw-unique-items",
            json!({"type": "object", "properties": {
                "set": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}}),
            false,
            vec![],
        ),
        hand_written(
            "hw-properties-and-map",
            json!({"type": "object", "properties": {"name": {"type": "string"}},
                   "additionalProperties": {"type": "string"}}),
            false,
            vec![],
        ),
        hand_written(
            "hw-closed-object",
            json!({"type": "object", "properties": {"name": {"type": "string"}},
                   "additionalProperties": false}),
            false,
            vec![],
        ),
        hand_written(
            "hw-untyped",
            json!({"type": "object", "properties": {"x": {"description": "no type"}}}),
            false,
            vec![],
        ),
        hand_written(
            "hw-default-unknown",
            json!({"type": "object", "properties": {"inner": {"type": "object",
                "default": {"typo": 1}, "properties": {"a": {"type": "integer"}}}}}),
            false,
            vec![],
        ),
        hand_written(
            "hw-default-wrong-type",
            json!({"type": "object", "properties": {"n": {"type": "integer", "default": "1"}}}),
            false,
            vec![],
        ),
        hand_written(
            "hw-default-out-of-enum",
            json!({"type": "object", "properties": {
                "tier": {"type": "string", "enum": ["a"], "default": "b"}}}),
            false,
            vec![],
        ),
        hand_written(
            "hw-default-above-maximum",
            json!({"type": "object", "properties": {
                "n": {"type": "integer", "maximum": 3, "default": 5}}}),
            false,
            vec![],
        ),
        hand_written(
            "hw-default-missing-required",
            json!({"type": "object", "properties": {"inner": {"type": "object", "default": {},
                "required": ["a"], "properties": {"a": {"type": "string"}}}}}),
            false,
            vec![],
        ),
        hand_written(
            "hw-plain-strings",
            json!({"type": "object", "properties": {
                "s": {"type": "string"},
                "e": {"type": "string", "enum": ["a", "b"], "nullable": true},
                "m": {"type": "object", "additionalProperties": {"type": "string"}}}}),
            true,
            vec![
                stored("set", json!({"s": "x", "e": "a", "m": {"k": "v"}})),
                stored("null-map-value-pruned", json!({"m": {"k": null}})),
                stored("null-string-pruned", json!({"s": null})),
                refused("empty-string", json!({"s": ""})),
                refused("empty-map-value", json!({"m": {"k": ""}})),
                refused("null-nullable-enum", json!({"e": null})),
            ],
        ),
    ]
}

/// Every shape of the matrix.
pub fn all() -> Vec<Shape> {
    let mut shapes = vec![
        scalars(),
        option_shape(),
        enums(),
        maps(),
        nested(),
        renamed(),
        vectors(),
        open_values(),
    ];
    shapes.extend(data_enums());
    shapes.extend(flatten());
    shapes.extend(hand_written_shapes());
    shapes
}
