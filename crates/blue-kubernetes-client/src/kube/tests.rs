//! The kube transport against a fake server: a `kube::Client` built on a
//! tower service that records each request and answers from a script.

use super::*;
use crate::{ApiPath, ApiRequest, Client, ErrorKind, RawApi, ResourceDescriptor};
use crate::{WatchEvent, WatchRequest};
use http_body_util::{Full, StreamBody};
use hyper::body::Frame;
use serde_json::{json, Value};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// In the body of every refusal below: it must never reach an error.
const MARKER: &str = "hunter2-from-the-body";

/// One request as the fake server saw it.
#[derive(Debug)]
struct Seen {
    method: String,
    target: String,
    content_type: String,
    host: Option<String>,
    body: Value,
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// A client whose every request is answered `status` with `body`.
fn answering(status: u16, body: Value) -> (KubeClient, Log) {
    let log = Log::default();
    let seen = log.clone();
    let service = tower::service_fn(move |request: http::Request<Body>| {
        let (seen, body) = (seen.clone(), body.to_string());
        async move {
            record(&seen, request).await;
            let response = http::Response::builder()
                .status(status)
                .body(Full::new(Bytes::from(body)))
                .expect("a valid response");
            Ok::<_, Infallible>(response)
        }
    });
    (KubeClient::new(kube::Client::new(service, "default")), log)
}

async fn record(log: &Log, request: http::Request<Body>) {
    let (parts, body) = request.into_parts();
    let header = |name| {
        parts
            .headers
            .get(name)
            .map(|v: &http::HeaderValue| v.to_str().unwrap_or_default().to_string())
    };
    let body = body.collect_bytes().await.unwrap_or_default();
    log.lock().unwrap().push(Seen {
        method: parts.method.to_string(),
        target: parts.uri.to_string(),
        content_type: header(http::header::CONTENT_TYPE).unwrap_or_default(),
        host: header(http::header::HOST),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
}

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

fn widget() -> Value {
    json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "dev", "uid": "u-1", "resourceVersion": "7"},
    })
}

fn status(reason: &str, code: u16, details: Value) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
        "reason": reason, "message": format!("the object was modified: {MARKER}"),
        "details": details,
    })
}

fn assert_no_body_text(error: &Error) {
    for shown in [error.to_string(), format!("{error:?}")] {
        assert!(!shown.contains(MARKER), "body text in {shown}");
        assert!(!shown.contains("modified"), "body text in {shown}");
    }
}

#[tokio::test]
async fn a_stale_status_write_is_a_conflict_without_the_body() {
    let (client, log) = answering(409, status("Conflict", 409, json!({"name": "w"})));
    let error = client
        .update_status(&widgets(), &widget(), &json!({"phase": "Ready"}))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Conflict);
    assert_eq!(error.http_status(), Some(409));
    assert_eq!(error.operation(), Some("PUT"));
    assert_no_body_text(&error);

    let seen = log.lock().unwrap();
    let [put] = &seen[..] else {
        panic!("one request expected: {seen:?}")
    };
    assert_eq!(put.method, "PUT");
    assert_eq!(
        put.target,
        "/apis/example.com/v1/namespaces/dev/widgets/w/status"
    );
    assert_eq!(put.content_type, "application/json");
    assert_eq!(put.body["metadata"]["resourceVersion"], "7", "guarded");
    assert_eq!(put.body["status"]["phase"], "Ready");
    assert_eq!(put.host, None, "the proxy's Host header is not sent");
}

#[tokio::test]
async fn the_finalizer_write_is_a_guarded_merge_patch() {
    let (client, log) = answering(200, widget());
    let stored = client
        .update_finalizers(&widgets(), &widget(), &["example.com/cleanup".into()])
        .await
        .unwrap();
    assert_eq!(stored["metadata"]["uid"], "u-1");
    let seen = log.lock().unwrap();
    assert_eq!(seen[0].method, "PATCH");
    assert_eq!(seen[0].content_type, "application/merge-patch+json");
    assert_eq!(
        seen[0].body,
        json!({"metadata": {"resourceVersion": "7", "finalizers": ["example.com/cleanup"]}})
    );
}

#[tokio::test]
async fn a_cached_read_asks_the_watch_cache_and_a_plain_one_does_not() {
    let object = json!({"metadata": {"name": "w", "resourceVersion": "7"}});
    let (client, log) = answering(200, object.clone());
    let cached = client.get_resource_cached(&widgets(), "dev", "w").await;
    assert_eq!(cached.unwrap(), Some(object.clone()));
    client.get_resource(&widgets(), "dev", "w").await.unwrap();
    let seen = log.lock().unwrap();
    assert!(
        seen[0].target.ends_with("/widgets/w?resourceVersion=0"),
        "{}",
        seen[0].target
    );
    assert!(seen[1].target.ends_with("/widgets/w"), "{}", seen[1].target);
}

#[tokio::test]
async fn only_a_missing_object_reads_as_absent() {
    let (client, _) = answering(404, status("NotFound", 404, json!({"name": "w"})));
    let found = client.get_resource(&widgets(), "dev", "w").await.unwrap();
    assert_eq!(found, None);

    let (client, _) = answering(404, status("NotFound", 404, json!({})));
    let error = client
        .get_resource(&widgets(), "dev", "w")
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotFound, "a missing type fails");
    assert_no_body_text(&error);
}

