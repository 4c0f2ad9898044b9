//! The admission webhook against what should not reach it: hostile
//! clients of the operator process's webhook port, and a connection
//! Secret's value planted where a package could try to show it.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use base64::{engine::general_purpose::STANDARD, Engine};
use blue_kubernetes::admission::FailurePolicy;
use rustls::pki_types::{pem::PemObject, CertificateDer, ServerName};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::admission::{bad_keys, refused, start_with_webhook, CONFIGURATION, PLANTED};
use super::{manifest, World};

/// The webhook's URL and CA, as the operator registered them.
fn registered(w: &World) -> Result<(String, String)> {
    let found = w
        .kube
        .get("validatingwebhookconfiguration", CONFIGURATION)?;
    let client = &found.context("no configuration")?["webhooks"][0]["clientConfig"];
    let url = client["url"].as_str().context("no url")?.to_string();
    let ca = STANDARD.decode(client["caBundle"].as_str().context("no caBundle")?)?;
    Ok((url, String::from_utf8(ca)?))
}

fn connector(ca_pem: &str) -> Result<tokio_rustls::TlsConnector> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// One request over TLS: the status code (0 when the connection was
/// closed without an answer).
async fn send(address: &str, ca: &str, head: &str, body: &[u8]) -> Result<u16> {
    let stream = TcpStream::connect(address).await?;
    let name = ServerName::try_from("127.0.0.1")?;
    let mut tls = connector(ca)?.connect(name, stream).await?;
    tls.write_all(head.as_bytes()).await?;
    let _ = tls.write_all(body).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), tls.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer);
    Ok(text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0))
}

fn post(path: &str, length: usize) -> String {
    format!("POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {length}\r\nconnection: close\r\n\r\n")
}

#[test]
fn admission_hostile_clients_of_the_operators_webhook_get_an_error_and_it_keeps_serving(
) -> Result<()> {
    crate::support::run(World::on_own_control_plane("adm")?, None, |w| {
        start_with_webhook(w, "Fail")?;
        let (url, ca) = registered(w)?;
        let rest = url.strip_prefix("https://").context("not https")?;
        let (address, path) = rest.split_once('/').context("no path")?;
        let path = format!("/{path}");
        let runtime = tokio::runtime::Runtime::new()?;
        runtime.block_on(async {
            // A slow client holds a connection open the whole time.
            let _idle = TcpStream::connect(address).await?;
            let malformed = b"{\"apiVersion\": ";
            let status = send(address, &ca, &post(&path, malformed.len()), malformed).await?;
            ensure!(status == 400, "malformed JSON: {status}");
            let wrong_kind = json!({
                "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": {"uid": "1", "operation": "CREATE",
                    "resource": {"group": "", "version": "v1", "resource": "secrets"},
                    "object": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}}
            })
            .to_string();
            let head = post(&path, wrong_kind.len());
            ensure!(send(address, &ca, &head, wrong_kind.as_bytes()).await? == 200);
            let no_old = json!({
                "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": {"uid": "2", "operation": "UPDATE",
                    "resource": {"group": "examples.blue.dev", "version": "v1alpha1", "resource": "localconfigmaps"},
                    "object": {"apiVersion": "examples.blue.dev/v1alpha1", "kind": "LocalConfigMap",
                        "metadata": {"name": "x", "namespace": "n"}, "spec": {}}}
            })
            .to_string();
            let head = post(&path, no_old.len());
            ensure!(send(address, &ca, &head, no_old.as_bytes()).await? == 200);
            let huge = vec![b' '; 8 * 1024 * 1024];
            let status = send(address, &ca, &post(&path, huge.len()), &huge).await?;
            ensure!(matches!(status, 413 | 0), "huge body: {status}");
            Ok(())
        })?;
        ensure!(w.operator()?.is_running(), "the operator died");
        let stderr = refused(w, "bad", bad_keys())?;
        ensure!(stderr.contains("config.data keys must be"), "{stderr}");
        Ok(())
    })
}

#[test]
fn admission_a_planted_connection_secret_value_never_reaches_a_denial() -> Result<()> {
    crate::support::run(World::on_own_control_plane("adm")?, None, |w| {
        use blue_kubernetes::package::{UserFacingMessage, WorkflowOutcome};
        use blue_kubernetes::{controller, Config, Observation, Package, ResourceSchema};
        let runtime = tokio::runtime::Runtime::new()?;
        let _inside = runtime.enter();
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "alpha"},
            "stringData": {"password": PLANTED}});
        w.kube.apply(&secret.to_string())?;
        // A careless package: its refusal shows whatever connection value
        // it can read, and the whole config in a log-only message.
        let schema = ResourceSchema::new(local_configmap_operator::package::descriptor());
        let careless = Package::builder(schema.connection_secret())
            .validate_async(|opts| async move {
                let password = match opts.connection() {
                    Some(c) => c
                        .get("password")
                        .await
                        .ok()
                        .flatten()
                        .map(|p| p.into_inner()),
                    None => None,
                };
                let mut errors = blue_kubernetes::package::ValidationErrors::new();
                errors.push(format!("config {:?}", opts.as_map()));
                let text = format!("refused; password {}", password.unwrap_or_default());
                errors.push_user_facing(UserFacingMessage::new(text));
                Ok(errors)
            })
            .identity(|opts| Ok(vec![Some(opts.profile().to_string())]))
            .observe(|_| Ok(Observation::ABSENT))
            .converge(|_| Ok(WorkflowOutcome::new()))
            .delete(|_| Ok(WorkflowOutcome::new()))
            .build()?;
        let mut config = Config::new(w.envtest().client()?, vec![careless]);
        config.namespace = w.kube.namespace().into();
        let controller = controller(config)?;
        let webhook = w
            .envtest()
            .serve_webhook(&controller, "careless", FailurePolicy::Fail)?;
        let spec = json!({"config": {"data": {"k": "v"}}});
        let run = w
            .kube
            .run(&["apply", "-f", "-"], Some(&manifest("alpha", spec)))?;
        ensure!(!run.ok, "admitted");
        ensure!(run.stderr.contains("refused; password"), "{}", run.stderr);
        ensure!(!run.stderr.contains(PLANTED), "{}", run.stderr);
        webhook.uninstall()?;
        Ok(())
    })
}
