//! The ValidatingWebhookConfiguration that registers the webhook,
//! generated from the packages' schemas as the CRD is, so the two never
//! drift.

use super::client::ClientConfig;
use super::Admission;
use crate::config::Namespaces;
use crate::package::schema::ResourceSchema;
use serde_json::{json, Value};

/// What the API server does when the webhook does not answer.
///
/// Kubernetes before 1.27 cannot skip a webhook for metadata-only
/// updates, so every UPDATE reaches it, the controller's own finalizer
/// changes included. `Fail` refuses invalid input even while the webhook
/// is down, at the price of refusing every create and update of the kind
/// (finalizer removals included: a deletion waits) until it answers
/// again; a DELETE is accepted. `Ignore` admits everything while the
/// webhook is down, and the controller's pass still makes a bad resource
/// `Invalid`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailurePolicy {
    /// Refuse the request when the webhook does not answer (the default).
    #[default]
    Fail,
    /// Admit the request when the webhook does not answer.
    Ignore,
}

impl FailurePolicy {
    /// Its name in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        }
    }
}

/// What the generated configuration says besides the packages' kinds.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WebhookOptions {
    /// The configuration's name (the operator's name).
    pub name: String,
    /// How the API server reaches the webhook.
    pub client: ClientConfig,
    /// See [`FailurePolicy`].
    pub failure_policy: FailurePolicy,
    /// How long the API server waits for an answer (1 to 30).
    pub timeout_seconds: u8,
    /// The namespaces the operator manages. With some namespaces and
    /// `namespace_name_label`, a `namespaceSelector` on the
    /// `kubernetes.io/metadata.name` label keeps the others' requests
    /// away; the webhook admits them anyway.
    pub namespaces: Namespaces,
    /// Whether namespaces carry the `kubernetes.io/metadata.name` label
    /// (Kubernetes 1.21 and later; false, the default, for 1.20, where a
    /// selector on it would match no namespace and skip the webhook).
    pub namespace_name_label: bool,
}

impl WebhookOptions {
    /// Options for the operator `name`, reached through `client`:
    /// `Fail`, a 10 second timeout, every namespace.
    pub fn new(name: impl Into<String>, client: ClientConfig) -> Self {
        Self {
            name: name.into(),
            client,
            failure_policy: FailurePolicy::Fail,
            timeout_seconds: 10,
            namespaces: Namespaces::All,
            namespace_name_label: false,
        }
    }
}

/// The `admissionregistration.k8s.io/v1` ValidatingWebhookConfiguration
/// of `schemas`' kinds: one webhook per kind (`validate.<plural>.<group>`)
/// at [`Admission::path_of`], CREATE and UPDATE of the stored version's
/// resource (never `/status`), `sideEffects: None`,
/// `admissionReviewVersions: [v1]`, `matchPolicy: Equivalent`.
///
/// ```
/// use blue_kubernetes::admission::{webhook_configuration, ClientConfig, WebhookOptions};
/// use blue_kubernetes::ResourceSchema;
/// use blue_kubernetes_client::ResourceDescriptor;
/// let widgets = ResourceSchema::new(ResourceDescriptor::new("example.com", "v1", "widgets", "Widget"));
/// let client = ClientConfig::Service {
///     namespace: "ops".into(), name: "widget-operator".into(), port: 443,
///     certificate: Some("ops/widget-operator".into()), ca_bundle: None,
/// };
/// let configuration = webhook_configuration([&widgets], &WebhookOptions::new("widget-operator", client));
/// let webhook = &configuration["webhooks"][0];
/// assert_eq!(webhook["name"], "validate.widgets.example.com");
/// assert_eq!(webhook["rules"][0]["operations"], serde_json::json!(["CREATE", "UPDATE"]));
/// ```
pub fn webhook_configuration<'a, S>(
    schemas: impl IntoIterator<Item = &'a S>,
    options: &WebhookOptions,
) -> Value
where
    S: AsRef<ResourceSchema> + 'a,
{
    let webhooks: Vec<Value> = schemas
        .into_iter()
        .map(|s| webhook(s.as_ref(), options))
        .collect();
    let mut metadata = json!({"name": options.name});
    if let Some(certificate) = options.client.certificate() {
        metadata["annotations"] = json!({"cert-manager.io/inject-ca-from": certificate});
    }
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": metadata,
        "webhooks": webhooks,
    })
}

fn webhook(schema: &ResourceSchema, options: &WebhookOptions) -> Value {
    let d = &schema.descriptor;
    let client = options.client.to_json(&Admission::path_of(d));
    let mut webhook = json!({
        "name": format!("validate.{}.{}", d.plural, d.group),
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "matchPolicy": "Equivalent",
        "failurePolicy": options.failure_policy.as_str(),
        "timeoutSeconds": options.timeout_seconds.clamp(1, 30),
        "clientConfig": client,
        "rules": [{
            "apiGroups": [d.group],
            "apiVersions": [d.version],
            "resources": [d.plural],
            "operations": ["CREATE", "UPDATE"],
            "scope": if d.namespaced { "Namespaced" } else { "Cluster" },
        }],
    });
    if let (true, Namespaces::Only(names)) = (
        options.namespace_name_label && d.namespaced,
        &options.namespaces,
    ) {
        webhook["namespaceSelector"] = json!({"matchExpressions": [{
            "key": "kubernetes.io/metadata.name", "operator": "In", "values": names,
        }]});
    }
    webhook
}
