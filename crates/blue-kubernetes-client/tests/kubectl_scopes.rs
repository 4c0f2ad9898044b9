//! The kubectl transport's namespace scope, pages and (lack of) watches.

mod common;

use blue_kubernetes_client::{
    kubectl_client, Client, Error, PageRequest, ResourceDescriptor, WatchRequest,
};
use common::{ok, options, recording};
use serde_json::{json, Value};

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

fn racks() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "racks", "Rack").cluster_scoped()
}

const LIST: &str = r#"{"kind":"List","metadata":{"resourceVersion":""},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#;

#[tokio::test]
async fn an_empty_namespace_lists_every_namespace() {
    let (runner, calls) = recording(|_| Ok(ok(LIST)));
    let dir = tempfile::tempdir().unwrap();
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    assert_eq!(
        client.list_resources(&widgets(), "").await.unwrap().len(),
        2
    );
    assert_eq!(
        calls.lock().unwrap()[0].args(),
        [
            "get",
            "widgets.v1.example.com",
            "--all-namespaces",
            "-o",
            "json"
        ]
    );
    let err = client.get_resource(&widgets(), "", "a").await.unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidOption {
            field: "namespace",
            ..
        }
    ));
    assert_eq!(calls.lock().unwrap().len(), 1, "refused before running");
}

#[tokio::test]
async fn a_cluster_scoped_type_is_never_given_a_namespace() {
    let (runner, calls) = recording(|_| Ok(ok(LIST)));
    let dir = tempfile::tempdir().unwrap();
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let d = racks();
    client.list_resources(&d, "dev").await.unwrap();
    client.get_resource(&d, "", "r1").await.unwrap();
    let rack = json!({"metadata": {"name": "r1", "uid": "u-1", "resourceVersion": "41"}});
    client
        .update_status(&d, &rack, &json!({"phase": "Ready"}))
        .await
        .unwrap();
    client
        .update_finalizers(&d, &rack, &["example.com/f".to_owned()])
        .await
        .unwrap();

    let calls = calls.lock().unwrap();
    assert_eq!(
        calls[0].args(),
        ["get", "racks.v1.example.com", "-o", "json"]
    );
    assert_eq!(
        calls[1].args(),
        [
            "get",
            "racks.v1.example.com",
            "r1",
            "--ignore-not-found",
            "-o",
            "json"
        ]
    );
    assert_eq!(
        calls[2].args()[..3],
        ["replace", "--raw", "/apis/example.com/v1/racks/r1/status"]
    );
    let body: Value = serde_json::from_str(calls[2].input.as_deref().unwrap()).unwrap();
    assert_eq!(
        body["metadata"],
        json!({"name": "r1", "uid": "u-1", "resourceVersion": "41"})
    );
    assert_eq!(
        calls[3].args(),
        [
            "patch",
            "racks.v1.example.com",
            "r1",
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":["example.com/f"],"resourceVersion":"41"}}"#,
            "-o",
            "json"
        ]
    );
}

#[tokio::test]
async fn a_page_is_the_whole_list_without_a_version_to_watch_from() {
    let (runner, calls) = recording(|_| Ok(ok(LIST)));
    let dir = tempfile::tempdir().unwrap();
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let page = client
        .list_page(&widgets(), "dev", &PageRequest::first(1))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2, "kubectl pages internally");
    assert_eq!((page.resource_version, page.continue_token), (None, None));
    assert_eq!(
        calls.lock().unwrap()[0].args(),
        ["get", "widgets.v1.example.com", "-n", "dev", "-o", "json"]
    );

    let later = PageRequest {
        limit: 1,
        continue_token: Some("t".into()),
        label_selector: None,
    };
    let err = client
        .list_page(&widgets(), "dev", &later)
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidOption {
            field: "continue_token",
            ..
        }
    ));
    assert_eq!(calls.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn the_per_call_transport_does_not_watch() {
    let (runner, calls) = recording(|_| Ok(ok(LIST)));
    let dir = tempfile::tempdir().unwrap();
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let request = WatchRequest {
        resource_version: "1".into(),
        timeout_seconds: 30,
        bookmarks: true,
        label_selector: None,
    };
    let Err(err) = client.watch(&widgets(), "dev", &request).await else {
        panic!("kubectl does not watch");
    };
    assert!(matches!(err, Error::Unsupported { operation: "watch" }));
    assert!(calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_selected_page_passes_the_selector_as_one_argument() {
    let (runner, calls) = recording(|_| Ok(ok(LIST)));
    let dir = tempfile::tempdir().unwrap();
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let page = PageRequest::first(0).with_label_selector("app=web,tier!=cache");
    client.list_page(&widgets(), "", &page).await.unwrap();
    // `--selector=S` in one argument, so no selector can pass for a flag.
    assert_eq!(
        calls.lock().unwrap()[0].args(),
        [
            "get",
            "widgets.v1.example.com",
            "--all-namespaces",
            "--selector=app=web,tier!=cache",
            "-o",
            "json"
        ]
    );
}
