//! Lease operations as raw API requests: the paths, the bodies, and a stale
//! resourceVersion reported as a conflict.

mod common;

use blue_kubernetes_client::{kubectl_client, Client, Error, ErrorKind, Lease, LeaseSpec};
use common::{failed, ok, options, recording};
use serde_json::{json, Value};

const PATH: &str = "/apis/coordination.k8s.io/v1/namespaces/ops/leases/my-operator";
const CONFLICT: &str = "Error from server (Conflict): Operation cannot be fulfilled on leases.coordination.k8s.io \"my-operator\": the object has been modified; please apply your changes to the latest version and try again\n";

fn stored(rv: &str, holder: &str) -> String {
    json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "my-operator", "namespace": "ops", "resourceVersion": rv},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15},
    })
    .to_string()
}

fn held_by(holder: &str, rv: Option<&str>) -> Lease {
    let mut lease = Lease::new(
        "ops",
        "my-operator",
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            ..LeaseSpec::default()
        },
    );
    lease.resource_version = rv.map(str::to_owned);
    lease
}

#[tokio::test]
async fn get_reads_the_lease_and_a_missing_one_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|inv| {
        if inv.argv.iter().any(|a| a.ends_with("/missing")) {
            Ok(failed(
                1,
                "Error from server (NotFound): leases.coordination.k8s.io \"missing\" not found\n",
            ))
        } else {
            Ok(ok(&stored("12", "pod-a")))
        }
    });
    let client = kubectl_client(options(runner, dir.path())).unwrap();

    let lease = client
        .get_lease("ops", "my-operator")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lease, held_by("pod-a", Some("12")));
    assert_eq!(client.get_lease("ops", "missing").await.unwrap(), None);
    assert_eq!(calls.lock().unwrap()[0].args(), ["get", "--raw", PATH]);
}

#[tokio::test]
async fn create_posts_to_the_collection_without_a_resource_version() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|_| Ok(ok(&stored("1", "pod-a"))));
    let client = kubectl_client(options(runner, dir.path())).unwrap();

    let created = client
        .create_lease(&held_by("pod-a", Some("ignored")))
        .await
        .unwrap();

    assert_eq!(created.resource_version.as_deref(), Some("1"));
    let calls = calls.lock().unwrap();
    let args = calls[0].args();
    assert_eq!(
        args[..3],
        [
            "create",
            "--raw",
            "/apis/coordination.k8s.io/v1/namespaces/ops/leases"
        ]
    );
    let body: Value = serde_json::from_str(calls[0].input.as_deref().unwrap()).unwrap();
    assert!(body["metadata"].get("resourceVersion").is_none());
    assert_eq!(body["kind"], "Lease");
    assert_eq!(body["spec"]["holderIdentity"], "pod-a");
}

#[tokio::test]
async fn update_replaces_guarded_by_resource_version_and_stale_is_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|inv| {
        let input = common::input_path(&inv.argv)
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default();
        if input.contains("\"resourceVersion\":\"12\"") {
            Ok(ok(&stored("13", "pod-a")))
        } else {
            Ok(failed(1, CONFLICT))
        }
    });
    let client = kubectl_client(options(runner, dir.path())).unwrap();

    let renewed = client
        .update_lease(&held_by("pod-a", Some("12")))
        .await
        .unwrap();
    assert_eq!(renewed.resource_version.as_deref(), Some("13"));
    let stale = client
        .update_lease(&held_by("pod-a", Some("11")))
        .await
        .unwrap_err();
    assert!(
        matches!(stale, Error::Kubectl { ref operation, kind: ErrorKind::Conflict, .. } if operation == "replace")
    );
    assert_eq!(
        calls.lock().unwrap()[0].args()[..3],
        ["replace", "--raw", PATH]
    );
}

#[tokio::test]
async fn release_clears_the_holder_and_an_unguarded_update_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|_| Ok(ok(&stored("14", ""))));
    let client = kubectl_client(options(runner, dir.path())).unwrap();

    let released = client
        .release_lease(&held_by("pod-a", Some("13")))
        .await
        .unwrap();
    assert_eq!(released.spec.holder(), None);
    let body: Value =
        serde_json::from_str(calls.lock().unwrap()[0].input.as_deref().unwrap()).unwrap();
    assert!(body["spec"].get("holderIdentity").is_none());
    assert_eq!(body["spec"]["leaseDurationSeconds"], 1);
    assert_eq!(body["metadata"]["resourceVersion"], "13");

    let unguarded = client.update_lease(&held_by("pod-b", None)).await;
    assert!(matches!(
        unguarded,
        Err(Error::InvalidOption {
            field: "lease.resource_version",
            ..
        })
    ));
    assert_eq!(calls.lock().unwrap().len(), 1, "nothing was sent");
}

#[tokio::test]
async fn list_reads_every_lease_of_the_namespace_in_one_request() {
    let dir = tempfile::tempdir().unwrap();
    let list = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "LeaseList",
        "items": [
            serde_json::from_str::<Value>(&stored("12", "pod-a")).unwrap(),
            serde_json::from_str::<Value>(&stored("14", "pod-b")).unwrap(),
        ],
    });
    let (runner, calls) = recording(move |_| Ok(ok(&list.to_string())));
    let client = kubectl_client(options(runner, dir.path())).unwrap();

    let leases = client.list_leases("ops").await.unwrap();
    assert_eq!(
        leases,
        [held_by("pod-a", Some("12")), held_by("pod-b", Some("14"))]
    );
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].args(),
        [
            "get",
            "--raw",
            "/apis/coordination.k8s.io/v1/namespaces/ops/leases"
        ]
    );
}

#[tokio::test]
async fn a_list_answer_without_items_is_a_decode_error() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, _) = recording(|_| Ok(ok(&stored("12", "pod-a"))));
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let err = client.list_leases("ops").await.unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
}
