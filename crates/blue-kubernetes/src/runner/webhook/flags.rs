//! The webhook's flags, each also read from an environment variable.

use crate::admission::FailurePolicy;
use crate::runner::crd::parse_service;
use std::net::SocketAddr;
use std::path::PathBuf;

/// `--webhook-*`: where and with which certificates the admission
/// webhook serves, and what the configuration it applies says.
#[derive(Clone, Debug, clap::Args)]
#[group(skip)]
#[non_exhaustive]
pub struct WebhookFlags {
    /// Serve the validating admission webhook over HTTPS here (e.g. 0.0.0.0:9443, controller-runtime's port); without it nothing listens
    #[arg(long, value_name = "ADDR", env = "BLUE_WEBHOOK_BIND")]
    pub webhook_bind: Option<SocketAddr>,
    /// Directory holding tls.crt and tls.key (as cert-manager mounts them); reloaded when they change
    #[arg(
        long,
        value_name = "DIR",
        env = "BLUE_WEBHOOK_CERT_DIR",
        requires = "webhook_bind",
        conflicts_with = "webhook_self_signed"
    )]
    pub webhook_cert_dir: Option<PathBuf>,
    /// Development and tests, one replica: make a CA and a serving certificate, and apply the ValidatingWebhookConfiguration with its bundle (needs RBAC to create and patch validatingwebhookconfigurations); CRDs serving older versions get their conversion pointed here too (patch customresourcedefinitions)
    #[arg(long, env = "BLUE_WEBHOOK_SELF_SIGNED", requires = "webhook_bind", value_parser = clap::builder::FalseyValueParser::new())]
    pub webhook_self_signed: bool,
    /// With --webhook-self-signed: the URL the API server dials (scheme, host, port) [default: https://127.0.0.1:<port of --webhook-bind>]
    #[arg(
        long,
        value_name = "URL",
        env = "BLUE_WEBHOOK_URL",
        requires = "webhook_self_signed",
        conflicts_with = "webhook_service"
    )]
    pub webhook_url: Option<String>,
    /// The Service in front of the operator's pods, NAMESPACE/NAME or NAMESPACE/NAME:PORT (port 443 by default): its DNS names in the self-signed certificate, and the configuration's clientConfig
    #[arg(long, value_name = "NS/NAME[:PORT]", env = "BLUE_WEBHOOK_SERVICE")]
    pub webhook_service: Option<String>,
    /// What the API server does while the webhook does not answer: Fail refuses creates and updates (finalizer changes too, on Kubernetes before 1.27), Ignore admits them for the controller to judge
    #[arg(long, value_name = "POLICY", env = "BLUE_WEBHOOK_FAILURE_POLICY", value_parser = ["Fail", "Ignore"], default_value = "Fail")]
    pub webhook_failure_policy: String,
}

impl WebhookFlags {
    /// The failure policy asked for.
    pub fn failure_policy(&self) -> FailurePolicy {
        match self.webhook_failure_policy.as_str() {
            "Ignore" => FailurePolicy::Ignore,
            _ => FailurePolicy::Fail,
        }
    }

    /// `--webhook-service` as (namespace, name, port); an error names the
    /// expected form.
    pub fn service(&self) -> Result<Option<(String, String, u16)>, String> {
        let Some(service) = &self.webhook_service else {
            return Ok(None);
        };
        parse_service(service).map(Some)
    }
}

/// The DNS names a Service is dialled by.
pub(crate) fn service_names(namespace: &str, name: &str) -> Vec<String> {
    vec![
        format!("{name}.{namespace}.svc"),
        format!("{name}.{namespace}.svc.cluster.local"),
    ]
}
