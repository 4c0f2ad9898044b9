//! The admission webhook's HTTPS server: reviews answered over TLS with
//! the package's verdict, hostile clients refused without harm to the
//! others, certificate files replaced while it runs picked up, and
//! controller-runtime's metrics.

mod https_client;

use blue_kubernetes::admission::Admission;
use blue_kubernetes::package::{UserFacingMessage, ValidationErrors, WorkflowOutcome};
use blue_kubernetes::runner::webhook::{SelfSigned, WebhookServer, WebhookTls, MAX_REVIEW_BYTES};
use blue_kubernetes::{Observation, Package};
use blue_kubernetes_client::ResourceDescriptor;
use blue_testkit::TestOperator;
use https_client::{connector, post};
use rustls::pki_types::ServerName;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

fn operator() -> TestOperator {
    let package = Package::builder(widgets())
        .validate(|opts| {
            Ok(match opts.get("size").and_then(Value::as_u64) {
                Some(1..=64) => ValidationErrors::new(),
                _ => UserFacingMessage::new("must be 1..=64")
                    .with_field("spec.config.size")
                    .into(),
            })
        })
        .identity(|opts| Ok(vec![Some(opts.profile().to_string())]))
        .observe(|_| Ok(Observation::ABSENT))
        .converge(|_| Ok(WorkflowOutcome::new()))
        .delete(|_| Ok(WorkflowOutcome::new()))
        .build()
        .unwrap();
    TestOperator::new(package)
}

fn review(size: u64) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1", "operation": "CREATE", "namespace": "default",
            "resource": {"group": "example.com", "version": "v1", "resource": "widgets"},
            "object": {
                "apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w", "namespace": "default"},
                "spec": {"config": {"size": size}}
            }
        }
    }))
    .unwrap()
}

async fn serve(op: &TestOperator, tls: &WebhookTls) -> WebhookServer {
    let address = "127.0.0.1:0".parse().unwrap();
    WebhookServer::serve(address, op.admission(), tls)
        .await
        .unwrap()
}

#[tokio::test]
async fn reviews_are_answered_over_https_with_the_packages_verdict_and_counted() {
    let op = operator();
    let made = SelfSigned::new(&[]).unwrap();
    let server = serve(&op, &WebhookTls::SelfSigned(made.clone())).await;
    let path = Admission::path_of(&widgets());
    let (status, body) = post(&server, made.ca_pem(), "POST", &path, &review(99))
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["response"]["uid"], "u-1");
    assert_eq!(answer["response"]["allowed"], false);
    assert_eq!(
        answer["response"]["status"]["details"]["causes"][0]["field"],
        "spec.config.size"
    );
    let (_, body) = post(&server, made.ca_pem(), "POST", &path, &review(3))
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["response"]["allowed"],
        true
    );
    let metrics = op.controller().metrics().encode();
    let counted =
        format!("controller_runtime_webhook_requests_total{{code=\"200\",webhook=\"{path}\"}} 2");
    assert!(metrics.contains(&counted), "{metrics}");
    assert!(metrics.contains("controller_runtime_webhook_latency_seconds_count{webhook=\"/validate/example.com/v1/widgets\"} 2"), "{metrics}");
    assert!(metrics.contains("controller_runtime_webhook_requests_in_flight{webhook=\"/validate/example.com/v1/widgets\"} 0"), "{metrics}");
    server.stop().await;
}

#[tokio::test]
async fn hostile_clients_get_an_error_or_a_closed_connection_and_the_server_keeps_serving() {
    let op = operator();
    let made = SelfSigned::new(&[]).unwrap();
    let server = serve(&op, &WebhookTls::SelfSigned(made.clone())).await;
    let ca = made.ca_pem();
    let path = Admission::path_of(&widgets());
    // A slow client: connected, silent, holding its connection.
    let mut idle = TcpStream::connect(server.address()).await.unwrap();
    let (status, _) = post(&server, ca, "POST", &path, b"{malformed")
        .await
        .unwrap();
    assert_eq!(status, 400);
    let (status, _) = post(&server, ca, "GET", &path, b"").await.unwrap();
    assert_eq!(status, 405);
    let (status, _) = post(&server, ca, "POST", "/elsewhere", &review(3))
        .await
        .unwrap();
    assert_eq!(status, 404);
    let huge = vec![b' '; MAX_REVIEW_BYTES + 1];
    let (status, _) = post(&server, ca, "POST", &path, &huge).await.unwrap();
    assert!(matches!(status, 413 | 0), "{status}");
    let plain = b"POST / HTTP/1.1\r\n\r\n";
    let mut not_tls = TcpStream::connect(server.address()).await.unwrap();
    not_tls.write_all(plain).await.unwrap();
    let mut rest = Vec::new();
    let _ = not_tls.read_to_end(&mut rest).await;
    assert!(!String::from_utf8_lossy(&rest).contains("200"));
    let (status, body) = post(&server, ca, "POST", &path, &review(99)).await.unwrap();
    assert_eq!(status, 200, "{body}");
    idle.write_all(b"\x16").await.unwrap();
    let address = server.address();
    server.stop().await;
    // Stopped: the held connection is closed, nothing listens.
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(30), idle.read_to_end(&mut rest)).await;
    assert!(
        closed.is_ok(),
        "the slow client's connection outlived the server"
    );
    assert!(TcpStream::connect(address).await.is_err());
}

