//! The command line every request runs, and how responses are returned.

mod common;

use blue_kubernetes_client::{
    kubectl_client, Client, Error, KubectlConfig, RequestParams, ResourceDescriptor, Response,
};
use common::{ok, recording};

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

#[tokio::test]
async fn command_line_is_context_then_request_timeout_then_args() {
    let (runner, calls) = recording(|_| Ok(ok("{}")));
    let client =
        kubectl_client(KubectlConfig::for_context("kind-dev").with_runner(runner)).unwrap();
    client
        .request(&["get", "pods", "-o", "json"], RequestParams::default())
        .await
        .unwrap();
    let calls = calls.lock().unwrap();
    assert_eq!(
        calls[0].argv,
        [
            "kubectl",
            "--context",
            "kind-dev",
            "--request-timeout=30s",
            "get",
            "pods",
            "-o",
            "json"
        ]
    );
    assert_eq!(calls[0].timeout_ms, 45_000);
    assert!(calls[0].env.is_empty());
}

#[tokio::test]
async fn command_line_puts_kubeconfig_before_context() {
    let (runner, calls) = recording(|_| Ok(ok("")));
    let options = KubectlConfig::for_context("prod")
        .with_kubeconfig("/etc/kube/config")
        .with_kubectl("/opt/bin/kubectl")
        .with_request_timeout_seconds(7)
        .with_runner(runner);
    let client = kubectl_client(options).unwrap();
    client
        .request(&["version"], RequestParams::raw())
        .await
        .unwrap();
    assert_eq!(
        calls.lock().unwrap()[0].argv,
        [
            "/opt/bin/kubectl",
            "--kubeconfig",
            "/etc/kube/config",
            "--context",
            "prod",
            "--request-timeout=7s",
            "version"
        ]
    );
}

#[tokio::test]
async fn env_and_process_deadline_reach_the_runner() {
    let (runner, calls) = recording(|_| Ok(ok("")));
    let options = KubectlConfig::for_context("dev")
        .with_env("KUBECACHEDIR", "/tmp/cache")
        .with_timeout_ms(1_234)
        .with_runner(runner);
    let client = kubectl_client(options).unwrap();
    client
        .request(&["get", "ns"], RequestParams::default())
        .await
        .unwrap();
    client
        .request(&["get", "ns"], RequestParams::default().with_timeout_ms(99))
        .await
        .unwrap();
    let calls = calls.lock().unwrap();
    assert_eq!(
        calls[0].env,
        [("KUBECACHEDIR".to_owned(), "/tmp/cache".to_owned())]
    );
    assert_eq!(calls[0].timeout_ms, 1_234);
    assert_eq!(
        calls[1].timeout_ms, 99,
        "per-request deadline overrides the client's"
    );
}

#[tokio::test]
async fn list_resources_gets_the_exact_version_and_returns_items() {
    let (runner, calls) = recording(|_| {
        Ok(ok(
            r#"{"kind":"List","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#,
        ))
    });
    let client = kubectl_client(KubectlConfig::for_context("dev").with_runner(runner)).unwrap();
    let items = client.list_resources(&widgets(), "team-a").await.unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[1]["metadata"]["name"], "b");
    assert_eq!(
        calls.lock().unwrap()[0].args(),
        [
            "get",
            "widgets.v1.example.com",
            "-n",
            "team-a",
            "-o",
            "json"
        ]
    );
}

#[tokio::test]
async fn list_without_items_is_a_decode_error() {
    let (runner, _) = recording(|_| Ok(ok(r#"{"kind":"Widget"}"#)));
    let client = kubectl_client(KubectlConfig::for_context("dev").with_runner(runner)).unwrap();
    let err = client
        .list_resources(&widgets(), "default")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Decode { ref operation } if operation == "get"));
}

#[tokio::test]
async fn get_resource_ignores_not_found_and_maps_empty_output_to_none() {
    let (runner, calls) = recording(|inv| {
        if inv.argv.contains(&"present".to_owned()) {
            Ok(ok(r#"{"metadata":{"name":"present"}}"#))
        } else {
            Ok(ok("\n"))
        }
    });
    let client = kubectl_client(KubectlConfig::for_context("dev").with_runner(runner)).unwrap();
    let found = client
        .get_resource(&widgets(), "default", "present")
        .await
        .unwrap();
    assert_eq!(found.unwrap()["metadata"]["name"], "present");
    let missing = client
        .get_resource(&widgets(), "default", "absent")
        .await
        .unwrap();
    assert!(missing.is_none());
    assert_eq!(
        calls.lock().unwrap()[1].args(),
        [
            "get",
            "widgets.v1.example.com",
            "absent",
            "-n",
            "default",
            "--ignore-not-found",
            "-o",
            "json"
        ]
    );
}

#[tokio::test]
async fn names_that_could_read_as_flags_are_refused_before_running() {
    let (runner, calls) = recording(|_| Ok(ok("")));
    let client = kubectl_client(KubectlConfig::for_context("dev").with_runner(runner)).unwrap();
    let err = client
        .get_resource(&widgets(), "default", "--all")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidOption { field: "name", .. }));
    let err = client.list_resources(&widgets(), "a/b").await.unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidOption {
            field: "namespace",
            ..
        }
    ));
    assert!(calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn raw_request_returns_stdout_verbatim() {
    let (runner, _) = recording(|_| Ok(ok("not json\n")));
    let client = kubectl_client(KubectlConfig::for_context("dev").with_runner(runner)).unwrap();
    let response = client
        .request(&["version"], RequestParams::raw())
        .await
        .unwrap();
    assert_eq!(response, Response::Text("not json\n".into()));
}

#[tokio::test]
async fn json_request_parses_stdout_and_maps_empty_output_to_none() {
    let (runner, _) = recording(|inv| {
        Ok(ok(if inv.argv.contains(&"empty".to_owned()) {
            "  \n"
        } else {
            r#"{"a":1}"#
        }))
    });
    let client = kubectl_client(KubectlConfig::for_context("dev").with_runner(runner)).unwrap();
    let full = client
        .request(&["get", "full"], RequestParams::default())
        .await
        .unwrap();
    assert_eq!(full, Response::Json(Some(serde_json::json!({"a": 1}))));
    let empty = client
        .request(&["get", "empty"], RequestParams::default())
        .await
        .unwrap();
    assert_eq!(empty, Response::Json(None));
}

#[tokio::test]
async fn output_that_is_not_json_is_a_decode_error() {
    let (runner, _) = recording(|_| Ok(ok("NAME   AGE\nw      1d\n")));
    let client = kubectl_client(KubectlConfig::for_context("dev").with_runner(runner)).unwrap();
    let err = client
        .request(&["get", "widgets"], RequestParams::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Decode { ref operation } if operation == "get"));
}

#[tokio::test]
async fn request_accepts_owned_argument_vectors() {
    let (runner, calls) = recording(|_| Ok(ok("")));
    let client = kubectl_client(KubectlConfig::for_context("dev").with_runner(runner)).unwrap();
    let args: Vec<String> = vec!["get".into(), "ns".into()];
    client
        .request(&args, RequestParams::default())
        .await
        .unwrap();
    assert_eq!(calls.lock().unwrap()[0].args(), ["get", "ns"]);
}

#[test]
fn kubectl_client_is_a_shareable_client() {
    fn shareable<T: Client + Send + Sync + 'static>() {}
    shareable::<blue_kubernetes_client::KubectlClient>();
    let client = kubectl_client(KubectlConfig::for_context("dev")).unwrap();
    let _shared: std::sync::Arc<dyn Client> = std::sync::Arc::new(client);
}
