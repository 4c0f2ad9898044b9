//! The proxy transport's requests against a fake proxy: keep-alive reuse,
//! classification, deadlines, the four controller operations, path
//! validation and secret hygiene.

mod common;
mod fake_proxy;

use blue_kubernetes_client::{
    ApiPath, ApiRequest, Client, Error, ErrorKind, Method, PatchType, RawApi, ResourceDescriptor,
};
use fake_proxy::{status, Answer, Fake, MARKER};
use serde_json::json;
use std::time::Duration;

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

fn get(path: &str) -> ApiRequest {
    ApiRequest::get(ApiPath::parse(path).unwrap())
}

fn assert_clean(err: &Error) {
    for shown in [err.to_string(), format!("{err:?}")] {
        assert!(!shown.contains(MARKER), "marker leaked into {shown}");
        assert!(!shown.contains("hunter2"), "marker leaked into {shown}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_requests_reuse_one_keep_alive_connection() {
    let fake = Fake::start();
    let client = fake.client(|_| {});
    for _ in 0..10 {
        let answer = client
            .send(get("/api/v1/namespaces/dev/configmaps/a"))
            .await
            .unwrap();
        assert_eq!(answer.status, 200);
        assert_eq!(
            answer.body.unwrap()["path"],
            "/api/v1/namespaces/dev/configmaps/a"
        );
    }
    // The startup probe's connection, then one keep-alive connection.
    assert_eq!(fake.connections(), 2);
    let stats = client.stats().await;
    assert_eq!((stats.starts, stats.connections), (1, 1));
    // The proxy was started once, with the client's context and a socket in
    // a private directory under temp_dir.
    let argv = fake.argv();
    assert_eq!(argv.len(), 1);
    let dir = client.socket_dir().await.unwrap();
    assert_eq!(
        argv[0],
        format!(
            "--context fake-ctx proxy --unix-socket={}/api.sock",
            dir.display()
        )
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_use_separate_connections_then_reuse_them() {
    let fake = Fake::start();
    let client = fake.client(|_| {});
    let first = client.send(get("/api/v1/a"));
    let second = client.send(get("/api/v1/b"));
    let (a, b) = tokio::join!(first, second);
    assert!(a.is_ok() && b.is_ok());
    let after_burst = fake.connections();
    assert!((2..=3).contains(&after_burst), "probe + 1 or 2");
    for _ in 0..5 {
        client.send(get("/api/v1/a")).await.unwrap();
    }
    assert_eq!(fake.connections(), after_burst);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_errors_are_classified_from_status_and_reason() {
    let fake = Fake::start();
    let cases = [
        (
            "conflict",
            409,
            status("Conflict", 409),
            ErrorKind::Conflict,
        ),
        (
            "exists",
            409,
            status("AlreadyExists", 409),
            ErrorKind::Other,
        ),
        ("missing", 404, status("NotFound", 404), ErrorKind::NotFound),
        (
            "unauthorized",
            401,
            status("Unauthorized", 401),
            ErrorKind::Unauthorized,
        ),
        (
            "forbidden",
            403,
            status("Forbidden", 403),
            ErrorKind::Forbidden,
        ),
        ("invalid", 422, status("Invalid", 422), ErrorKind::Invalid),
        ("slow", 504, status("Timeout", 504), ErrorKind::Timeout),
        (
            "timeout",
            408,
            format!("{MARKER} plain text"),
            ErrorKind::Timeout,
        ),
        (
            "gateway",
            502,
            format!("{MARKER} plain text"),
            ErrorKind::Unavailable,
        ),
        (
            "down",
            503,
            format!("<html>{MARKER}</html>"),
            ErrorKind::Unavailable,
        ),
    ];
    for (name, code, body, _) in &cases {
        fake.answer(
            &format!("/api/v1/{name}"),
            Answer::Reply(*code, body.clone()),
        );
    }
    let client = fake.client(|_| {});
    for (name, code, _, kind) in cases {
        let err = client
            .send(get(&format!("/api/v1/{name}")))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), kind, "{name}");
        assert_eq!(err.http_status(), Some(code), "{name}");
        assert_clean(&err);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_success_that_is_not_json_is_a_clean_decode_error() {
    let fake = Fake::start();
    fake.answer(
        "/api/v1/odd",
        Answer::Reply(200, format!("not json {MARKER}")),
    );
    let client = fake.client(|_| {});
    let err = client.send(get("/api/v1/odd")).await.unwrap_err();
    assert!(matches!(err, Error::Decode { .. }));
    assert_clean(&err);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_its_deadline_times_out_and_the_next_one_succeeds() {
    let fake = Fake::start();
    fake.answer("/api/v1/hang", Answer::Hang);
    let client = fake.client(|_| {});
    let err = client
        .send(get("/api/v1/hang").with_timeout(Duration::from_millis(200)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(matches!(
        err,
        Error::Timeout {
            timeout_ms: 200,
            ..
        }
    ));
    assert!(client.send(get("/api/v1/fine")).await.is_ok());
    assert_eq!(client.stats().await.starts, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_operations_are_the_documented_requests() {
    let fake = Fake::start();
    let base = "/apis/example.com/v1/namespaces/dev/widgets";
    fake.answer(
        &format!("{base}?limit=500"),
        Answer::Reply(200, json!({"items": [{"a": 1}, {"b": 2}]}).to_string()),
    );
    let gone = json!({"kind": "Status", "reason": "NotFound", "details": {"name": "gone"}});
    fake.answer(
        &format!("{base}/gone"),
        Answer::Reply(404, gone.to_string()),
    );
    let client = fake.client(|_| {});
    let d = widgets();

    assert_eq!(client.list_resources(&d, "dev").await.unwrap().len(), 2);
    assert_eq!(client.get_resource(&d, "dev", "gone").await.unwrap(), None);
    let found = client.get_resource(&d, "dev", "w").await.unwrap().unwrap();
    assert_eq!(found["path"], format!("{base}/w"));

    let resource = json!({"metadata": {
        "name": "w", "namespace": "dev", "uid": "u-1", "resourceVersion": "41"
    }});
    client
        .update_status(&d, &resource, &json!({"phase": "Ready"}))
        .await
        .unwrap();
    client
        .update_finalizers(&d, &resource, &["example.com/f".to_owned()])
        .await
        .unwrap();

    let seen = fake.seen();
    let put = &seen[3];
    assert_eq!(
        (put.method.as_str(), put.path.as_str()),
        ("PUT", &*format!("{base}/w/status"))
    );
    let body: serde_json::Value = serde_json::from_str(&put.body).unwrap();
    assert_eq!(body["metadata"]["resourceVersion"], "41");
    assert_eq!(body["metadata"]["uid"], "u-1");
    assert_eq!(body["status"]["phase"], "Ready");
    let patch = &seen[4];
    assert_eq!(
        (patch.method.as_str(), patch.path.as_str()),
        ("PATCH", &*format!("{base}/w"))
    );
    assert_eq!(patch.content_type, "application/merge-patch+json");
    let body: serde_json::Value = serde_json::from_str(&patch.body).unwrap();
    assert_eq!(
        body,
        json!({"metadata": {"resourceVersion": "41", "finalizers": ["example.com/f"]}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_type_is_an_error_not_an_absent_object() {
    let fake = Fake::start();
    let path = "/apis/example.com/v1/namespaces/dev/widgets/w";
    let no_type = json!({"kind": "Status", "reason": "NotFound", "details": {}});
    fake.answer(path, Answer::Reply(404, no_type.to_string()));
    let client = fake.client(|_| {});
    let err = client
        .get_resource(&widgets(), "dev", "w")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_would_change_the_path_never_reach_the_proxy() {
    let fake = Fake::start();
    let client = fake.client(|_| {});
    let d = widgets();
    for bad in ["a/../b", "..", "a?b", ""] {
        let err = client.get_resource(&d, "dev", bad).await.unwrap_err();
        assert!(matches!(err, Error::InvalidOption { .. }), "{bad:?}");
        assert!(client.get_resource(&d, bad, "w").await.is_err(), "{bad:?}");
        // `""` lists every namespace.
        if !bad.is_empty() {
            assert!(client.list_resources(&d, bad).await.is_err(), "{bad:?}");
        }
        let resource = json!({"metadata": {
            "name": bad, "namespace": "dev", "uid": "u", "resourceVersion": "1"
        }});
        assert!(client
            .update_status(&d, &resource, &json!({}))
            .await
            .is_err());
    }
    assert!(fake.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_errors_show_no_request_or_response_body() {
    let fake = Fake::start();
    let base = "/apis/example.com/v1/namespaces/dev/widgets/w";
    fake.answer(
        &format!("{base}/status"),
        Answer::Reply(409, status("Conflict", 409)),
    );
    fake.answer(base, Answer::Reply(403, status("Forbidden", 403)));
    let client = fake.client(|_| {});
    let resource = json!({"metadata": {
        "name": "w", "namespace": "dev", "uid": "u", "resourceVersion": "1"
    }});
    let err = client
        .update_status(&widgets(), &resource, &json!({"message": MARKER}))
        .await
        .unwrap_err();
    assert!(err.is_conflict());
    assert_clean(&err);
    let err = client
        .update_finalizers(&widgets(), &resource, &[MARKER.to_owned()])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    assert_clean(&err);
    let request = ApiRequest::new(
        Method::Patch(PatchType::Json),
        ApiPath::parse(base).unwrap(),
    )
    .with_body(json!([{"op": "test", "path": "/x", "value": MARKER}]));
    assert!(!format!("{request:?}").contains(MARKER));
    let err = client.send(request).await.unwrap_err();
    assert_clean(&err);
    assert!(!format!("{client:?}").contains(MARKER));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_access_reviews_and_events_are_raw_requests() {
    use blue_kubernetes_client::AccessCheck;
    let fake = Fake::start();
    let served = json!({"kind": "APIResourceList", "resources": [
        {"name": "widgets", "kind": "Widget", "namespaced": true, "singularName": "widget",
         "verbs": ["get", "list"]}
    ]});
    fake.answer(
        "/apis/example.com/v1",
        Answer::Reply(200, served.to_string()),
    );
    fake.answer(
        "/apis/example.com/v2",
        Answer::Reply(404, status("NotFound", 404)),
    );
    let allowed = json!({"status": {"allowed": true}});
    fake.answer(
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        Answer::Reply(201, allowed.to_string()),
    );
    let client = fake.client(|_| {});

    let resources = client
        .server_resources("example.com", "v1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(resources[0].name, "widgets");
    assert_eq!(
        client.server_resources("example.com", "v2").await.unwrap(),
        None
    );
    let check = AccessCheck::new("dev", "update", "example.com", "widgets");
    assert!(client.can_i(&check).await.unwrap());
    let event = json!({"metadata": {"name": "w.1"}, "reason": "Converged"});
    client.create_event("dev", &event).await.unwrap();
    client.update_event("dev", &event).await.unwrap();
    assert!(client
        .update_event("dev", &json!({"metadata": {"name": "a/../b"}}))
        .await
        .is_err());

    let seen: Vec<(String, String)> = fake
        .seen()
        .into_iter()
        .map(|s| (s.method, s.path))
        .collect();
    let expected = [
        ("GET", "/apis/example.com/v1"),
        ("GET", "/apis/example.com/v2"),
        (
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        ),
        ("POST", "/api/v1/namespaces/dev/events"),
        ("PUT", "/api/v1/namespaces/dev/events/w.1"),
    ];
    assert_eq!(seen.len(), expected.len());
    for ((method, path), (m, p)) in seen.iter().zip(expected) {
        assert_eq!((method.as_str(), path.as_str()), (m, p));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_list_is_one_get_of_the_collection() {
    let fake = Fake::start();
    let path = "/apis/coordination.k8s.io/v1/namespaces/ops/leases";
    let lease = |name: &str| json!({"metadata": {"name": name, "namespace": "ops", "resourceVersion": "3"}});
    fake.answer(
        path,
        Answer::Reply(200, json!({"items": [lease("a"), lease("b")]}).to_string()),
    );
    fake.answer(
        "/apis/coordination.k8s.io/v1/namespaces/odd/leases",
        Answer::Reply(200, json!({"kind": "LeaseList"}).to_string()),
    );
    let client = fake.client(|_| {});
    let leases = client.list_leases("ops").await.unwrap();
    let names: Vec<&str> = leases.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    let err = client.list_leases("odd").await.unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
    let err = client.list_leases("Not/A/Namespace").await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidOption {
                field: "lease.namespace",
                ..
            }
        ),
        "{err:?}"
    );
}
