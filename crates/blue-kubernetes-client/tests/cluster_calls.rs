//! Discovery, access reviews and Events through kubectl's raw API access.

mod common;

use blue_kubernetes_client::{kubectl_client, AccessCheck, Client, ErrorKind};
use common::{failed, ok, options, recording};
use serde_json::{json, Value};

const DISCOVERY: &str = r#"{"kind":"APIResourceList","groupVersion":"example.com/v1","resources":[
  {"name":"widgets","singularName":"widget","namespaced":true,"kind":"Widget","verbs":["get","list"]},
  {"name":"widgets/status","singularName":"","namespaced":true,"kind":"Widget","verbs":["get","update"]}]}"#;

#[tokio::test]
async fn discovery_reads_the_group_version_and_maps_not_served_to_none() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|inv| {
        Ok(match inv.argv.last().map(String::as_str) {
            Some("/apis/example.com/v1") => ok(DISCOVERY),
            _ => failed(
                1,
                "Error from server (NotFound): the server could not find the requested resource",
            ),
        })
    });
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let served = client
        .server_resources("example.com", "v1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(served.len(), 2);
    assert_eq!(
        (served[0].name.as_str(), served[0].kind.as_str()),
        ("widgets", "Widget")
    );
    assert_eq!(served[0].singular_name, "widget");
    assert!(served[0].namespaced);
    assert_eq!(
        client.server_resources("example.com", "v2").await.unwrap(),
        None
    );
    assert_eq!(client.server_resources("", "v1").await.unwrap(), None);
    let calls = calls.lock().unwrap();
    assert_eq!(calls[0].args(), ["get", "--raw", "/apis/example.com/v1"]);
    assert_eq!(calls[2].args(), ["get", "--raw", "/api/v1"]);
}

#[tokio::test]
async fn an_unreachable_server_is_an_error_not_a_missing_type() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, _) = recording(|_| {
        Ok(failed(
            1,
            "The connection to the server 127.0.0.1:1 was refused",
        ))
    });
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let err = client
        .server_resources("example.com", "v1")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
}

#[tokio::test]
async fn an_access_check_posts_a_self_subject_access_review() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|inv| {
        let path = common::input_path(&inv.argv).unwrap();
        let review: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let allowed = review["spec"]["resourceAttributes"]["verb"] != "update";
        Ok(ok(&json!({"status": {"allowed": allowed}}).to_string()))
    });
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let get = AccessCheck::new("team-a", "get", "example.com", "widgets");
    let update =
        AccessCheck::new("team-a", "update", "example.com", "widgets").with_subresource("status");
    assert!(client.can_i(&get).await.unwrap());
    assert!(!client.can_i(&update).await.unwrap());
    let calls = calls.lock().unwrap();
    let args = calls[1].args();
    assert_eq!(
        &args[..3],
        [
            "create",
            "--raw",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
        ]
    );
    let sent: Value = serde_json::from_str(calls[1].input.as_deref().unwrap()).unwrap();
    assert_eq!(
        sent["spec"]["resourceAttributes"],
        json!({"namespace": "team-a", "verb": "update", "group": "example.com", "resource": "widgets", "subresource": "status"})
    );
}

#[tokio::test]
async fn events_are_created_and_replaced_in_their_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|inv| {
        let path = common::input_path(&inv.argv).unwrap();
        Ok(ok(&std::fs::read_to_string(path).unwrap()))
    });
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let event = json!({"metadata": {"name": "w.17"}, "reason": "Converged", "count": 1});
    let created = client.create_event("team-a", &event).await.unwrap();
    assert_eq!(created["reason"], "Converged");
    client.update_event("team-a", &event).await.unwrap();
    let bad = json!({"metadata": {"name": "../x"}});
    assert!(
        client.update_event("team-a", &bad).await.is_err(),
        "names cannot escape the path"
    );
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        &calls[0].args()[..3],
        ["create", "--raw", "/api/v1/namespaces/team-a/events"]
    );
    assert_eq!(
        &calls[1].args()[..3],
        ["replace", "--raw", "/api/v1/namespaces/team-a/events/w.17"]
    );
}
