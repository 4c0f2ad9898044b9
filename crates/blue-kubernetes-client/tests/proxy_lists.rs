//! Paginated lists and namespace scope through the proxy transport.

mod common;
mod fake_proxy;

use blue_kubernetes_client::{
    Client, Error, ErrorKind, PageRequest, ResourceDescriptor, WatchRequest,
};
use fake_proxy::{status, Answer, Fake, MARKER};
use serde_json::{json, Value};

const BASE: &str = "/apis/example.com/v1/namespaces/dev/widgets";

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

fn page(names: &[&str], rv: &str, token: &str) -> String {
    let items: Vec<Value> = names
        .iter()
        .map(|n| json!({"metadata": {"name": n}}))
        .collect();
    json!({"kind": "WidgetList", "items": items,
           "metadata": {"resourceVersion": rv, "continue": token}})
    .to_string()
}

fn names(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect()
}

fn paths(fake: &Fake) -> Vec<String> {
    fake.seen().into_iter().map(|s| s.path).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_reads_every_page_in_order() {
    let fake = Fake::start();
    let first = format!("{BASE}?limit=500");
    let second = format!("{BASE}?limit=500&continue=t%2B1");
    fake.answer(&first, Answer::Reply(200, page(&["a", "b"], "10", "t+1")));
    fake.answer(&second, Answer::Reply(200, page(&["c"], "10", "")));
    let client = fake.client(|_| {});
    let items = client.list_resources(&widgets(), "dev").await.unwrap();
    assert_eq!(names(&items), ["a", "b", "c"]);
    assert_eq!(paths(&fake), [first, second]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_carries_the_list_version_and_the_next_token() {
    let fake = Fake::start();
    fake.answer(
        &format!("{BASE}?limit=2"),
        Answer::Reply(200, page(&["a", "b"], "10", "t1")),
    );
    fake.answer(
        &format!("{BASE}?limit=2&continue=t1"),
        Answer::Reply(200, page(&["c"], "10", "")),
    );
    fake.answer(BASE, Answer::Reply(200, page(&["a", "b", "c"], "11", "")));
    let client = fake.client(|_| {});
    let d = widgets();

    let first = client
        .list_page(&d, "dev", &PageRequest::first(2))
        .await
        .unwrap();
    assert_eq!(names(&first.items), ["a", "b"]);
    assert_eq!(first.resource_version.as_deref(), Some("10"));
    assert_eq!(first.continue_token.as_deref(), Some("t1"));
    let next = PageRequest {
        limit: 2,
        continue_token: first.continue_token,
        label_selector: None,
    };
    let last = client.list_page(&d, "dev", &next).await.unwrap();
    assert_eq!(names(&last.items), ["c"]);
    assert_eq!(last.continue_token, None, "an empty token ends the list");

    // A limit of 0 asks for everything at once.
    let all = client
        .list_page(&d, "dev", &PageRequest::first(0))
        .await
        .unwrap();
    assert_eq!(
        (all.items.len(), all.resource_version.as_deref()),
        (3, Some("11"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_continue_token_restarts_the_list_once() {
    let fake = Fake::start();
    let first = format!("{BASE}?limit=500");
    let second = format!("{BASE}?limit=500&continue=t1");
    fake.answer(&first, Answer::Reply(200, page(&["a", "b"], "10", "t1")));
    fake.answer(
        &second,
        Answer::Replies(vec![
            (410, status("Expired", 410)),
            (200, page(&["b2", "c"], "12", "")),
        ]),
    );
    let client = fake.client(|_| {});
    let items = client.list_resources(&widgets(), "dev").await.unwrap();
    assert_eq!(
        names(&items),
        ["a", "b", "b2", "c"],
        "nothing of the abandoned list remains"
    );
    assert_eq!(paths(&fake), [&*first, &second, &first, &second]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_that_expires_again_fails_the_list_as_gone() {
    let fake = Fake::start();
    let first = format!("{BASE}?limit=500");
    let second = format!("{BASE}?limit=500&continue=t1");
    fake.answer(&first, Answer::Reply(200, page(&["a"], "10", "t1")));
    fake.answer(&second, Answer::Reply(410, status("Expired", 410)));
    let client = fake.client(|_| {});
    let err = client.list_resources(&widgets(), "dev").await.unwrap_err();
    assert_eq!(
        (err.kind(), err.http_status()),
        (ErrorKind::Gone, Some(410))
    );
    assert!(!format!("{err} {err:?}").contains(MARKER));
    assert_eq!(paths(&fake).len(), 4, "one restart, then give up");

    let expired = PageRequest {
        limit: 500,
        continue_token: Some("t1".into()),
        label_selector: None,
    };
    let err = client
        .list_page(&widgets(), "dev", &expired)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Gone);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_is_not_a_list_is_a_decode_error() {
    let fake = Fake::start();
    fake.answer(
        &format!("{BASE}?limit=500"),
        Answer::Reply(200, json!({"kind": "Widget", "spec": MARKER}).to_string()),
    );
    let client = fake.client(|_| {});
    let err = client.list_resources(&widgets(), "dev").await.unwrap_err();
    assert!(matches!(err, Error::Decode { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_namespace_lists_and_watches_every_namespace() {
    let fake = Fake::start();
    let everywhere = "/apis/example.com/v1/widgets";
    fake.answer(
        &format!("{everywhere}?limit=500"),
        Answer::Reply(200, page(&["a"], "10", "")),
    );
    let watch = format!("{everywhere}?watch=1&resourceVersion=10&timeoutSeconds=30");
    fake.answer(&watch, Answer::Stream);
    let client = fake.client(|_| {});
    let d = widgets();
    assert_eq!(client.list_resources(&d, "").await.unwrap().len(), 1);
    let request = WatchRequest {
        resource_version: "10".into(),
        timeout_seconds: 30,
        bookmarks: false,
        label_selector: None,
    };
    let _events = client.watch(&d, "", &request).await.unwrap();
    assert_eq!(paths(&fake), [format!("{everywhere}?limit=500"), watch]);
    // One object still needs its namespace.
    let err = client.get_resource(&d, "", "a").await.unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidOption {
            field: "namespace",
            ..
        }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_scoped_type_never_names_a_namespace() {
    let fake = Fake::start();
    let racks = ResourceDescriptor::new("example.com", "v1", "racks", "Rack").cluster_scoped();
    let base = "/apis/example.com/v1/racks";
    fake.answer(
        &format!("{base}?limit=500"),
        Answer::Reply(200, page(&["r1"], "10", "")),
    );
    let client = fake.client(|_| {});
    // The namespace argument means nothing for this type.
    assert_eq!(client.list_resources(&racks, "dev").await.unwrap().len(), 1);
    assert_eq!(client.list_resources(&racks, "").await.unwrap().len(), 1);
    let found = client
        .get_resource(&racks, "", "r1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found["path"], format!("{base}/r1"));

    let rack = json!({"metadata": {"name": "r1", "uid": "u-1", "resourceVersion": "41"}});
    client
        .update_status(&racks, &rack, &json!({"phase": "Ready"}))
        .await
        .unwrap();
    client
        .update_finalizers(&racks, &rack, &["example.com/f".to_owned()])
        .await
        .unwrap();

    let seen = fake.seen();
    let requests: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.path.as_str()))
        .collect();
    assert_eq!(
        requests,
        [
            ("GET", &*format!("{base}?limit=500")),
            ("GET", &*format!("{base}?limit=500")),
            ("GET", &*format!("{base}/r1")),
            ("PUT", &*format!("{base}/r1/status")),
            ("PATCH", &*format!("{base}/r1")),
        ]
    );
    let body: Value = serde_json::from_str(&seen[3].body).unwrap();
    assert_eq!(
        body["metadata"],
        json!({"name": "r1", "uid": "u-1", "resourceVersion": "41"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selected_list_and_watch_send_the_encoded_label_selector() {
    let fake = Fake::start();
    let selector = "app=web,tier!=cache";
    let encoded = "app%3Dweb%2Ctier%21%3Dcache";
    let list = format!("{BASE}?limit=2&continue=t1&labelSelector={encoded}");
    fake.answer(&list, Answer::Reply(200, page(&["a"], "10", "")));
    let watch = format!(
        "{BASE}?watch=1&resourceVersion=10&timeoutSeconds=30&allowWatchBookmarks=true\
         &labelSelector={encoded}"
    );
    fake.answer(&watch, Answer::Stream);
    let client = fake.client(|_| {});
    let d = widgets();
    let next = PageRequest {
        limit: 2,
        continue_token: Some("t1".into()),
        label_selector: Some(selector.into()),
    };
    let page = client.list_page(&d, "dev", &next).await.unwrap();
    assert_eq!(names(&page.items), ["a"]);
    let request = WatchRequest {
        resource_version: "10".into(),
        timeout_seconds: 30,
        bookmarks: true,
        label_selector: None,
    }
    .with_label_selector(selector);
    let _events = client.watch(&d, "dev", &request).await.unwrap();
    assert_eq!(paths(&fake), [list, watch]);
}
