//! FakeCluster's paginated lists and namespace scopes behave like the API
//! server's: stable order, `limit`, continue tokens served as of the first
//! page's revision until compacted, every namespace with `""`, and
//! cluster-scoped types.

use blue_kubernetes_client::{Client, ErrorKind, ListPage, PageRequest, ResourceDescriptor};
use blue_testkit::{FakeCluster, Fault, Operation};
use serde_json::{json, Value};

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

fn racks() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "racks", "Rack").cluster_scoped()
}

fn names(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|o| {
            let meta = &o["metadata"];
            match meta["namespace"].as_str() {
                Some(ns) => format!("{ns}/{}", meta["name"].as_str().unwrap()),
                None => meta["name"].as_str().unwrap().to_owned(),
            }
        })
        .collect()
}

async fn page(cluster: &FakeCluster, ns: &str, limit: u32, token: Option<String>) -> ListPage {
    let request = PageRequest {
        limit,
        continue_token: token,
        label_selector: None,
    };
    cluster.list_page(&widgets(), ns, &request).await.unwrap()
}

/// b/x, a/y, b/a, a/b (creation order) across two namespaces, and one gadget.
fn populated() -> FakeCluster {
    let cluster = FakeCluster::new();
    for (ns, name) in [("b", "x"), ("a", "y"), ("b", "a"), ("a", "b")] {
        cluster.create(&widgets(), ns, name, json!({}));
    }
    let gadgets = ResourceDescriptor::new("example.com", "v1", "gadgets", "Gadget");
    cluster.create(&gadgets, "a", "g", json!({}));
    cluster
}

#[tokio::test]
async fn pages_cover_every_namespace_in_a_stable_order_at_one_revision() {
    let cluster = populated();
    let revision = cluster.revision().to_string();
    let first = page(&cluster, "", 3, None).await;
    assert_eq!(names(&first.items), ["a/b", "a/y", "b/a"]);
    assert_eq!(first.resource_version.as_deref(), Some(revision.as_str()));
    let second = page(&cluster, "", 3, first.continue_token.clone()).await;
    assert_eq!(names(&second.items), ["b/x"]);
    assert_eq!(second.resource_version, first.resource_version);
    assert_eq!(second.continue_token, None, "the last page says so");

    let exact = page(&cluster, "", 4, None).await;
    assert_eq!(exact.items.len(), 4);
    assert_eq!(exact.continue_token, None, "no empty page follows");
    let all = page(&cluster, "", 0, None).await;
    assert_eq!(all.items, exact.items, "limit 0 is everything");
    assert_eq!(cluster.calls().list_page, 4);
    assert_eq!(cluster.calls().list, 0);
}

