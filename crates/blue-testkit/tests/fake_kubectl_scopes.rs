//! FakeKubectl's namespace scopes: `--all-namespaces` (`-A`) lists across
//! namespaces, and a cluster-scoped type is addressed without `-n`.

use blue_kubernetes_client::{Invocation, Output, ResourceDescriptor, Runner};
use blue_testkit::{FakeCluster, FakeKubectl, Operation, RecordedCall};
use serde_json::{json, Value};
use std::io::Write;

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

fn racks() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "racks", "Rack").cluster_scoped()
}

fn setup() -> (FakeCluster, FakeKubectl) {
    let cluster = FakeCluster::new();
    let kubectl = FakeKubectl::new(cluster.clone())
        .with_type(widgets())
        .with_type(racks());
    (cluster, kubectl)
}

async fn run(kubectl: &FakeKubectl, args: &[&str]) -> Output {
    let mut argv = vec!["kubectl", "--context", "fake", "--request-timeout=30s"];
    argv.extend_from_slice(args);
    let invocation = Invocation {
        argv: argv.into_iter().map(str::to_owned).collect(),
        env: Vec::new(),
        timeout_ms: 45_000,
    };
    kubectl.run(invocation).await.expect("the fake runs")
}

fn json_of(output: &Output) -> Value {
    assert_eq!(output.exit_code, 0, "stderr: {}", output.stderr);
    serde_json::from_str(&output.stdout).expect("stdout is json")
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|o| {
            let ns = o["metadata"]["namespace"].as_str().unwrap_or("-");
            format!("{ns}/{}", o["metadata"]["name"].as_str().unwrap())
        })
        .collect()
}

#[tokio::test]
async fn all_namespaces_lists_every_namespace_in_either_spelling() {
    let (cluster, kubectl) = setup();
    cluster.create(&widgets(), "prod", "a", json!({}));
    cluster.create(&widgets(), "dev", "b", json!({}));
    for flag in ["--all-namespaces", "-A"] {
        let args = ["get", "widgets.example.com", flag, "-o", "json"];
        let list = json_of(&run(&kubectl, &args).await);
        assert_eq!(names(&list), ["dev/b", "prod/a"]);
    }
    let chunked = [
        "get",
        "widgets.example.com",
        "--all-namespaces",
        "--chunk-size=500",
        "-o",
        "json",
    ];
    assert_eq!(names(&json_of(&run(&kubectl, &chunked).await)).len(), 2);
    let one = ["get", "widgets.example.com", "-n", "dev", "-o", "json"];
    assert_eq!(names(&json_of(&run(&kubectl, &one).await)), ["dev/b"]);
    assert_eq!(
        cluster.call_log()[0],
        RecordedCall::new(Operation::List, "widgets.example.com", "", None)
    );

    let by_name = ["get", "widgets.example.com", "a", "-A", "-o", "json"];
    assert_eq!(run(&kubectl, &by_name).await.exit_code, 1);
}

