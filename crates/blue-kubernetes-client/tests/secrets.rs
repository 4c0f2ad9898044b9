//! Errors never carry kubectl's output or arguments, whatever they contain.

mod common;

use blue_kubernetes_client::{
    kubectl_client, Client, Error, ErrorKind, KubectlConfig, Output, RequestParams,
    ResourceDescriptor,
};
use common::{failed, options, recording};
use serde_json::json;

const SECRETS: &[&str] = &[
    "stdout-hunter2",
    "stderr-hunter2",
    "arg-hunter2",
    "input-hunter2",
    "ctx-hunter2",
    "env-hunter2",
];

fn assert_clean(err: &Error) {
    for shown in [format!("{err}"), format!("{err:?}")] {
        for secret in SECRETS {
            assert!(!shown.contains(secret), "{secret} leaked into {shown}");
        }
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}

fn leaky_output(exit_code: i32) -> Output {
    Output {
        exit_code,
        stdout: "stdout-hunter2".into(),
        stderr: "Error from server (Forbidden): secrets \"stderr-hunter2\" is forbidden\n".into(),
    }
}

#[tokio::test]
async fn failed_run_error_shows_neither_output_nor_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, _) = recording(|_| Ok(leaky_output(1)));
    let mut options = options(runner, dir.path()).with_env("TOKEN", "env-hunter2");
    options.context = Some("ctx-hunter2".into());
    let client = kubectl_client(options).unwrap();
    let err = client
        .request(
            &["create", "secret", "generic", "arg-hunter2", "-f", "-"],
            RequestParams::default().with_input("input-hunter2"),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    assert!(
        matches!(err, Error::Kubectl { exit_code: 1, ref operation, .. } if operation == "create")
    );
    assert_clean(&err);
}

#[tokio::test]
async fn operation_that_is_not_a_verb_is_not_echoed() {
    let (runner, _) = recording(|_| Ok(failed(2, "boom")));
    let client = kubectl_client(KubectlConfig::for_context("dev").with_runner(runner)).unwrap();
    let err = client
        .request(&["arg-hunter2/Bearer"], RequestParams::default())
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Kubectl {
            exit_code: 2,
            kind: ErrorKind::Other,
            ..
        }
    ));
    assert_clean(&err);
}

#[tokio::test]
async fn decode_error_shows_no_output() {
    let (runner, _) = recording(|_| Ok(leaky_output(0)));
    let client = kubectl_client(KubectlConfig::for_context("dev").with_runner(runner)).unwrap();
    let err = client
        .request(
            &["get", "secret", "arg-hunter2", "-o", "json"],
            RequestParams::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Decode { .. }));
    assert_clean(&err);
}

#[tokio::test]
async fn runner_errors_are_renamed_to_the_operation() {
    // A runner may put anything in `operation`; the client replaces it.
    let (runner, _) = recording(|_| {
        Err(Error::Timeout {
            operation: "arg-hunter2".into(),
            timeout_ms: 5,
        })
    });
    let client = kubectl_client(KubectlConfig::for_context("dev").with_runner(runner)).unwrap();
    let err = client
        .request(&["get", "arg-hunter2"], RequestParams::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { ref operation, .. } if operation == "get"));
    assert_clean(&err);
}

#[tokio::test]
async fn client_write_errors_show_no_status_or_patch() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, _) = recording(|_| Ok(leaky_output(1)));
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    let resource = json!({"metadata": {
        "name": "w", "namespace": "default", "uid": "u", "resourceVersion": "1"
    }});
    let err = client
        .update_status(&widgets, &resource, &json!({"message": "input-hunter2"}))
        .await
        .unwrap_err();
    assert_clean(&err);
    let err = client
        .update_finalizers(&widgets, &resource, &["arg-hunter2".to_owned()])
        .await
        .unwrap_err();
    assert_clean(&err);
}
