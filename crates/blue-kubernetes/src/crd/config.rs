//! What [`generate`](super::generate) adds beyond the resource schema:
//! [`CrdConfig`], with its [`PrinterColumn`]s rendered here.

use crate::domain::names::Names;
use serde_json::{json, Map, Value};

/// An extra `kubectl get` column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// OpenAPI type of the value: `string`, `integer`, `boolean`, `date`...
    pub column_type: String,
    /// JSONPath into the object, e.g. `.spec.config.size`.
    pub json_path: String,
    /// 0 shows it always, higher only with `-o wide`.
    pub priority: u32,
}

impl PrinterColumn {
    /// A `string` column shown only with `-o wide` (priority 1).
    pub fn wide(name: &str, json_path: &str) -> Self {
        Self {
            name: name.into(),
            column_type: "string".into(),
            json_path: json_path.into(),
            priority: 1,
        }
    }
}

/// What [`generate`](super::generate) adds beyond the resource schema: start from
/// `CrdConfig::default()` and chain the `with_*` setters.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CrdConfig {
    /// The controller's names: the destroy-protection key is declared in
    /// `spec.config` (default: the reference's).
    pub names: Names,
    /// Emit `x-kubernetes-validations` (CEL) immutability rules: `profile`
    /// and the fields the schema declares
    /// ([`ResourceSchema::immutable`](crate::ResourceSchema::immutable)), so an API server with CEL (1.25
    /// and later) refuses an edit of one at `kubectl apply`. Kubernetes
    /// before 1.25 rejects the CRD with them: turn this off there. Either
    /// way the controller enforces the same fields itself: a changed
    /// `profile` (or state identity) is `Invalid` / `ImmutableStateIdentity`,
    /// a changed declared field `Invalid` / `ImmutableField`, and no
    /// callback with effects runs until the edit is reverted. Default true.
    pub cel: bool,
    /// `kubectl get` short names, e.g. `["wdg"]`.
    pub short_names: Vec<String>,
    /// Categories, e.g. `["infrastructure"]` for `kubectl get infrastructure`.
    pub categories: Vec<String>,
    /// `spec.config` fields that get a CEL immutability rule, besides
    /// `profile` and those the schema declares. Deprecated: a field listed
    /// only here is refused by an API server with CEL and by nothing else.
    /// Declare it on the schema instead ([`ResourceSchema::immutable`](crate::ResourceSchema::immutable)),
    /// which the controller enforces on every server.
    #[deprecated(
        since = "0.3.0",
        note = "declare immutable fields on the schema (ResourceSchema::immutable): the controller enforces those on every server"
    )]
    pub immutable_config: Vec<String>,
    /// Columns between the standard `Phase`, `Ready`, `Reason` and `Age`.
    pub printer_columns: Vec<PrinterColumn>,
    /// Where the API server sends conversions, for a package serving
    /// older versions ([`Infrastructure::versions`](crate::Infrastructure::versions)).
    /// Default none: a placeholder Service (`default/conversion-webhook`),
    /// which `NAME crd --webhook-service` and the runner's
    /// `--webhook-self-signed` fill with the admission webhook's.
    pub conversion_client: Option<crate::admission::client::ClientConfig>,
}

impl Default for CrdConfig {
    #[allow(deprecated)]
    fn default() -> Self {
        Self {
            names: Names::default(),
            cel: true,
            short_names: vec![],
            categories: vec![],
            immutable_config: vec![],
            printer_columns: vec![],
            conversion_client: None,
        }
    }
}

crate::package::setters::setters!(CrdConfig {
    /// Sets [`names`](CrdConfig::names).
    with_names(names: Names),
    /// Sets [`cel`](CrdConfig::cel).
    with_cel(cel: bool),
    /// Sets [`short_names`](CrdConfig::short_names).
    with_short_names(short_names: Vec<String>),
    /// Sets [`categories`](CrdConfig::categories).
    with_categories(categories: Vec<String>),
    /// Sets [`printer_columns`](CrdConfig::printer_columns).
    with_printer_columns(printer_columns: Vec<PrinterColumn>),
    /// Sets [`conversion_client`](CrdConfig::conversion_client).
    with_conversion_client(conversion_client: crate::admission::client::ClientConfig),
});

impl CrdConfig {
    /// Sets [`immutable_config`](CrdConfig::immutable_config).
    #[deprecated(
        since = "0.3.0",
        note = "declare immutable fields on the schema (ResourceSchema::immutable): the controller enforces those on every server"
    )]
    #[must_use]
    #[allow(deprecated)]
    pub fn with_immutable_config(mut self, immutable_config: Vec<String>) -> Self {
        self.immutable_config = immutable_config;
        self
    }
}

pub(super) fn printer_columns(options: &CrdConfig) -> Value {
    let ready = |field: &str| format!(".status.conditions[?(@.type==\"Ready\")].{field}");
    let mut columns = vec![
        json!({"name": "Phase", "type": "string", "jsonPath": ".status.phase"}),
        json!({"name": "Ready", "type": "string", "jsonPath": ready("status")}),
        json!({"name": "Reason", "type": "string", "jsonPath": ready("reason")}),
    ];
    for c in &options.printer_columns {
        let mut column = Map::new();
        column.insert("name".into(), json!(c.name));
        column.insert("type".into(), json!(c.column_type));
        column.insert("jsonPath".into(), json!(c.json_path));
        if c.priority > 0 {
            column.insert("priority".into(), json!(c.priority));
        }
        columns.push(Value::Object(column));
    }
    columns.push(json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}));
    Value::Array(columns)
}
