//! Watches through the proxy transport against a fake proxy that streams
//! its answer: the request, incremental decoding, errors, and that a watch
//! has a connection of its own.

mod common;
mod fake_proxy;

use blue_kubernetes_client::{
    ApiPath, ApiRequest, Client, Error, ErrorKind, RawApi, ResourceDescriptor, WatchEvent,
    WatchRequest,
};
use fake_proxy::{status, Answer, Fake, MARKER};
use futures::StreamExt;
use serde_json::json;
use std::time::Duration;

const WATCH: &str = "/apis/example.com/v1/namespaces/dev/widgets?watch=1&resourceVersion=10&timeoutSeconds=30&allowWatchBookmarks=true";

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

fn from_10() -> WatchRequest {
    WatchRequest {
        resource_version: "10".into(),
        timeout_seconds: 30,
        bookmarks: true,
        label_selector: None,
    }
}

fn line(kind: &str, name: &str, rv: u32) -> String {
    let object = json!({"metadata": {"name": name, "resourceVersion": rv.to_string()}});
    json!({"type": kind, "object": object}).to_string() + "\n"
}

fn assert_clean(err: &Error) {
    for shown in [err.to_string(), format!("{err:?}")] {
        assert!(!shown.contains(MARKER), "marker leaked into {shown}");
    }
}

