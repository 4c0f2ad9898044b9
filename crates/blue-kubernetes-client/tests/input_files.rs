//! Input documents travel as private temporary files that never outlive the
//! request, however it ends.

mod common;

use blue_kubernetes_client::{
    kubectl_client, Error, ErrorKind, KubectlConfig, RequestParams, TokioRunner,
};
use common::{entries, failed, ok, options, recording, script};
use std::sync::Arc;
use tokio::sync::Notify;

const DOC: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}"#;

#[tokio::test]
async fn input_replaces_stdin_argument_with_a_private_file() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|_| Ok(ok("{}")));
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    for args in [
        &["apply", "-f", "-"][..],
        &["apply", "--filename", "-"][..],
        &["apply", "--filename=-"][..],
        &["apply", "-f=-"][..],
    ] {
        client
            .request(args, RequestParams::default().with_input(DOC))
            .await
            .unwrap();
    }
    let calls = calls.lock().unwrap();
    for call in calls.iter() {
        assert_eq!(call.input.as_deref(), Some(DOC), "{:?}", call.args());
        assert_eq!(call.input_mode, Some(0o600));
        let path = common::input_path(&call.argv).unwrap();
        assert!(path.starts_with(dir.path().to_str().unwrap()));
        assert!(!call.argv.iter().any(|a| a == "-" || a.ends_with("=-")));
    }
    assert!(entries(dir.path()).is_empty());
}

#[tokio::test]
async fn input_without_stdin_argument_is_refused_instead_of_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|_| Ok(ok("{}")));
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let err = client
        .request(
            &["apply", "-f", "manifest.yaml"],
            RequestParams::default().with_input(DOC),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidOption { field: "input", .. }));
    let err = client
        .request(&["apply", "-f", "-"], RequestParams::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidOption { field: "input", .. }));
    assert!(calls.lock().unwrap().is_empty());
    assert!(entries(dir.path()).is_empty());
}

#[tokio::test]
async fn temp_files_are_removed_after_success() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|_| Ok(ok("{}")));
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    client
        .request(
            &["apply", "-f", "-"],
            RequestParams::default().with_input(DOC),
        )
        .await
        .unwrap();
    assert!(
        calls.lock().unwrap()[0].input.is_some(),
        "file existed during the run"
    );
    assert!(entries(dir.path()).is_empty());
}

#[tokio::test]
async fn temp_files_are_removed_after_failure() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|_| Ok(failed(1, "Error from server (Forbidden): no")));
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let err = client
        .request(
            &["apply", "-f", "-"],
            RequestParams::default().with_input(DOC),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    assert!(calls.lock().unwrap()[0].input.is_some());
    assert!(entries(dir.path()).is_empty());
}

#[tokio::test]
async fn temp_files_are_removed_after_runner_error() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, _) = recording(|_| {
        Err(Error::Spawn {
            operation: "x".into(),
            source_kind: std::io::ErrorKind::NotFound,
        })
    });
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let err = client
        .request(
            &["apply", "-f", "-"],
            RequestParams::default().with_input(DOC),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Spawn { ref operation, .. } if operation == "apply"));
    assert!(entries(dir.path()).is_empty());
}

#[tokio::test]
async fn temp_files_are_removed_after_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    // A kubectl that never finishes, run by the real default runner.
    let kubectl = script(bin.path(), "kubectl", "exec sleep 30");
    let options = KubectlConfig::for_context("dev")
        .with_kubectl(kubectl)
        .with_runner(TokioRunner::new())
        .with_temp_dir(dir.path());
    let client = kubectl_client(options).unwrap();
    let err = client
        .request(
            &["apply", "-f", "-"],
            RequestParams::default()
                .with_input(DOC)
                .with_timeout_ms(300),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Timeout { ref operation, timeout_ms: 300 } if operation == "apply"),
        "{err:?}"
    );
    assert!(entries(dir.path()).is_empty());
}

#[tokio::test]
async fn temp_files_are_removed_after_runner_panic() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|_| panic!("runner exploded"));
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let task = tokio::spawn(async move {
        client
            .request(
                &["apply", "-f", "-"],
                RequestParams::default().with_input(DOC),
            )
            .await
    });
    let joined = task.await.unwrap_err();
    assert!(joined.is_panic());
    assert_eq!(
        calls.lock().unwrap()[0].input.as_deref(),
        Some(DOC),
        "the file existed when the runner panicked"
    );
    assert!(entries(dir.path()).is_empty());
}

#[tokio::test]
async fn temp_files_are_removed_when_the_request_is_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let started = Arc::new(Notify::new());
    let signal = started.clone();
    let runner = move |_inv: blue_kubernetes_client::Invocation| {
        let signal = signal.clone();
        async move {
            signal.notify_one();
            std::future::pending::<Result<blue_kubernetes_client::Output, Error>>().await
        }
    };
    let client = kubectl_client(options(runner, dir.path())).unwrap();
    let task = tokio::spawn(async move {
        client
            .request(
                &["apply", "-f", "-"],
                RequestParams::default().with_input(DOC),
            )
            .await
    });
    started.notified().await;
    assert_eq!(
        entries(dir.path()).len(),
        1,
        "the input file exists mid-run"
    );
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert!(entries(dir.path()).is_empty());
}
