//! The webhook's HTTPS server (feature `webhook`): the packages'
//! [`Admission`](crate::admission::Admission) at
//! [`Admission::path_of`](crate::admission::Admission::path_of) each kind,
//! the conversions of the kinds serving older versions at
//! [`Conversion::PATH`](crate::versions::Conversion::PATH), and the
//! server's own readiness at [`READY_PATH`] (which does not wait for the
//! controller's watches: point the pod's readiness probe at it when the
//! operator converts), over rustls (ring) and HTTP/1.1.
//!
//! The runner starts it with `--webhook-bind` (nothing listens without
//! it) before the controller's first write, on every replica, and stops
//! it last in the drain: Kubernetes before 1.27 sends every UPDATE to the
//! webhook, the controller's own finalizer changes included. Certificates
//! come from `--webhook-cert-dir` (`tls.crt` and `tls.key`, as cert-manager
//! mounts them; reloaded when they change) or, for development and tests,
//! from `--webhook-self-signed`, which makes a CA and writes its bundle
//! into the ValidatingWebhookConfiguration it applies.
//!
//! A test serves its own controller's webhook in a few lines:
//!
//! ```no_run
//! # async fn demo(controller: blue_kubernetes::Controller) -> Result<(), Box<dyn std::error::Error>> {
//! use blue_kubernetes::admission::{webhook_configuration, Admission, ClientConfig, WebhookOptions};
//! use blue_kubernetes::runner::webhook::{WebhookServer, WebhookTls};
//! let tls = WebhookTls::self_signed(&[])?;
//! let server = WebhookServer::serve("127.0.0.1:0".parse()?, Admission::new(&controller), &tls).await?;
//! let client = tls.client_config(&format!("https://{}", server.address())).unwrap();
//! let packages = &controller.config().packages;
//! let configuration = webhook_configuration(packages, &WebhookOptions::new("test", client));
//! // ... apply `configuration`, create resources ...
//! server.stop().await;
//! # Ok(()) }
//! ```

mod certificates;
mod convert;
mod crd_conversion;
pub(crate) mod flags;
mod reload;
pub(crate) mod run;
mod self_signed;
mod server;

pub use convert::READY_PATH;
pub use flags::WebhookFlags;
pub use self_signed::SelfSigned;
pub use server::{WebhookServer, CLIENT_DEADLINE, MAX_REVIEW_BYTES};

use crate::admission::ClientConfig;
use std::path::PathBuf;
use std::time::Duration;

/// Why the webhook server cannot serve. Names files and parts, never
/// their content.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum WebhookError {
    /// The address cannot be listened on.
    #[error("cannot listen for the webhook: {0}")]
    Listen(std::io::ErrorKind),
    /// A certificate file cannot be read.
    #[error("cannot read the webhook certificate {0}: {1}")]
    CertificateFile(&'static str, std::io::ErrorKind),
    /// The certificate or key is unusable.
    #[error("webhook certificate: {0}")]
    Certificate(&'static str),
}

/// Where the serving certificate comes from.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum WebhookTls {
    /// `tls.crt` and `tls.key` in a directory, looked at again every
    /// interval and reloaded when they change.
    Directory(PathBuf, Duration),
    /// Made at start (development and tests).
    SelfSigned(SelfSigned),
}

impl WebhookTls {
    /// The files in `dir`, looked at every second.
    pub fn directory(dir: impl Into<PathBuf>) -> Self {
        WebhookTls::Directory(dir.into(), Duration::from_secs(1))
    }

    /// A new development CA and serving certificate for `names` (and
    /// loopback).
    pub fn self_signed(names: &[String]) -> Result<Self, WebhookError> {
        Ok(WebhookTls::SelfSigned(SelfSigned::new(names)?))
    }

    /// With self-signed certificates, how the API server reaches the
    /// server at `base` (`https://127.0.0.1:9443`), trusting its CA;
    /// `None` for certificates from a directory (their CA is not known
    /// here).
    pub fn client_config(&self, base: &str) -> Option<ClientConfig> {
        match self {
            WebhookTls::SelfSigned(made) => Some(ClientConfig::Url {
                base: base.to_string(),
                ca_bundle: made.ca_pem().to_string(),
            }),
            WebhookTls::Directory(..) => None,
        }
    }
}
