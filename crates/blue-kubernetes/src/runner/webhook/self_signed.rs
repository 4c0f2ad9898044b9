//! Certificates made at start for development and tests: a CA of the
//! process's own and a serving certificate it signs, for the names the
//! API server dials (a Service's DNS names, `localhost`, `127.0.0.1`).

use super::WebhookError;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// A development CA and the serving certificate it signed, in PEM. The
/// CA bundle goes into the webhook configuration (`caBundle`); the
/// certificate and key serve.
///
/// ```
/// # #[cfg(feature = "webhook")] {
/// use blue_kubernetes::runner::webhook::SelfSigned;
/// let made = SelfSigned::new(&["widget-operator.ops.svc".to_string()]).unwrap();
/// assert!(made.ca_pem().starts_with("-----BEGIN CERTIFICATE-----"));
/// # }
/// ```
#[derive(Clone)]
pub struct SelfSigned {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

impl std::fmt::Debug for SelfSigned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelfSigned").finish_non_exhaustive()
    }
}

impl SelfSigned {
    /// A new CA and a serving certificate for `names` (DNS names or IP
    /// addresses) plus `localhost` and `127.0.0.1`, for loopback URLs.
    pub fn new(names: &[String]) -> Result<Self, WebhookError> {
        let failed = |_| WebhookError::Certificate("making the development certificates failed");
        let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        ca.distinguished_name
            .push(DnType::CommonName, "blue-kubernetes webhook CA");
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().map_err(failed)?)
            .map_err(failed)?;
        let mut sans: Vec<String> = names.to_vec();
        sans.extend(["localhost".to_string(), "127.0.0.1".to_string()]);
        let mut serving = CertificateParams::new(sans).map_err(failed)?;
        serving
            .distinguished_name
            .push(DnType::CommonName, "blue-kubernetes webhook");
        serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().map_err(failed)?;
        let cert = serving.signed_by(&key, &ca).map_err(failed)?;
        Ok(Self {
            ca_pem: ca.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// The CA certificate, PEM: the webhook configuration's `caBundle`.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The serving certificate, PEM (`tls.crt`).
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The serving certificate's private key, PEM (`tls.key`).
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }
}