#[tokio::test]
async fn a_raw_refusal_is_classified_by_its_reason() {
    for (code, reason, kind) in [
        (403, "Forbidden", ErrorKind::Forbidden),
        (422, "Invalid", ErrorKind::Invalid),
        (409, "AlreadyExists", ErrorKind::Other),
        (503, "ServiceUnavailable", ErrorKind::Unavailable),
    ] {
        let (client, _) = answering(code, status(reason, code, json!({})));
        let path = ApiPath::parse("/api/v1/namespaces/dev/secrets/s").unwrap();
        let error = client.send(ApiRequest::get(path)).await.unwrap_err();
        assert_eq!(error.kind(), kind, "{reason}");
        assert_no_body_text(&error);
    }
}

#[tokio::test]
async fn a_list_page_carries_its_limit_and_version() {
    let list =
        json!({"metadata": {"resourceVersion": "42", "continue": "next"}, "items": [widget()]});
    let (client, log) = answering(200, list);
    let page = client
        .list_page(&widgets(), "", &crate::PageRequest::first(5))
        .await
        .unwrap();
    assert_eq!(page.resource_version.as_deref(), Some("42"));
    assert_eq!(page.continue_token.as_deref(), Some("next"));
    assert_eq!(page.items.len(), 1);
    assert_eq!(
        log.lock().unwrap()[0].target,
        "/apis/example.com/v1/widgets?limit=5"
    );
}

#[tokio::test]
async fn a_selected_list_page_and_watch_carry_the_encoded_selector() {
    let list = json!({"metadata": {"resourceVersion": "42"}, "items": []});
    let (client, log) = answering(200, list);
    let page = crate::PageRequest::first(5).with_label_selector("example.com/owner=a");
    client.list_page(&widgets(), "", &page).await.unwrap();
    let request = WatchRequest {
        resource_version: "42".into(),
        timeout_seconds: 60,
        ..WatchRequest::default()
    }
    .with_label_selector("!paused");
    // The answer is no stream, but the request was already sent.
    let _ = client.watch(&widgets(), "dev", &request).await;
    let log = log.lock().unwrap();
    assert_eq!(
        log[0].target,
        "/apis/example.com/v1/widgets?limit=5&labelSelector=example.com%2Fowner%3Da"
    );
    assert_eq!(
        log[1].target,
        "/apis/example.com/v1/namespaces/dev/widgets\
         ?watch=1&resourceVersion=42&timeoutSeconds=60&labelSelector=%21paused"
    );
}

#[tokio::test]
async fn a_watch_yields_each_event_as_it_arrives() {
    let (lines, chunks) = mpsc::unbounded_channel::<String>();
    let chunks = Arc::new(Mutex::new(Some(chunks)));
    let log = Log::default();
    let seen = log.clone();
    let service = tower::service_fn(move |request: http::Request<Body>| {
        let (seen, chunks) = (seen.clone(), chunks.lock().unwrap().take());
        async move {
            record(&seen, request).await;
            let frames = futures::stream::unfold(chunks.expect("one watch"), |mut rx| async {
                let line = rx.recv().await?;
                Some((Ok::<_, Infallible>(Frame::data(Bytes::from(line))), rx))
            });
            Ok::<_, Infallible>(http::Response::new(StreamBody::new(frames)))
        }
    });
    let client = KubeClient::new(kube::Client::new(service, "default"));
    let request = WatchRequest {
        resource_version: "42".into(),
        timeout_seconds: 60,
        bookmarks: true,
        label_selector: None,
    };
    let mut events = client.watch(&widgets(), "dev", &request).await.unwrap();
    let modified = json!({"type": "MODIFIED", "object": widget()}).to_string();
    lines.send(format!("{modified}\n")).unwrap();
    let first = events.next().await.unwrap().unwrap();
    assert!(matches!(first, WatchEvent::Modified(_)), "{first:?}");
    lines.send(format!("{modified}\n")).unwrap();
    assert!(events.next().await.unwrap().is_ok());
    drop(lines);
    assert!(events.next().await.is_none(), "the server ended it");
    assert_eq!(
        log.lock().unwrap()[0].target,
        "/apis/example.com/v1/namespaces/dev/widgets\
         ?watch=1&resourceVersion=42&timeoutSeconds=60&allowWatchBookmarks=true"
    );
}

#[tokio::test]
async fn an_expired_watch_version_is_gone() {
    let (client, _) = answering(410, status("Expired", 410, json!({})));
    let request = WatchRequest {
        resource_version: "1".into(),
        timeout_seconds: 60,
        bookmarks: false,
        label_selector: None,
    };
    let error = client.watch(&widgets(), "dev", &request).await.err();
    let error = error.expect("a refused watch fails");
    assert_eq!(error.kind(), ErrorKind::Gone);
    assert_no_body_text(&error);
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_request_passes_its_deadline() {
    let service = tower::service_fn(|_: http::Request<Body>| {
        futures::future::pending::<Result<http::Response<Full<Bytes>>, Infallible>>()
    });
    let client = KubeClient::new(kube::Client::new(service, "default"))
        .with_request_timeout(Duration::from_millis(250));
    let error = client
        .get_resource(&widgets(), "dev", "w")
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::Timeout { operation, timeout_ms: 250 } if operation == "kube GET"),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_connection_that_fails_is_unavailable_and_quotes_nothing() {
    let service = tower::service_fn(|_: http::Request<Body>| async {
        Err::<http::Response<Full<Bytes>>, _>(std::io::Error::other(MARKER))
    });
    let client = KubeClient::new(kube::Client::new(service, "default"));
    let error = client
        .get_resource(&widgets(), "dev", "w")
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert!(matches!(error, Error::Kube { .. }), "{error:?}");
    assert_no_body_text(&error);
}

#[test]
fn debug_shows_no_configuration() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let _inside = runtime.enter();
    let (client, _) = answering(200, json!({}));
    let shown = format!("{client:?}");
    assert!(
        shown.starts_with("KubeClient") && shown.contains("30s"),
        "{shown}"
    );
}
