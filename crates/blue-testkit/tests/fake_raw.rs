//! The fake cluster answers any object path through `RawApi` as
//! kube-apiserver does: Secrets, ConfigMaps and custom resources of other
//! kinds, with resourceVersions, preconditions, the server's errors and
//! fault injection.

use blue_kubernetes_client::{
    ApiPath, ApiRequest, Client, Error, ErrorKind, Method, PatchType, RawApi, ResourceDescriptor,
};
use blue_testkit::{FakeCluster, Fault, Operation, RecordedCall};
use serde_json::{json, Value};

const SECRETS: &str = "/api/v1/namespaces/dev/secrets";
const DB: &str = "/api/v1/namespaces/dev/secrets/db";

fn path(p: &str) -> ApiPath {
    ApiPath::parse(p).unwrap()
}

async fn send(
    cluster: &FakeCluster,
    method: Method,
    p: &str,
    body: Option<Value>,
) -> Result<Value, Error> {
    let mut request = ApiRequest::new(method, path(p));
    request.body = body;
    let response = cluster.send(request).await?;
    Ok(response.body.unwrap())
}

fn http(e: &Error) -> (&'static str, u16, ErrorKind) {
    match e {
        Error::Http {
            method,
            status,
            kind,
        } => (method, *status, *kind),
        other => panic!("not an http error: {other}"),
    }
}

fn secret(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": data})
}

#[tokio::test]
async fn reading_a_secret_that_is_absent_is_not_found() {
    let cluster = FakeCluster::new();
    let e = send(&cluster, Method::Get, DB, None).await.unwrap_err();
    assert_eq!(http(&e), ("GET", 404, ErrorKind::NotFound));
    assert_eq!(
        cluster.call_log(),
        [RecordedCall::new(
            Operation::RawGet,
            "secrets",
            "dev",
            Some("db")
        )]
    );
    assert_eq!(
        cluster.calls().total(),
        0,
        "raw requests are not controller calls"
    );
}

#[tokio::test]
async fn creating_a_secret_assigns_server_metadata_and_encodes_string_data() {
    let cluster = FakeCluster::new();
    let created = send(
        &cluster,
        Method::Post,
        SECRETS,
        Some(secret("db", json!({"password": "hunter2"}))),
    )
    .await
    .unwrap();
    let meta = &created["metadata"];
    assert_eq!(meta["namespace"], "dev");
    assert_eq!(meta["resourceVersion"], "1");
    assert!(meta["uid"].as_str().is_some_and(|u| !u.is_empty()));
    assert_eq!(meta["creationTimestamp"], "2024-01-01T00:00:00Z");
    assert!(
        meta.get("generation").is_none(),
        "core Secrets have no generation"
    );
    assert_eq!(created["data"]["password"], "aHVudGVyMg==");
    assert!(created.get("stringData").is_none());
    assert!(created.get("spec").is_none());
    assert_eq!(created["type"], "Opaque");
    assert_eq!(cluster.get_object(DB).unwrap(), created);
    let read = send(&cluster, Method::Get, DB, None).await.unwrap();
    assert_eq!(read, created);
}

#[tokio::test]
async fn creating_a_secret_that_exists_is_already_exists() {
    let cluster = FakeCluster::new();
    cluster.create_object(SECRETS, secret("db", json!({"password": "a"})));
    let e = send(
        &cluster,
        Method::Post,
        SECRETS,
        Some(secret("db", json!({"password": "b"}))),
    )
    .await
    .unwrap_err();
    assert_eq!(
        http(&e),
        ("POST", 409, ErrorKind::Other),
        "AlreadyExists is not a Conflict"
    );
    assert_eq!(cluster.get_object(DB).unwrap()["data"]["password"], "YQ==");
}

#[tokio::test]
async fn a_generate_name_gets_a_fresh_suffix() {
    let cluster = FakeCluster::new();
    let body = json!({"metadata": {"generateName": "db-"}});
    let a = send(&cluster, Method::Post, SECRETS, Some(body.clone()))
        .await
        .unwrap();
    let b = send(&cluster, Method::Post, SECRETS, Some(body))
        .await
        .unwrap();
    let (a, b) = (
        a["metadata"]["name"].as_str().unwrap(),
        b["metadata"]["name"].as_str().unwrap(),
    );
    assert!(a.starts_with("db-") && a.len() == 8, "{a}");
    assert_ne!(a, b);
    let nameless = send(&cluster, Method::Post, SECRETS, Some(json!({})))
        .await
        .unwrap_err();
    assert_eq!(http(&nameless).2, ErrorKind::Invalid);
}