#[tokio::test]
async fn a_cluster_scoped_type_is_read_and_written_without_a_namespace() {
    let (cluster, kubectl) = setup();
    cluster.create(&racks(), "", "r", json!({}));
    cluster.create(&widgets(), "default", "w", json!({}));

    let list = json_of(&run(&kubectl, &["get", "racks.example.com", "-o", "json"]).await);
    assert_eq!(names(&list), ["-/r"]);
    let get = [
        "get",
        "racks.example.com",
        "r",
        "--ignore-not-found",
        "-o",
        "json",
    ];
    let r = json_of(&run(&kubectl, &get).await);
    assert_eq!(r["metadata"]["name"], "r");
    // Without -n a namespaced type is read from the context's namespace.
    let w = ["get", "widgets.example.com", "w", "-o", "json"];
    assert_eq!(json_of(&run(&kubectl, &w).await)["metadata"]["name"], "w");

    let rv = r["metadata"]["resourceVersion"].as_str().unwrap();
    let patch = json!({"metadata": {"resourceVersion": rv, "finalizers": ["x/y"]}}).to_string();
    let args = [
        "patch",
        "racks.example.com",
        "r",
        "--type=merge",
        "-p",
        &patch,
        "-o",
        "json",
    ];
    let patched = json_of(&run(&kubectl, &args).await);
    assert_eq!(patched["metadata"]["finalizers"], json!(["x/y"]));

    let mut body = tempfile::NamedTempFile::new().unwrap();
    let mut status = patched.clone();
    status["status"] = json!({"phase": "Ready"});
    body.write_all(status.to_string().as_bytes()).unwrap();
    let file = body.path().to_str().unwrap();
    let path = "/apis/example.com/v1/racks/r/status";
    let written = json_of(&run(&kubectl, &["replace", "--raw", path, "-f", file]).await);
    assert_eq!(written["status"]["phase"], "Ready");
    assert_eq!(
        cluster.get(&racks(), "", "r").unwrap()["status"]["phase"],
        "Ready"
    );

    // A namespaced path for a cluster-scoped type (and the reverse) is not found.
    let wrong = "/apis/example.com/v1/namespaces/default/racks/r/status";
    assert_eq!(
        run(&kubectl, &["replace", "--raw", wrong, "-f", file])
            .await
            .exit_code,
        1
    );
    let wrong = "/apis/example.com/v1/widgets/w/status";
    assert_eq!(
        run(&kubectl, &["replace", "--raw", wrong, "-f", file])
            .await
            .exit_code,
        1
    );
}

#[tokio::test]
async fn the_kubectl_client_lists_everywhere_and_writes_cluster_scoped_objects() {
    use blue_kubernetes_client::{kubectl_client, Client, KubectlConfig};
    let (cluster, kubectl) = setup();
    let client = kubectl_client(KubectlConfig::for_context("fake").with_runner(kubectl.clone()))
        .expect("valid options");
    cluster.create(&widgets(), "prod", "a", json!({}));
    cluster.create(&widgets(), "dev", "b", json!({}));
    cluster.create(&racks(), "", "r", json!({}));

    let everywhere = client.list_resources(&widgets(), "").await.unwrap();
    assert_eq!(names(&json!({ "items": everywhere })), ["dev/b", "prod/a"]);
    let racks_listed = client.list_resources(&racks(), "").await.unwrap();
    assert_eq!(names(&json!({ "items": racks_listed })), ["-/r"]);

    let r = client
        .get_resource(&racks(), "", "r")
        .await
        .unwrap()
        .unwrap();
    let r = client
        .update_finalizers(&racks(), &r, &["x/y".to_owned()])
        .await
        .unwrap();
    let r = client
        .update_status(&racks(), &r, &json!({"phase": "Ready"}))
        .await
        .unwrap();
    assert_eq!(r["status"]["phase"], "Ready");
    let stored = cluster.get(&racks(), "", "r").unwrap();
    assert_eq!(stored["metadata"]["finalizers"], json!(["x/y"]));
    assert_eq!(stored["status"]["phase"], "Ready");
    for command in kubectl.commands() {
        assert!(!command.contains(&"-n".to_owned()), "{command:?}");
    }
}

#[tokio::test]
async fn a_selector_lists_only_matching_objects_in_every_spelling() {
    let (cluster, kubectl) = setup();
    for (name, app) in [("a", "web"), ("b", "api"), ("c", "web")] {
        let metadata = json!({"name": name, "namespace": "dev", "labels": {"app": app}});
        cluster.create_with(&widgets(), json!({"metadata": metadata}));
    }
    let spellings: [&[&str]; 3] = [
        &["-l", "app=web"],
        &["--selector", "app=web"],
        &["--selector=app=web"],
    ];
    for selector in spellings {
        let mut args = vec!["get", "widgets.example.com", "-n", "dev"];
        args.extend_from_slice(selector);
        args.extend(["-o", "json"]);
        let list = json_of(&run(&kubectl, &args).await);
        assert_eq!(names(&list), ["dev/a", "dev/c"], "{selector:?}");
    }
    let args = ["get", "widgets.example.com", "-l", "app in (", "-o", "json"];
    let refused = run(&kubectl, &args).await;
    assert_ne!(refused.exit_code, 0);
    assert!(
        refused.stderr.contains("invalid label selector"),
        "{}",
        refused.stderr
    );
}
