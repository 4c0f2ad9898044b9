//! `kubectl_client` refuses options that could reach the wrong cluster or
//! never time out.

mod common;

use blue_kubernetes_client::{kubectl_client, Error, KubectlConfig, RequestParams};
use common::{ok, recording};

fn field_of(result: Result<blue_kubernetes_client::KubectlClient, Error>) -> &'static str {
    match result {
        Err(Error::InvalidOption { field, .. }) => field,
        other => panic!("expected an invalid option, got {other:?}"),
    }
}

#[test]
fn missing_context_is_refused_instead_of_using_the_current_context() {
    let err = kubectl_client(KubectlConfig::default()).unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidOption {
            field: "context",
            ..
        }
    ));
    assert!(err.to_string().contains("context"));
}

#[test]
fn blank_context_is_refused() {
    for blank in ["", "   ", "\t\n"] {
        assert_eq!(
            field_of(kubectl_client(KubectlConfig::for_context(blank))),
            "context"
        );
    }
}

#[test]
fn zero_timeouts_are_refused() {
    let options = KubectlConfig::for_context("dev").with_request_timeout_seconds(0);
    assert_eq!(field_of(kubectl_client(options)), "request_timeout_seconds");
    let options = KubectlConfig::for_context("dev").with_timeout_ms(0);
    assert_eq!(field_of(kubectl_client(options)), "timeout_ms");
}

#[test]
fn empty_kubectl_path_is_refused() {
    let options = KubectlConfig::for_context("dev").with_kubectl("");
    assert_eq!(field_of(kubectl_client(options)), "kubectl");
}

#[test]
fn in_cluster_cannot_be_combined_with_context_or_kubeconfig() {
    let mut options = KubectlConfig::in_cluster();
    options.context = Some("dev".into());
    assert_eq!(field_of(kubectl_client(options)), "context");
    let options = KubectlConfig::in_cluster().with_kubeconfig("/etc/kube/config");
    assert_eq!(field_of(kubectl_client(options)), "kubeconfig");
}

#[test]
fn malformed_environment_names_are_refused() {
    let options = KubectlConfig::for_context("dev").with_env("A=B", "x");
    assert_eq!(field_of(kubectl_client(options)), "env");
}

#[tokio::test]
async fn zero_request_deadline_and_empty_args_are_refused_without_running() {
    let (runner, calls) = recording(|_| Ok(ok("")));
    let client = kubectl_client(KubectlConfig::for_context("dev").with_runner(runner)).unwrap();
    let err = client
        .request(&["get", "ns"], RequestParams::default().with_timeout_ms(0))
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidOption {
            field: "timeout_ms",
            ..
        }
    ));
    let err = client
        .request::<&str>(&[], RequestParams::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidOption { field: "args", .. }));
    assert!(calls.lock().unwrap().is_empty());
}

#[test]
fn options_debug_shows_no_environment_values() {
    let options = KubectlConfig::for_context("dev").with_env("AWS_SECRET_ACCESS_KEY", "hunter2");
    let shown = format!("{options:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    let client = kubectl_client(options).unwrap();
    assert!(!format!("{client:?}").contains("hunter2"));
}