#[tokio::test]
async fn secret_data_that_is_not_base64_is_invalid() {
    let cluster = FakeCluster::new();
    let body = json!({"metadata": {"name": "db"}, "data": {"password": "hunter2!"}});
    let e = send(&cluster, Method::Post, SECRETS, Some(body))
        .await
        .unwrap_err();
    assert_eq!(http(&e), ("POST", 422, ErrorKind::Invalid));
    assert!(cluster.objects(SECRETS).is_empty());
}

#[tokio::test]
async fn a_body_naming_another_namespace_is_a_bad_request() {
    let cluster = FakeCluster::new();
    let body = json!({"metadata": {"name": "db", "namespace": "prod"}});
    let e = send(&cluster, Method::Post, SECRETS, Some(body))
        .await
        .unwrap_err();
    assert_eq!(http(&e), ("POST", 400, ErrorKind::Invalid));
}

#[tokio::test]
async fn a_list_holds_the_items_and_the_collection_resource_version() {
    let cluster = FakeCluster::new();
    for (ns, name, team) in [("dev", "b", "x"), ("dev", "a", "y"), ("prod", "c", "x")] {
        cluster.create_object(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            json!({"metadata": {"name": name, "labels": {"team": team}}}),
        );
    }
    let list = send(
        &cluster,
        Method::Get,
        "/api/v1/namespaces/dev/configmaps",
        None,
    )
    .await
    .unwrap();
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["metadata"]["resourceVersion"], "3");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
    let everywhere = ApiPath::parse("/api/v1/configmaps")
        .unwrap()
        .with_query("labelSelector", "team=x");
    let x = cluster
        .send(ApiRequest::get(everywhere))
        .await
        .unwrap()
        .body
        .unwrap();
    assert_eq!(x["items"].as_array().unwrap().len(), 2);
    assert_eq!(cluster.call_log()[0].operation, Operation::RawList);
}