fn write_pair(dir: &std::path::Path, made: &SelfSigned) {
    // As a Secret volume changes: the new files appear at once (renamed
    // into place), never half written.
    for (name, pem) in [("tls.crt", made.cert_pem()), ("tls.key", made.key_pem())] {
        let staged = dir.join(format!(".{name}.new"));
        std::fs::write(&staged, pem).unwrap();
        std::fs::rename(&staged, dir.join(name)).unwrap();
    }
}

#[tokio::test]
async fn certificate_files_replaced_while_running_are_picked_up() {
    let op = operator();
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (SelfSigned::new(&[]).unwrap(), SelfSigned::new(&[]).unwrap());
    write_pair(dir.path(), &first);
    let tls = WebhookTls::Directory(dir.path().to_path_buf(), Duration::from_millis(20));
    let server = serve(&op, &tls).await;
    let path = Admission::path_of(&widgets());
    assert!(post(&server, first.ca_pem(), "POST", &path, &review(3))
        .await
        .is_ok());
    assert!(post(&server, second.ca_pem(), "POST", &path, &review(3))
        .await
        .is_err());
    write_pair(dir.path(), &second);
    // Picked up within the reload interval; the deadline only bounds a
    // broken reload.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if post(&server, second.ca_pem(), "POST", &path, &review(3))
            .await
            .is_ok()
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the new certificate was never served"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(post(&server, first.ca_pem(), "POST", &path, &review(3))
        .await
        .is_err());
    server.stop().await;
}

#[tokio::test]
async fn a_directory_without_a_usable_pair_is_an_error_naming_the_file() {
    let op = operator();
    let dir = tempfile::tempdir().unwrap();
    let address = "127.0.0.1:0".parse().unwrap();
    let missing =
        WebhookServer::serve(address, op.admission(), &WebhookTls::directory(dir.path())).await;
    assert_eq!(
        missing.unwrap_err().to_string(),
        "cannot read the webhook certificate tls.crt: entity not found"
    );
    let (a, b) = (SelfSigned::new(&[]).unwrap(), SelfSigned::new(&[]).unwrap());
    std::fs::write(dir.path().join("tls.crt"), a.cert_pem()).unwrap();
    std::fs::write(dir.path().join("tls.key"), b.key_pem()).unwrap();
    let mismatched =
        WebhookServer::serve(address, op.admission(), &WebhookTls::directory(dir.path())).await;
    let message = mismatched.unwrap_err().to_string();
    assert!(message.contains("does not belong"), "{message}");
    assert!(!message.contains("BEGIN"), "{message}");
}

/// One review on an open connection, as the API server sends it (no
/// `connection: close`): the answer's status, or 0 when the server has
/// closed the connection.
async fn review_on<S>(tls: &mut S, path: &str, body: &[u8]) -> u16
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    if tls
        .write_all(&[head.as_bytes(), body].concat())
        .await
        .is_err()
    {
        return 0;
    }
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = tls.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return 0;
        }
        answer.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&answer).to_string();
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            continue;
        };
        let length = head.lines().find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")?
                .parse()
                .ok()
        });
        if length.is_some_and(|length: usize| body.len() >= length) {
            assert!(
                !head.to_ascii_lowercase().contains("connection: close"),
                "{head}"
            );
            return head
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
        }
    }
}

#[tokio::test]
async fn a_connection_idle_between_reviews_outlasts_the_api_servers_90_second_idle_timeout() {
    let op = operator();
    let made = SelfSigned::new(&[]).unwrap();
    let server = serve(&op, &WebhookTls::SelfSigned(made.clone())).await;
    let path = Admission::path_of(&widgets());
    let stream = TcpStream::connect(server.address()).await.unwrap();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = connector(made.ca_pem())
        .connect(name, stream)
        .await
        .unwrap();
    assert_eq!(review_on(&mut tls, &path, &review(3)).await, 200);
    assert_eq!(review_on(&mut tls, &path, &review(99)).await, 200);
    // The API server closes an idle connection after 90 s: until then the
    // server keeps it for the next review.
    tokio::time::pause();
    tokio::time::advance(Duration::from_secs(89)).await;
    tokio::time::resume();
    assert_eq!(
        review_on(&mut tls, &path, &review(3)).await,
        200,
        "the idle connection was closed before the API server's idle timeout"
    );
    server.stop().await;
}
