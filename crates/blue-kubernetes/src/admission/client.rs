//! How the API server reaches the operator's webhook server: the client
//! config the admission configuration and the CRD's conversion share.

use base64::Engine;
use serde_json::{json, Value};

/// How the API server reaches the webhook.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientConfig {
    /// Through a Service in front of the operator's pods (every replica
    /// serves), its CA injected by cert-manager from `certificate`
    /// (`namespace/name` of a cert-manager Certificate), or given as
    /// `ca_bundle`.
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
        /// The Service's port.
        port: u16,
        /// The cert-manager Certificate whose CA the `cert-manager.io/inject-ca-from` annotation names.
        certificate: Option<String>,
        /// The CA that signed the serving certificate, PEM, when no
        /// cert-manager injects it.
        ca_bundle: Option<String>,
    },
    /// At a URL (`https://127.0.0.1:9443`, no path), trusted through
    /// `ca_bundle` (PEM): for development and tests.
    Url {
        /// Scheme, host and port.
        base: String,
        /// The CA that signed the serving certificate, PEM.
        ca_bundle: String,
    },
}

impl ClientConfig {
    /// The `clientConfig` of a webhook served at `path` on this server (a
    /// Service with its port and path, or a URL), with the CA bundle when
    /// one is known: the same for admission and for the CRD's conversion.
    pub(crate) fn to_json(&self, path: &str) -> Value {
        let encode = |ca: &str| base64::engine::general_purpose::STANDARD.encode(ca);
        match self {
            ClientConfig::Service {
                namespace,
                name,
                port,
                ca_bundle,
                ..
            } => {
                let mut client = json!({"service": {"namespace": namespace, "name": name, "path": path, "port": port}});
                if let Some(ca) = ca_bundle {
                    client["caBundle"] = json!(encode(ca));
                }
                client
            }
            ClientConfig::Url { base, ca_bundle } => json!({
                "url": format!("{}{path}", base.trim_end_matches('/')),
                "caBundle": encode(ca_bundle),
            }),
        }
    }

    /// The cert-manager Certificate whose CA is injected into the object
    /// holding this client config, if any.
    pub(crate) fn certificate(&self) -> Option<&str> {
        match self {
            ClientConfig::Service {
                certificate: Some(certificate),
                ..
            } => Some(certificate),
            _ => None,
        }
    }
}
