//! The raw request API through the per-call transport: which kubectl
//! command each method becomes, and that failures are classified.

mod common;

use blue_kubernetes_client::{
    kubectl_client, ApiPath, ApiRequest, ErrorKind, Method, PatchType, RawApi,
};
use common::{failed, ok, options, recording};
use serde_json::json;
use std::time::Duration;

fn path(p: &str) -> ApiPath {
    ApiPath::parse(p).unwrap()
}

#[tokio::test]
async fn each_method_is_the_matching_kubectl_raw_command() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|_| Ok(ok(r#"{"kind":"ConfigMap"}"#)));
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let cm = "/api/v1/namespaces/dev/configmaps/app";
    let body = json!({"data": {"k": "v"}});
    let requests = [
        ApiRequest::get(path(cm)).with_timeout(Duration::from_millis(1_500)),
        ApiRequest::new(Method::Post, path("/api/v1/namespaces/dev/configmaps"))
            .with_body(body.clone()),
        ApiRequest::new(Method::Put, path(cm)).with_body(body.clone()),
        ApiRequest::new(Method::Delete, path(cm)),
        ApiRequest::new(Method::Delete, path(cm)).with_body(json!({"kind": "DeleteOptions"})),
        ApiRequest::new(Method::Patch(PatchType::Merge), path(cm)).with_body(body.clone()),
    ];
    for request in requests {
        let answer = client.send(request).await.unwrap();
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body.unwrap()["kind"], "ConfigMap");
    }
    let calls = calls.lock().unwrap().clone();
    let args: Vec<Vec<&str>> = calls.iter().map(|c| c.args()).collect();
    assert_eq!(args[0], ["get", "--raw", cm]);
    assert_eq!(calls[0].timeout_ms, 1_500);
    assert_eq!(
        args[1][..3],
        ["create", "--raw", "/api/v1/namespaces/dev/configmaps"]
    );
    assert_eq!(args[2][..3], ["replace", "--raw", cm]);
    assert_eq!(args[3], ["delete", "--raw", cm]);
    assert_eq!(args[4][..3], ["delete", "--raw", cm]);
    assert_eq!(
        args[5],
        [
            "patch",
            "configmaps",
            "app",
            "-n",
            "dev",
            "--type=merge",
            "-p",
            r#"{"data":{"k":"v"}}"#,
            "-o",
            "json"
        ]
    );
    // Bodies travel as private files, never as arguments (except a patch,
    // which kubectl only takes as an argument).
    for call in &calls[1..=2] {
        assert_eq!(call.input.as_deref(), Some(r#"{"data":{"k":"v"}}"#));
        assert_eq!(call.input_mode, Some(0o600));
    }
    assert_eq!(calls[3].input, None);
    assert!(calls[4].input.as_deref().unwrap().contains("DeleteOptions"));
}

#[tokio::test]
async fn failures_are_classified_like_every_kubectl_run() {
    let (runner, _) = recording(|_| {
        Ok(failed(
            1,
            "Error from server (NotFound): configmaps \"app\" not found\n",
        ))
    });
    let client =
        kubectl_client(blue_kubernetes_client::KubectlConfig::for_context("t").with_runner(runner))
            .unwrap();
    let err = client
        .send(ApiRequest::get(path(
            "/api/v1/namespaces/dev/configmaps/app",
        )))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
}

#[tokio::test]
async fn a_patch_needs_an_object_path_and_a_body() {
    let (runner, calls) = recording(|_| Ok(ok("{}")));
    let client =
        kubectl_client(blue_kubernetes_client::KubectlConfig::for_context("t").with_runner(runner))
            .unwrap();
    let list = ApiRequest::new(
        Method::Patch(PatchType::Merge),
        path("/api/v1/namespaces/dev/configmaps"),
    )
    .with_body(json!({}));
    assert!(client.send(list).await.is_err());
    let empty = ApiRequest::new(
        Method::Patch(PatchType::Json),
        path("/api/v1/namespaces/dev/configmaps/a"),
    );
    assert!(client.send(empty).await.is_err());
    assert!(calls.lock().unwrap().is_empty());
}