#[tokio::test]
async fn a_namespace_lists_only_itself_and_list_resources_of_all_namespaces_too() {
    let cluster = populated();
    let one = page(&cluster, "b", 1, None).await;
    assert_eq!(names(&one.items), ["b/a"]);
    let rest = page(&cluster, "b", 1, one.continue_token).await;
    assert_eq!(names(&rest.items), ["b/x"]);
    assert_eq!(rest.continue_token, None);

    let everywhere = cluster.list_resources(&widgets(), "").await.unwrap();
    assert_eq!(names(&everywhere), ["a/b", "a/y", "b/a", "b/x"]);
    let a = cluster.list_resources(&widgets(), "a").await.unwrap();
    assert_eq!(names(&a), ["a/b", "a/y"]);
    assert!(cluster
        .list_resources(&widgets(), "c")
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_continued_list_shows_the_objects_as_of_its_first_page() {
    let cluster = populated();
    let first = page(&cluster, "", 2, None).await;
    // Behind the first page: one changed, one deleted, one created.
    cluster.edit_spec(&widgets(), "b", "a", |spec| spec["size"] = json!(9));
    cluster.delete(&widgets(), "b", "x");
    cluster.create(&widgets(), "b", "z", json!({}));
    cluster.create(&widgets(), "a", "z", json!({}));

    let second = page(&cluster, "", 2, first.continue_token).await;
    assert_eq!(names(&second.items), ["b/a", "b/x"]);
    assert_eq!(second.items[0]["spec"], json!({}), "the old spec");
    assert_eq!(second.continue_token, None);

    let fresh = page(&cluster, "", 0, None).await;
    assert_eq!(names(&fresh.items), ["a/b", "a/y", "a/z", "b/a", "b/z"]);
    assert_eq!(fresh.items[3]["spec"]["size"], 9);
}

#[tokio::test]
async fn a_continue_token_behind_the_history_is_gone() {
    let cluster = populated();
    let first = page(&cluster, "", 1, None).await;
    let token = first.continue_token.clone();
    cluster.edit_spec(&widgets(), "a", "b", |spec| spec["size"] = json!(1));
    // Still within the history: served.
    page(&cluster, "", 1, token.clone()).await;

    cluster.compact_history(cluster.revision());
    let request = PageRequest {
        limit: 1,
        continue_token: token,
        label_selector: None,
    };
    let err = cluster.list_page(&widgets(), "", &request).await;
    assert_eq!(err.unwrap_err().kind(), ErrorKind::Gone);

    // A token from after the compaction is fine.
    let again = page(&cluster, "", 1, None).await;
    page(&cluster, "", 1, again.continue_token).await;
}

#[tokio::test]
async fn a_short_history_expires_tokens_as_writes_come() {
    let cluster = populated();
    cluster.set_history_limit(2);
    let first = page(&cluster, "", 1, None).await;
    cluster.edit_spec(&widgets(), "a", "b", |spec| spec["size"] = json!(1));
    page(&cluster, "", 1, first.continue_token.clone()).await;
    cluster.edit_spec(&widgets(), "a", "b", |spec| spec["size"] = json!(2));
    cluster.edit_spec(&widgets(), "a", "b", |spec| spec["size"] = json!(3));
    let request = PageRequest {
        limit: 1,
        continue_token: first.continue_token,
        label_selector: None,
    };
    let err = cluster.list_page(&widgets(), "", &request).await;
    assert_eq!(err.unwrap_err().kind(), ErrorKind::Gone);
}

#[tokio::test]
async fn a_malformed_token_is_invalid_and_faults_apply_to_pages() {
    let cluster = populated();
    let request = PageRequest {
        limit: 1,
        continue_token: Some("not-a-token".into()),
        label_selector: None,
    };
    let err = cluster.list_page(&widgets(), "", &request).await;
    assert_eq!(err.unwrap_err().kind(), ErrorKind::Invalid);

    cluster.inject(Operation::ListPage, Fault::Unavailable);
    let err = cluster
        .list_page(&widgets(), "", &PageRequest::first(1))
        .await;
    assert_eq!(err.unwrap_err().kind(), ErrorKind::Unavailable);
    page(&cluster, "", 1, None).await;
    assert_eq!(cluster.calls().list_page, 3, "faulted calls count too");
}

#[tokio::test]
async fn cluster_scoped_objects_have_no_namespace_and_are_found_from_any() {
    let cluster = FakeCluster::new();
    let r = cluster.create(&racks(), "", "r1", json!({"size": 1}));
    assert!(r["metadata"].get("namespace").is_none());
    // A namespace given for a cluster-scoped type is ignored, as kubectl does.
    cluster.create(&racks(), "dev", "r2", json!({}));
    assert!(cluster.get(&racks(), "", "r2").is_some());
    assert!(cluster.get(&racks(), "other", "r1").is_some());

    let listed = cluster.list_resources(&racks(), "").await.unwrap();
    assert_eq!(names(&listed), ["r1", "r2"]);
    let paged = cluster
        .list_page(&racks(), "", &PageRequest::first(1))
        .await
        .unwrap();
    assert_eq!(names(&paged.items), ["r1"]);
    assert!(paged.continue_token.is_some());

    let written = cluster
        .update_status(&racks(), &r, &json!({"phase": "Ready"}))
        .await
        .unwrap();
    assert_eq!(written["status"]["phase"], "Ready");
    assert!(written["metadata"].get("namespace").is_none());
    let kept = cluster
        .update_finalizers(&racks(), &written, &["x/y".to_owned()])
        .await
        .unwrap();
    assert_eq!(kept["metadata"]["finalizers"][0], "x/y");
    let edited = cluster.edit_spec(&racks(), "", "r1", |spec| spec["size"] = json!(2));
    assert_eq!(edited["metadata"]["generation"], 2);
    assert!(edited["metadata"].get("namespace").is_none());
}

#[tokio::test]
async fn a_namespaced_object_created_without_a_namespace_lands_in_default() {
    let cluster = FakeCluster::new();
    let a = cluster.create(&widgets(), "", "a", json!({}));
    assert_eq!(a["metadata"]["namespace"], "default");
}
