//! A TLS client for the webhook server's tests: one HTTP/1.1 request per
//! connection, trusting only the CA the test made.

use blue_kubernetes::runner::webhook::WebhookServer;
use rustls::pki_types::{CertificateDer, ServerName};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A TLS connector trusting the certificates in `ca_pem` alone.
pub fn connector(ca_pem: &str) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(ca_pem.as_bytes()) {
        let cert: CertificateDer<'static> = cert.unwrap();
        roots.add(cert).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    TlsConnector::from(Arc::new(config))
}

/// Sends one HTTP/1.1 request and reads the answer: (status, body); an
/// error when the handshake fails (an untrusted certificate).
pub async fn post(
    server: &WebhookServer,
    ca_pem: &str,
    method: &str,
    path: &str,
    body: &[u8],
) -> std::io::Result<(u16, String)> {
    let stream = TcpStream::connect(server.address()).await?;
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = connector(ca_pem).connect(name, stream).await?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes()).await?;
    // A refused body may close the connection before all is written.
    let _ = tls.write_all(body).await;
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer).to_string();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    Ok((status, body))
}
