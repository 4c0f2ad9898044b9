//! Both writes carry the snapshot's resourceVersion and report conflicts.

mod common;

use blue_kubernetes_client::{kubectl_client, Client, Error, ErrorKind, ResourceDescriptor};
use common::{failed, ok, options, recording};
use serde_json::{json, Value};

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

fn snapshot() -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {
            "name": "w1",
            "namespace": "team-a",
            "uid": "0b6a4c1e-uid",
            "resourceVersion": "4711",
            "generation": 3,
            "finalizers": ["other.example.com/keep"],
        },
        "spec": {"config": {"size": "large"}},
    })
}

const CONFLICT: &str = "Error from server (Conflict): Operation cannot be fulfilled on widgets.example.com \"w1\": the object has been modified; please apply your changes to the latest version and try again\n";

#[tokio::test]
async fn update_status_replaces_the_status_subresource_guarded_by_resource_version() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|_| Ok(ok(r#"{"metadata":{"resourceVersion":"4712"}}"#)));
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let status = json!({"phase": "Ready", "observedGeneration": 3});

    let updated = client
        .update_status(&widgets(), &snapshot(), &status)
        .await
        .unwrap();

    assert_eq!(updated["metadata"]["resourceVersion"], "4712");
    let calls = calls.lock().unwrap();
    let args = calls[0].args();
    assert_eq!(
        args[..3],
        [
            "replace",
            "--raw",
            "/apis/example.com/v1/namespaces/team-a/widgets/w1/status"
        ]
    );
    assert_eq!(args[3], "-f");
    assert_ne!(args[4], "-", "the input file replaces stdin");
    assert_eq!(args.len(), 5);
    let body: Value = serde_json::from_str(calls[0].input.as_deref().unwrap()).unwrap();
    assert_eq!(
        body,
        json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {
                "name": "w1",
                "namespace": "team-a",
                "uid": "0b6a4c1e-uid",
                "resourceVersion": "4711",
            },
            "status": {"phase": "Ready", "observedGeneration": 3},
        })
    );
    assert_eq!(calls[0].input_mode, Some(0o600));
}

#[tokio::test]
async fn update_finalizers_merge_patches_guarded_by_resource_version() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|_| Ok(ok(r#"{"metadata":{"resourceVersion":"4712"}}"#)));
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let finalizers = vec![
        "other.example.com/keep".to_owned(),
        "colors.getcolors.ai/infrastructure".to_owned(),
    ];

    let updated = client
        .update_finalizers(&widgets(), &snapshot(), &finalizers)
        .await
        .unwrap();

    assert_eq!(updated["metadata"]["resourceVersion"], "4712");
    let calls = calls.lock().unwrap();
    let args = calls[0].args();
    assert_eq!(
        args[..6],
        [
            "patch",
            "widgets.v1.example.com",
            "w1",
            "-n",
            "team-a",
            "--type=merge"
        ]
    );
    assert_eq!(args[6], "-p");
    let patch: Value = serde_json::from_str(args[7]).unwrap();
    assert_eq!(
        patch,
        json!({"metadata": {
            "resourceVersion": "4711",
            "finalizers": ["other.example.com/keep", "colors.getcolors.ai/infrastructure"],
        }})
    );
    assert_eq!(args[8..], ["-o", "json"]);
}

#[tokio::test]
async fn removing_every_finalizer_sends_an_empty_list() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|_| Ok(ok("{}")));
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    client
        .update_finalizers(&widgets(), &snapshot(), &[])
        .await
        .unwrap();
    let patch: Value = serde_json::from_str(calls.lock().unwrap()[0].args()[7]).unwrap();
    assert_eq!(patch["metadata"]["finalizers"], json!([]));
}

#[tokio::test]
async fn stale_write_is_classified_as_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, _) = recording(|_| Ok(failed(1, CONFLICT)));
    let client = kubectl_client(options(runner, dir.path())).unwrap();

    let err = client
        .update_status(&widgets(), &snapshot(), &json!({}))
        .await
        .unwrap_err();
    assert!(err.is_conflict());
    assert!(matches!(
        err,
        Error::Kubectl { ref operation, exit_code: 1, kind: ErrorKind::Conflict } if operation == "replace"
    ));

    let err = client
        .update_finalizers(&widgets(), &snapshot(), &[])
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Kubectl { ref operation, kind: ErrorKind::Conflict, .. } if operation == "patch"
    ));
}

#[tokio::test]
async fn writes_without_identifying_metadata_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|_| Ok(ok("{}")));
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    for (key, field) in [
        ("resourceVersion", "resource.metadata.resourceVersion"),
        ("name", "resource.metadata.name"),
        ("namespace", "resource.metadata.namespace"),
        ("uid", "resource.metadata.uid"),
    ] {
        let mut resource = snapshot();
        resource["metadata"].as_object_mut().unwrap().remove(key);
        let err = client
            .update_status(&widgets(), &resource, &json!({}))
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidOption { field: f, .. } if f == field),
            "{key}: {err:?}"
        );
        assert!(err.to_string().contains(field));
    }
    let mut resource = snapshot();
    resource["metadata"]["resourceVersion"] = json!("");
    let err = client
        .update_finalizers(&widgets(), &resource, &[])
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidOption {
            field: "resource.metadata.resourceVersion",
            ..
        }
    ));
    assert!(
        calls.lock().unwrap().is_empty(),
        "nothing unguarded was sent"
    );
}

#[tokio::test]
async fn write_that_prints_nothing_is_a_decode_error() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, _) = recording(|_| Ok(ok("")));
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let err = client
        .update_status(&widgets(), &snapshot(), &json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Decode { ref operation } if operation == "replace"));
}