#[tokio::test]
async fn replacing_from_a_stale_resource_version_conflicts_and_without_one_is_unconditional() {
    let cluster = FakeCluster::new();
    let read = cluster.create_object(SECRETS, secret("db", json!({"password": "a"})));
    cluster.edit_object(DB, |s| s["metadata"]["labels"] = json!({"touched": "yes"}));

    let mut stale = read.clone();
    stale["data"]["password"] = json!("Yg==");
    let e = send(&cluster, Method::Put, DB, Some(stale.clone()))
        .await
        .unwrap_err();
    assert_eq!(http(&e), ("PUT", 409, ErrorKind::Conflict));
    assert_eq!(cluster.get_object(DB).unwrap()["data"]["password"], "YQ==");

    stale["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let written = send(&cluster, Method::Put, DB, Some(stale)).await.unwrap();
    assert_eq!(written["data"]["password"], "Yg==");
    assert_eq!(written["metadata"]["uid"], read["metadata"]["uid"]);
    assert_eq!(written["metadata"]["resourceVersion"], "3");
    assert!(
        written["metadata"].get("labels").is_none(),
        "a PUT replaces the whole object"
    );

    let fresh = cluster.get_object(DB).unwrap();
    let mut other_uid = fresh.clone();
    other_uid["metadata"]["uid"] = json!("someone-else");
    let e = send(&cluster, Method::Put, DB, Some(other_uid))
        .await
        .unwrap_err();
    assert_eq!(http(&e).2, ErrorKind::Conflict);
    let absent = send(
        &cluster,
        Method::Put,
        "/api/v1/namespaces/dev/secrets/x",
        Some(secret("x", json!({}))),
    )
    .await;
    assert_eq!(http(&absent.unwrap_err()).1, 404);
}

#[tokio::test]
async fn a_merge_patch_merges_and_its_resource_version_is_a_precondition() {
    let cluster = FakeCluster::new();
    let read = cluster.create_object(SECRETS, secret("db", json!({"user": "u", "password": "a"})));
    let merge = Method::Patch(PatchType::Merge);
    let patched = send(
        &cluster,
        merge,
        DB,
        Some(json!({"metadata": {"labels": {"app": "web"}}, "stringData": {"password": "b"}, "data": {"user": null}})),
    )
    .await
    .unwrap();
    assert_eq!(patched["data"], json!({"password": "Yg=="}));
    assert_eq!(patched["metadata"]["labels"]["app"], "web");

    let guarded = json!({"metadata": {"resourceVersion": read["metadata"]["resourceVersion"]}, "stringData": {"password": "c"}});
    let e = send(&cluster, merge, DB, Some(guarded)).await.unwrap_err();
    assert_eq!(http(&e), ("PATCH", 409, ErrorKind::Conflict));
    assert_eq!(cluster.get_object(DB).unwrap()["data"]["password"], "Yg==");

    let json_patch = send(
        &cluster,
        Method::Patch(PatchType::Json),
        DB,
        Some(json!([])),
    )
    .await;
    assert_eq!(
        http(&json_patch.unwrap_err()).1,
        415,
        "the fake speaks merge patches only"
    );
}

#[tokio::test]
async fn deleting_checks_preconditions_and_an_absent_object_is_not_found() {
    let cluster = FakeCluster::new();
    let read = cluster.create_object(SECRETS, secret("db", json!({})));
    let stale = json!({"preconditions": {"uid": read["metadata"]["uid"], "resourceVersion": "0"}});
    let e = send(&cluster, Method::Delete, DB, Some(stale))
        .await
        .unwrap_err();
    assert_eq!(http(&e), ("DELETE", 409, ErrorKind::Conflict));
    assert!(cluster.get_object(DB).is_some());

    let current = json!({"preconditions": {"uid": read["metadata"]["uid"], "resourceVersion": read["metadata"]["resourceVersion"]}});
    send(&cluster, Method::Delete, DB, Some(current))
        .await
        .unwrap();
    assert!(cluster.get_object(DB).is_none());
    let e = send(&cluster, Method::Delete, DB, None).await.unwrap_err();
    assert_eq!(http(&e), ("DELETE", 404, ErrorKind::NotFound));
}

#[tokio::test]
async fn an_object_with_finalizers_is_only_marked_for_deletion() {
    let cluster = FakeCluster::new();
    cluster.create_object(
        SECRETS,
        json!({"metadata": {"name": "db", "finalizers": ["x/keep"]}}),
    );
    let response = cluster
        .send(ApiRequest::new(Method::Delete, path(DB)))
        .await
        .unwrap();
    assert_eq!(response.status, 202);
    let left = cluster.get_object(DB).unwrap();
    assert!(left["metadata"]["deletionTimestamp"].is_string());
    cluster.edit_object(DB, |s| s["metadata"]["finalizers"] = json!([]));
    assert!(
        cluster.get_object(DB).is_none(),
        "the last finalizer gone, so is the object"
    );
}

#[tokio::test]
async fn a_user_deleting_a_secret_is_seen_by_the_next_read() {
    let cluster = FakeCluster::new();
    cluster.create_object(SECRETS, json!({"metadata": {"name": "db", "ownerReferences": [{"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "u1"}]}}));
    assert_eq!(
        cluster.objects(SECRETS)[0]["metadata"]["ownerReferences"][0]["uid"],
        "u1"
    );
    assert!(cluster.delete_object(DB).is_none());
    let e = send(&cluster, Method::Get, DB, None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(
        cluster.call_log().len() == 1,
        "the user side is not counted"
    );
}

#[tokio::test]
async fn injected_faults_fail_a_raw_create_or_delete_without_effect() {
    let cluster = FakeCluster::new();
    cluster.inject(Operation::RawCreate, Fault::Unavailable);
    let e = send(
        &cluster,
        Method::Post,
        SECRETS,
        Some(secret("db", json!({}))),
    )
    .await
    .unwrap_err();
    assert_eq!(http(&e), ("POST", 503, ErrorKind::Unavailable));
    assert!(cluster.objects(SECRETS).is_empty());
    assert_eq!(cluster.revision(), 0);
    send(
        &cluster,
        Method::Post,
        SECRETS,
        Some(secret("db", json!({}))),
    )
    .await
    .unwrap();

    cluster.fail_always(
        Operation::RawDelete,
        Some(Fault::Kind(ErrorKind::Forbidden)),
    );
    let e = send(&cluster, Method::Delete, DB, None).await.unwrap_err();
    assert_eq!(http(&e), ("DELETE", 403, ErrorKind::Forbidden));
    assert!(cluster.get_object(DB).is_some());
    cluster.fail_always(Operation::RawDelete, None);
    cluster.inject(Operation::RawReplace, Fault::Conflict);
    let e = send(&cluster, Method::Put, DB, Some(secret("db", json!({}))))
        .await
        .unwrap_err();
    assert_eq!(http(&e), ("PUT", 409, ErrorKind::Conflict));
    send(&cluster, Method::Delete, DB, None).await.unwrap();
}

#[tokio::test]
async fn a_managed_custom_resource_is_the_same_object_through_both_faces() {
    let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    let cluster = FakeCluster::new();
    let created = cluster.create(&widgets, "dev", "w", json!({"size": 1}));
    let item = "/apis/example.com/v1/namespaces/dev/widgets/w";
    assert_eq!(
        send(&cluster, Method::Get, item, None).await.unwrap(),
        created
    );

    let mut bigger = created.clone();
    bigger["spec"]["size"] = json!(2);
    bigger["status"] = json!({"phase": "Ignored"});
    let written = send(&cluster, Method::Put, item, Some(bigger))
        .await
        .unwrap();
    assert_eq!(written["metadata"]["generation"], 2);
    assert!(written.get("status").is_none(), "status is a subresource");
    let through_client = cluster
        .get_resource(&widgets, "dev", "w")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(through_client, written);

    let status = send(&cluster, Method::Put, &format!("{item}/status"), Some(json!({"metadata": {"resourceVersion": written["metadata"]["resourceVersion"]}, "status": {"phase": "Ready"}}))).await.unwrap();
    assert_eq!(status["status"]["phase"], "Ready");
    assert!(cluster
        .update_status(&widgets, &written, &json!({}))
        .await
        .unwrap_err()
        .is_conflict());
}

#[tokio::test]
async fn custom_resources_of_other_kinds_and_cluster_scoped_objects_are_answered() {
    let cluster = FakeCluster::new();
    let buckets = "/apis/storage.example.com/v1alpha1/namespaces/dev/buckets";
    let b = send(
        &cluster,
        Method::Post,
        buckets,
        Some(json!({"kind": "Bucket", "metadata": {"name": "b"}, "spec": {"size": 3}})),
    )
    .await
    .unwrap();
    assert_eq!(b["apiVersion"], "storage.example.com/v1alpha1");
    assert_eq!(b["kind"], "Bucket");
    assert_eq!(b["metadata"]["generation"], 1);

    let racks = "/apis/example.com/v1/racks";
    let r = send(
        &cluster,
        Method::Post,
        racks,
        Some(json!({"kind": "Rack", "metadata": {"name": "r1"}})),
    )
    .await
    .unwrap();
    assert!(r["metadata"].get("namespace").is_none());
    assert!(cluster
        .get_object("/apis/example.com/v1/racks/r1")
        .is_some());
    let ns = send(
        &cluster,
        Method::Post,
        "/api/v1/namespaces",
        Some(json!({"metadata": {"name": "team"}})),
    )
    .await
    .unwrap();
    assert_eq!(ns["kind"], "Namespace");
    assert!(cluster.get_object("/api/v1/namespaces/team").is_some());

    // A namespaced type's object has no cluster path, as on the server.
    let e = send(&cluster, Method::Get, "/api/v1/secrets/db", None)
        .await
        .unwrap_err();
    assert_eq!(http(&e).1, 404);
}

#[tokio::test]
async fn a_lease_is_the_electors_lease_and_events_are_not_answered_twice() {
    use blue_kubernetes_client::{Lease, LeaseSpec};
    let cluster = FakeCluster::new();
    let lease = "/apis/coordination.k8s.io/v1/namespaces/dev/leases/op";
    let e = send(&cluster, Method::Get, lease, None).await.unwrap_err();
    assert_eq!(http(&e), ("GET", 404, ErrorKind::NotFound));
    let taken = cluster
        .create_lease(&Lease::new("dev", "op", LeaseSpec::default()))
        .await
        .unwrap();
    let read = send(&cluster, Method::Get, lease, None).await.unwrap();
    assert_eq!(read, taken.to_object());

    let mut stale = read.clone();
    stale["metadata"]["resourceVersion"] = json!("0");
    let e = send(&cluster, Method::Put, lease, Some(stale))
        .await
        .unwrap_err();
    assert_eq!(http(&e), ("PUT", 409, ErrorKind::Conflict));
    let collection = "/apis/coordination.k8s.io/v1/namespaces/dev/leases";
    let again = send(&cluster, Method::Post, collection, Some(read))
        .await
        .unwrap_err();
    assert_eq!(http(&again), ("POST", 409, ErrorKind::Other));

    let list = send(&cluster, Method::Get, collection, None)
        .await
        .unwrap_err();
    assert!(matches!(list, Error::Unsupported { .. }), "{list}");
    let events = send(&cluster, Method::Get, "/api/v1/namespaces/dev/events", None)
        .await
        .unwrap_err();
    assert!(matches!(events, Error::Unsupported { .. }), "{events}");
}

#[tokio::test]
async fn the_client_face_lists_and_watches_the_secrets_written_through_raw_requests() {
    use futures::StreamExt;
    let secrets = ResourceDescriptor::new("", "v1", "secrets", "Secret");
    let cluster = FakeCluster::new();
    let mut stream = cluster
        .watch(
            &secrets,
            "dev",
            &blue_kubernetes_client::WatchRequest {
                resource_version: "0".into(),
                timeout_seconds: 60,
                bookmarks: false,
                label_selector: None,
            },
        )
        .await
        .unwrap();
    send(
        &cluster,
        Method::Post,
        SECRETS,
        Some(secret("db", json!({}))),
    )
    .await
    .unwrap();
    let listed = cluster.list_resources(&secrets, "dev").await.unwrap();
    assert_eq!(listed, [cluster.get_object(DB).unwrap()]);
    match stream.next().await {
        Some(Ok(blue_kubernetes_client::WatchEvent::Added(object))) => {
            assert_eq!(object["metadata"]["name"], "db")
        }
        other => panic!("{other:?}"),
    }
}
