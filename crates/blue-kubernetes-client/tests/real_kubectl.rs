//! Runs the real kubectl binary (skipped with a note when it is not on PATH)
//! against an unreachable server: classification and the generated in-cluster
//! kubeconfig are checked against what kubectl really does.

use blue_kubernetes_client::{
    kubectl_client, Client, Error, ErrorKind, KubectlConfig, RequestParams, ResourceDescriptor,
};
use serde_json::{json, Value};
use std::path::Path;

/// A self-signed CA certificate (public test data, no key): kubectl refuses
/// to start with a `certificate-authority` that is not valid PEM.
const TEST_CA: &str = "-----BEGIN CERTIFICATE-----
MIIBmzCCAUGgAwIBAgIUZuh/RnErL7uMj3Pj2etvq7hsagkwCgYIKoZIzj0EAwIw
IjEgMB4GA1UEAwwXYmx1ZS1rdWJlcm5ldGVzLXRlc3QtY2EwIBcNMjYxMTI5MTEy
NzEzWhgPMjEyNjExMDUxMTI3MTNaMCIxIDAeBgNVBAMMF2JsdWUta3ViZXJuZXRl
cy10ZXN0LWNhMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAErMKdiN7cO4sMqyD+
0uJNnjjlt9c9QTE6wNBY8QZ4AKv6AwMpcOy+u/aHZvnKuoZgKLOF8cRXqUBsy1P5
XzmebqNTMFEwHQYDVR0OBBYEFF3mu3niKu+JhAh1/HkcYxCQHn2YMB8GA1UdIwQY
MBaAFF3mu3niKu+JhAh1/HkcYxCQHn2YMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZI
zj0EAwIDSAAwRQIgFbw5PKUsFvm81uBTb+zE8RBPlmOW7SP5xDOO+HWM6SACIQCa
HvoZSHRRH+ACmlrB7PdAcPzgCwV/jKbLD05r7VnGmA==
-----END CERTIFICATE-----
";

const TOKEN: &str = "planted-token-9c1d";

/// kubectl is a prerequisite of the whole suite (the README says so): a
/// machine without it fails here, saying why, rather than passing
/// without having run.
fn require_kubectl() {
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join("kubectl").is_file()))
        .unwrap_or(false);
    assert!(
        found,
        "kubectl is not on PATH: these tests run the real kubectl"
    );
}

/// Keeps kubectl's discovery cache out of `~/.kube`.
fn isolated(options: KubectlConfig, scratch: &Path) -> KubectlConfig {
    options
        .with_env("KUBECACHEDIR", scratch.join("cache").to_str().unwrap())
        .with_temp_dir(scratch)
        .with_request_timeout_seconds(5)
        .with_timeout_ms(30_000)
}

fn assert_text_free(err: &Error) {
    for shown in [err.to_string(), format!("{err:?}")] {
        for text in ["127.0.0.1", "refused", "memcache", "did you specify", TOKEN] {
            assert!(!shown.contains(text), "{text:?} in {shown}");
        }
    }
}

#[tokio::test]
async fn real_kubectl_against_unreachable_server_is_unavailable_without_text() {
    require_kubectl();
    let scratch = tempfile::tempdir().unwrap();
    let kubeconfig = scratch.path().join("kubeconfig.json");
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "nowhere", "cluster": {
            "server": "https://127.0.0.1:1", "insecure-skip-tls-verify": true}}],
        "users": [{"name": "someone", "user": {"token": TOKEN}}],
        "contexts": [{"name": "unreachable", "context": {"cluster": "nowhere", "user": "someone"}}],
    });
    std::fs::write(&kubeconfig, config.to_string()).unwrap();
    let options = KubectlConfig::for_context("unreachable").with_kubeconfig(&kubeconfig);
    let client = kubectl_client(isolated(options, scratch.path())).unwrap();

    let err = client
        .request(
            &["get", "configmaps", "-n", "default", "-o", "json"],
            RequestParams::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Kubectl { ref operation, exit_code: 1, kind: ErrorKind::Unavailable } if operation == "get"),
        "{err:?}"
    );
    assert_text_free(&err);

    let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    let err = client
        .list_resources(&widgets, "default")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_text_free(&err);
}

#[tokio::test]
async fn real_kubectl_accepts_the_generated_in_cluster_kubeconfig() {
    require_kubectl();
    let scratch = tempfile::tempdir().unwrap();
    let sa = tempfile::tempdir().unwrap();
    std::fs::write(sa.path().join("token"), TOKEN).unwrap();
    std::fs::write(sa.path().join("ca.crt"), TEST_CA).unwrap();
    let mut options = KubectlConfig::in_cluster();
    options.service_account_dir = Some(sa.path().to_path_buf());
    options.service_host = Some("127.0.0.1".into());
    options.service_port = Some("1".into());
    let client = kubectl_client(isolated(options, scratch.path())).unwrap();

    // kubectl resolves the generated context to our server and token file...
    let view = client
        .request(
            &["config", "view", "--minify", "-o", "json"],
            RequestParams::default(),
        )
        .await
        .unwrap()
        .into_json()
        .unwrap();
    assert_eq!(
        view["clusters"][0]["cluster"]["server"],
        "https://127.0.0.1:1"
    );
    let user: &Value = &view["users"][0]["user"];
    assert_eq!(user["tokenFile"], sa.path().join("token").to_str().unwrap());
    assert!(!view.to_string().contains(TOKEN));

    // ...and loads the CA and token to make a real (refused) request.
    let err = client
        .request(
            &["get", "configmaps", "-o", "json"],
            RequestParams::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err:?}");
    assert_text_free(&err);
}