/// Waits for something the other side does promptly; the bound only keeps
/// a broken implementation from hanging the test run.
async fn soon<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_yields_each_event_as_its_line_arrives() {
    let fake = Fake::start();
    fake.answer(WATCH, Answer::Stream);
    let client = fake.client(|_| {});
    let mut events = client.watch(&widgets(), "dev", &from_10()).await.unwrap();
    let server = fake.stream(0);

    let added = line("ADDED", "a", 11);
    let (head, tail) = added.split_at(12);
    server.send(head);
    server.send(&format!("{tail}{}", line("MODIFIED", "a", 12)));
    let bookmark =
        r#"{"type":"BOOKMARK","object":{"kind":"Widget","metadata":{"resourceVersion":"15"}}}"#;
    server.send(&bookmark[..20]);
    match events.next().await.unwrap().unwrap() {
        WatchEvent::Added(object) => assert_eq!(object["metadata"]["name"], "a"),
        other => panic!("expected ADDED, got {other:?}"),
    }
    let modified = events.next().await.unwrap().unwrap();
    assert!(matches!(modified, WatchEvent::Modified(_)));
    assert_eq!(modified.resource_version(), Some("12"));
    server.send(&format!(
        "{}\n{}",
        &bookmark[20..],
        line("DELETED", "a", 16)
    ));
    assert_eq!(
        events.next().await.unwrap().unwrap(),
        WatchEvent::Bookmark {
            resource_version: "15".into()
        }
    );
    assert!(matches!(
        events.next().await.unwrap().unwrap(),
        WatchEvent::Deleted(_)
    ));
    drop(server);
    assert!(events.next().await.is_none(), "the server ended the watch");

    let seen = fake.seen();
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("GET", WATCH)
    );
    assert_eq!(client.stats().await.watches, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookmarks_are_only_asked_for_when_wanted() {
    let fake = Fake::start();
    let plain =
        "/apis/example.com/v1/namespaces/dev/widgets?watch=1&resourceVersion=10&timeoutSeconds=30";
    fake.answer(plain, Answer::Stream);
    let client = fake.client(|_| {});
    let request = WatchRequest {
        bookmarks: false,
        ..from_10()
    };
    let _events = client.watch(&widgets(), "dev", &request).await.unwrap();
    assert_eq!(fake.seen()[0].path, plain);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_version_ends_the_watch_with_gone_and_closes_it() {
    let fake = Fake::start();
    fake.answer(WATCH, Answer::Stream);
    let client = fake.client(|_| {});
    let mut events = client.watch(&widgets(), "dev", &from_10()).await.unwrap();
    let server = fake.stream(0);
    let expired = json!({"type": "ERROR", "object": serde_json::from_str::<serde_json::Value>(&status("Expired", 410)).unwrap()});
    server.send(&format!(
        "{}{expired}\n{}",
        line("ADDED", "a", 11),
        line("ADDED", "b", 12)
    ));
    assert!(events.next().await.unwrap().is_ok());
    let err = events.next().await.unwrap().unwrap_err();
    assert_eq!(
        (err.kind(), err.http_status()),
        (ErrorKind::Gone, Some(410))
    );
    assert_clean(&err);
    assert!(events.next().await.is_none(), "the error is the last item");
    soon("closing the watch connection", server.closed()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_error_events_and_undecodable_lines_are_classified_cleanly() {
    let fake = Fake::start();
    fake.answer(WATCH, Answer::Stream);
    let client = fake.client(|_| {});

    let mut events = client.watch(&widgets(), "dev", &from_10()).await.unwrap();
    let forbidden = json!({"type": "ERROR", "object": serde_json::from_str::<serde_json::Value>(&status("Forbidden", 403)).unwrap()});
    fake.stream(0).send(&format!("{forbidden}\n"));
    let err = events.next().await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    assert_clean(&err);

    let mut events = client.watch(&widgets(), "dev", &from_10()).await.unwrap();
    fake.stream(1)
        .send(&format!("{{\"type\":\"ADDED\",\"object\":{MARKER}\n"));
    let err = events.next().await.unwrap().unwrap_err();
    assert!(matches!(err, Error::Decode { .. }));
    assert_clean(&err);
    assert!(events.next().await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_connection_ends_the_watch_as_unavailable() {
    let fake = Fake::start();
    fake.answer(WATCH, Answer::Stream);
    let client = fake.client(|_| {});
    let mut events = client.watch(&widgets(), "dev", &from_10()).await.unwrap();
    let server = fake.stream(0);
    server.send(&line("ADDED", "a", 11));
    assert!(events.next().await.unwrap().is_ok());
    server.send(r#"{"type":"ADDED","obj"#);
    server.break_connection();
    let err = events.next().await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_clean(&err);
    assert!(events.next().await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_watch_is_classified_from_its_status() {
    let fake = Fake::start();
    fake.answer(WATCH, Answer::Reply(410, status("Expired", 410)));
    let forbidden = "/apis/example.com/v1/namespaces/team/widgets?watch=1&resourceVersion=10&timeoutSeconds=30&allowWatchBookmarks=true";
    fake.answer(forbidden, Answer::Reply(403, status("Forbidden", 403)));
    let client = fake.client(|_| {});
    let Err(err) = client.watch(&widgets(), "dev", &from_10()).await else {
        panic!("a 410 answer is not a watch");
    };
    assert_eq!(
        (err.kind(), err.http_status()),
        (ErrorKind::Gone, Some(410))
    );
    assert_clean(&err);
    let Err(err) = client.watch(&widgets(), "team", &from_10()).await else {
        panic!("a 403 answer is not a watch");
    };
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    assert_clean(&err);
    // Refusals are answers: the proxy is fine, requests go on.
    assert!(client
        .send(ApiRequest::get(ApiPath::parse("/api/v1/x").unwrap()))
        .await
        .is_ok());
    assert_eq!(client.stats().await.watches, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_watch_leaves_the_keep_alive_connections_to_requests() {
    let fake = Fake::start();
    fake.answer(WATCH, Answer::Stream);
    let client = fake.client(|_| {});
    let mut events = client.watch(&widgets(), "dev", &from_10()).await.unwrap();
    let server = fake.stream(0);
    for _ in 0..5 {
        let answer = client
            .send(ApiRequest::get(
                ApiPath::parse("/api/v1/namespaces/dev/configmaps/a").unwrap(),
            ))
            .await
            .unwrap();
        assert_eq!(answer.status, 200);
    }
    server.send(&line("MODIFIED", "a", 11));
    assert!(
        events.next().await.unwrap().is_ok(),
        "the watch still streams"
    );
    let stats = client.stats().await;
    assert_eq!((stats.connections, stats.watches), (1, 1));
    // The startup probe, the watch's own connection, one keep-alive one.
    assert_eq!(fake.connections(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_watch_closes_its_connection() {
    let fake = Fake::start();
    fake.answer(WATCH, Answer::Stream);
    let client = fake.client(|_| {});
    let events = client.watch(&widgets(), "dev", &from_10()).await.unwrap();
    let server = fake.stream(0);
    assert!(server.send(&line("ADDED", "a", 11)));
    drop(events);
    soon("closing the dropped watch's connection", server.closed()).await;
    assert!(!server.send(&line("ADDED", "b", 12)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_whose_answer_never_comes_times_out() {
    let fake = Fake::start();
    fake.answer(WATCH, Answer::Hang);
    let client = fake.client(|o| o.kubectl.request_timeout_seconds = 1);
    let Err(err) = client.watch(&widgets(), "dev", &from_10()).await else {
        panic!("no answer is not a watch");
    };
    assert!(
        matches!(
            err,
            Error::Timeout {
                timeout_ms: 1000,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_the_server_would_never_end_is_refused() {
    let fake = Fake::start();
    let client = fake.client(|_| {});
    let request = WatchRequest {
        timeout_seconds: 0,
        ..from_10()
    };
    let Err(err) = client.watch(&widgets(), "dev", &request).await else {
        panic!("refused");
    };
    assert!(matches!(
        err,
        Error::InvalidOption {
            field: "timeout_seconds",
            ..
        }
    ));
    let Err(err) = client.watch(&widgets(), "a/b", &from_10()).await else {
        panic!("refused");
    };
    assert!(matches!(
        err,
        Error::InvalidOption {
            field: "namespace",
            ..
        }
    ));
    assert!(fake.seen().is_empty());
}
