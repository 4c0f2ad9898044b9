//! FakeCluster's label selectors on lists and watches, served as the API
//! server serves them: only matching objects are listed, a watch streams
//! only their changes, and an object that stops (starts) matching arrives
//! as DELETED (ADDED). Deterministic: nothing waits, `now_or_never` reads.

use blue_kubernetes_client::{
    Client, ErrorKind, PageRequest, ResourceDescriptor, WatchEvent, WatchRequest, WatchStream,
};
use blue_testkit::FakeCluster;
use futures::{FutureExt, StreamExt};
use serde_json::{json, Value};

const NS: &str = "dev";

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

fn create(cluster: &FakeCluster, name: &str, labels: Value) {
    let metadata = json!({"name": name, "namespace": NS, "labels": labels});
    cluster.create_with(&widgets(), json!({"metadata": metadata}));
}

fn relabel(cluster: &FakeCluster, name: &str, labels: Value) {
    cluster.edit(&widgets(), NS, name, |o| o["metadata"]["labels"] = labels);
}

fn names(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect()
}

async fn watch(cluster: &FakeCluster, from: &str, selector: &str) -> WatchStream {
    let request = WatchRequest {
        resource_version: from.into(),
        timeout_seconds: 300,
        ..WatchRequest::default()
    }
    .with_label_selector(selector);
    cluster
        .watch(&widgets(), NS, &request)
        .await
        .expect("the watch opens")
}

/// `TYPE name@rv app=LABEL` of every event ready now.
fn drain(stream: &mut WatchStream) -> Vec<String> {
    let mut seen = Vec::new();
    while let Some(Some(item)) = stream.next().now_or_never() {
        let event = item.expect("not an error");
        let (kind, object) = match &event {
            WatchEvent::Added(o) => ("ADDED", o),
            WatchEvent::Modified(o) => ("MODIFIED", o),
            WatchEvent::Deleted(o) => ("DELETED", o),
            WatchEvent::Bookmark { .. } => panic!("no bookmarks asked for"),
        };
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let app = object["metadata"]["labels"]["app"].as_str().unwrap_or("-");
        let rv = event.resource_version().unwrap_or_default();
        seen.push(format!("{kind} {name}@{rv} app={app}"));
    }
    seen
}

#[tokio::test]
async fn a_selected_list_pages_through_only_the_matching_objects() {
    let cluster = FakeCluster::new();
    create(&cluster, "a", json!({"app": "web"}));
    create(&cluster, "b", json!({"app": "api"}));
    create(&cluster, "c", json!({"app": "web", "tier": "cache"}));
    create(&cluster, "d", json!({}));
    create(&cluster, "e", json!({"app": "web"}));
    create(&cluster, "f", json!({"app": "api"}));
    let d = widgets();

    let first = PageRequest::first(2).with_label_selector("app=web");
    let first = cluster.list_page(&d, NS, &first).await.unwrap();
    assert_eq!(names(&first.items), ["a", "c"]);
    let next = PageRequest {
        limit: 2,
        continue_token: first.continue_token,
        label_selector: Some("app=web".into()),
    };
    let last = cluster.list_page(&d, NS, &next).await.unwrap();
    assert_eq!(names(&last.items), ["e"]);
    assert_eq!(last.continue_token, None, "no matching object follows");

    for (selector, listed) in [
        ("app=web,tier!=cache", vec!["a", "e"]),
        ("!app", vec!["d"]),
        ("app in (api),tier notin (x)", vec!["b", "f"]),
        ("", vec!["a", "b", "c", "d", "e", "f"]),
    ] {
        let page = PageRequest::first(0).with_label_selector(selector);
        let page = cluster.list_page(&d, NS, &page).await.unwrap();
        assert_eq!(names(&page.items), listed, "{selector}");
    }
}

#[tokio::test]
async fn a_malformed_selector_is_refused_as_invalid_naming_its_term() {
    let cluster = FakeCluster::new();
    create(&cluster, "a", json!({"app": "web"}));
    let d = widgets();
    let page = PageRequest::first(0).with_label_selector("app=web,a b");
    let err = cluster.list_page(&d, NS, &page).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid);
    assert!(err.to_string().contains("`a b`"), "{err}");
    let request = WatchRequest {
        resource_version: "0".into(),
        timeout_seconds: 300,
        ..WatchRequest::default()
    }
    .with_label_selector("app in ()");
    let Err(err) = cluster.watch(&d, NS, &request).await else {
        panic!("a malformed selector opens no watch");
    };
    assert_eq!(err.kind(), ErrorKind::Invalid);
    assert_eq!(cluster.watch_stats().opened, 0);
}

#[tokio::test]
async fn a_selected_watch_streams_only_the_changes_of_matching_objects() {
    let cluster = FakeCluster::new();
    create(&cluster, "a", json!({"app": "web"}));
    create(&cluster, "b", json!({"app": "api"}));
    let mut stream = watch(&cluster, "0", "app=web").await;
    assert_eq!(drain(&mut stream), ["ADDED a@1 app=web"]);

    create(&cluster, "c", json!({"app": "api"}));
    cluster.edit_spec(&widgets(), NS, "b", |s| s["size"] = json!(2));
    cluster.delete(&widgets(), NS, "c");
    assert_eq!(drain(&mut stream), Vec::<String>::new());

    create(&cluster, "d", json!({"app": "web"}));
    cluster.edit_spec(&widgets(), NS, "a", |s| s["size"] = json!(2));
    cluster.delete(&widgets(), NS, "d");
    assert_eq!(
        drain(&mut stream),
        [
            "ADDED d@6 app=web",
            "MODIFIED a@7 app=web",
            "DELETED d@8 app=web"
        ]
    );
}

#[tokio::test]
async fn an_object_that_stops_matching_is_deleted_and_one_that_starts_is_added() {
    let cluster = FakeCluster::new();
    create(&cluster, "a", json!({"app": "web"}));
    let from = cluster.revision().to_string();
    // Leaving the selection: the last matching state, at the new version,
    // so a cache moves its resourceVersion forward as the server's does.
    relabel(&cluster, "a", json!({"app": "api"}));
    cluster.edit_spec(&widgets(), NS, "a", |s| s["size"] = json!(2));
    relabel(&cluster, "a", json!({"app": "web"}));
    relabel(&cluster, "a", json!({"app": "web", "tier": "x"}));
    cluster.delete(&widgets(), NS, "a");

    let mut replayed = watch(&cluster, &from, "app=web").await;
    let expected = [
        "DELETED a@2 app=web",
        "ADDED a@4 app=web",
        "MODIFIED a@5 app=web",
        "DELETED a@6 app=web",
    ];
    assert_eq!(drain(&mut replayed), expected);

    // Live, as well as replayed.
    create(&cluster, "b", json!({}));
    let mut live = watch(&cluster, &cluster.revision().to_string(), "!app").await;
    relabel(&cluster, "b", json!({"app": "web"}));
    relabel(&cluster, "b", json!({}));
    assert_eq!(drain(&mut live), ["DELETED b@8 app=-", "ADDED b@9 app=-"]);
}
