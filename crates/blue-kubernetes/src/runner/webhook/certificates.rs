//! The serving certificate the TLS handshake presents: loaded from PEM,
//! swapped in place when a new one is loaded, so a replaced certificate
//! reaches the next handshake without a restart.

use super::WebhookError;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::{Arc, RwLock};

/// The certificate every handshake presents, replaceable while serving.
#[derive(Debug)]
pub(crate) struct Certificates {
    current: RwLock<Arc<CertifiedKey>>,
}

impl Certificates {
    pub(crate) fn new(key: CertifiedKey) -> Self {
        Self {
            current: RwLock::new(Arc::new(key)),
        }
    }

    /// The next handshakes present `key`.
    pub(crate) fn replace(&self, key: CertifiedKey) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(key);
    }
}

impl ResolvesServerCert for Certificates {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        )
    }
}

/// A certificate chain and its private key, from PEM (`tls.crt` and
/// `tls.key`). The error names the part, never its content.
pub(crate) fn certified_key(
    chain_pem: &[u8],
    key_pem: &[u8],
) -> Result<CertifiedKey, WebhookError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain_pem)
        .collect::<Result<_, _>>()
        .map_err(|_| WebhookError::Certificate("tls.crt is not a PEM certificate chain"))?;
    if chain.is_empty() {
        return Err(WebhookError::Certificate("tls.crt holds no certificate"));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|_| WebhookError::Certificate("tls.key is not a PEM private key"))?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|_| WebhookError::Certificate("tls.key is not a supported private key"))?;
    let key = CertifiedKey::new(chain, signer);
    match key.keys_match() {
        Ok(()) => Ok(key),
        Err(_) => Err(WebhookError::Certificate(
            "tls.key does not belong to the certificate in tls.crt",
        )),
    }
}

/// The TLS configuration of the server: HTTP/1.1, no client certificates,
/// ring as the crypto provider (whatever provider the process installed).
pub(crate) fn server_config(
    certificates: Arc<Certificates>,
) -> Result<rustls::ServerConfig, WebhookError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|_| WebhookError::Certificate("no TLS protocol version available"))?
        .with_no_client_auth()
        .with_cert_resolver(certificates);
    // The API server speaks HTTP/1.1 to webhooks (h2 only to loopback
    // URLs from 1.30 on).
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    // Its client keeps no session cache, so a handshake never resumes:
    // no tickets to make, send and remember for it.
    config.send_tls13_tickets = 0;
    config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    Ok(config)
}
