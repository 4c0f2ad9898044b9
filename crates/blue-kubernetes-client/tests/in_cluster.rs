//! In-cluster mode: a private kubeconfig naming the service-account files,
//! never the token itself.

mod common;

use blue_kubernetes_client::{
    kubectl_client, Error, KubectlConfig, RequestParams, IN_CLUSTER_CONTEXT,
};
use common::{entries, ok, recording};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.planted-token-7f3a";

/// A service-account directory with a planted token and a CA file.
fn service_account() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), TOKEN).unwrap();
    std::fs::write(dir.path().join("ca.crt"), "-----BEGIN CERTIFICATE-----\n").unwrap();
    std::fs::write(dir.path().join("namespace"), "default").unwrap();
    dir
}

fn in_cluster(sa: &Path, temp: &Path, host: &str, port: Option<&str>) -> KubectlConfig {
    let mut options = KubectlConfig::in_cluster().with_temp_dir(temp);
    options.service_account_dir = Some(sa.to_path_buf());
    options.service_host = Some(host.to_owned());
    options.service_port = port.map(str::to_owned);
    options
}

#[tokio::test]
async fn in_cluster_kubeconfig_points_at_the_service_account_files() {
    let sa = service_account();
    let temp = tempfile::tempdir().unwrap();
    let (runner, calls) = recording(|_| Ok(ok("{}")));
    let mut options = in_cluster(sa.path(), temp.path(), "fd00:10:96::1", Some("6443"));
    options.runner = Some(std::sync::Arc::new(runner));
    let client = kubectl_client(options).unwrap();

    let path = client.kubeconfig().unwrap().to_path_buf();
    let scratch = path.parent().unwrap();
    assert_eq!(scratch.parent().unwrap(), temp.path());
    let mode = std::fs::metadata(scratch).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "a private scratch directory");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("planted-token"), "the token is never copied");
    let config: Value = serde_json::from_str(&text).unwrap();

    let cluster = &config["clusters"][0]["cluster"];
    assert_eq!(cluster["server"], "https://[fd00:10:96::1]:6443");
    assert_eq!(
        cluster["certificate-authority"],
        sa.path().join("ca.crt").to_str().unwrap()
    );
    let user = &config["users"][0]["user"];
    assert_eq!(user["tokenFile"], sa.path().join("token").to_str().unwrap());
    assert!(user.get("token").is_none());
    let context = &config["contexts"][0];
    assert_eq!(context["name"], IN_CLUSTER_CONTEXT);
    assert_eq!(context["context"]["cluster"], config["clusters"][0]["name"]);
    assert_eq!(context["context"]["user"], config["users"][0]["name"]);

    client
        .request(&["get", "ns"], RequestParams::default())
        .await
        .unwrap();
    let calls = calls.lock().unwrap();
    assert_eq!(
        calls[0].argv[..5],
        [
            "kubectl",
            "--kubeconfig",
            path.to_str().unwrap(),
            "--context",
            IN_CLUSTER_CONTEXT
        ]
    );
    let argv = calls[0].argv.join(" ");
    let env = format!("{:?}", calls[0].env);
    assert!(!argv.contains("planted-token") && !env.contains("planted-token"));
}

#[test]
fn port_defaults_to_443_and_ipv4_is_not_bracketed() {
    let sa = service_account();
    let temp = tempfile::tempdir().unwrap();
    let client = kubectl_client(in_cluster(sa.path(), temp.path(), "10.96.0.1", None)).unwrap();
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(client.kubeconfig().unwrap()).unwrap())
            .unwrap();
    assert_eq!(
        config["clusters"][0]["cluster"]["server"],
        "https://10.96.0.1:443"
    );
}

#[test]
fn in_cluster_kubeconfig_is_removed_when_the_client_drops() {
    let sa = service_account();
    let temp = tempfile::tempdir().unwrap();
    let client = kubectl_client(in_cluster(sa.path(), temp.path(), "10.96.0.1", None)).unwrap();
    assert_eq!(entries(temp.path()).len(), 1);
    drop(client);
    assert!(entries(temp.path()).is_empty());
}

#[test]
fn missing_service_host_is_a_clear_error() {
    let sa = service_account();
    let temp = tempfile::tempdir().unwrap();
    let err = kubectl_client(in_cluster(sa.path(), temp.path(), "  ", None)).unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidOption {
            field: "service_host",
            ..
        }
    ));
    assert!(err.to_string().contains("KUBERNETES_SERVICE_HOST"), "{err}");
    assert!(entries(temp.path()).is_empty());
}

#[test]
fn missing_service_account_files_are_refused() {
    let empty = tempfile::tempdir().unwrap();
    let temp = tempfile::tempdir().unwrap();
    let err = kubectl_client(in_cluster(empty.path(), temp.path(), "10.96.0.1", None)).unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidOption {
            field: "service_account_dir",
            ..
        }
    ));
    assert!(entries(temp.path()).is_empty());
}

#[test]
fn malformed_service_port_is_refused() {
    let sa = service_account();
    let temp = tempfile::tempdir().unwrap();
    let err = kubectl_client(in_cluster(
        sa.path(),
        temp.path(),
        "10.96.0.1",
        Some("https"),
    ))
    .unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidOption {
            field: "service_port",
            ..
        }
    ));
}
