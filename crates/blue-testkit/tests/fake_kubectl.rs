//! FakeKubectl answers the transport's command lines like kubectl would, so
//! the real KubectlClient runs against a FakeCluster.

use blue_kubernetes_client::{
    classify_output, kubectl_client, Client, ErrorKind, Invocation, KubectlClient, KubectlConfig,
    Output, ResourceDescriptor, Runner,
};
use blue_testkit::strategies::{arb_fault, arb_operation};
use blue_testkit::{CallCounts, FakeCluster, FakeKubectl, Operation};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::io::Write;

const NS: &str = "default";
const FINALIZER: &str = "colors.getcolors.ai/infrastructure";
const CONFLICT: &str = "Error from server (Conflict): Operation cannot be fulfilled on widgets.example.com \"a\": the object has been modified; please apply your changes to the latest version and try again\n";

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

fn setup() -> (FakeCluster, FakeKubectl) {
    let cluster = FakeCluster::new();
    let kubectl = FakeKubectl::new(cluster.clone()).with_type(widgets());
    (cluster, kubectl)
}

fn client(kubectl: &FakeKubectl) -> KubectlClient {
    kubectl_client(KubectlConfig::for_context("fake").with_runner(kubectl.clone()))
        .expect("valid options")
}

async fn run(kubectl: &FakeKubectl, args: &[&str]) -> Output {
    let mut argv = vec!["kubectl", "--context", "fake", "--request-timeout=30s"];
    argv.extend_from_slice(args);
    let invocation = Invocation {
        argv: argv.into_iter().map(str::to_owned).collect(),
        env: Vec::new(),
        timeout_ms: 45_000,
    };
    kubectl
        .run(invocation)
        .await
        .expect("the fake never fails to run")
}

fn json_of(output: &Output) -> Value {
    assert_eq!(output.exit_code, 0, "stderr: {}", output.stderr);
    serde_json::from_str(&output.stdout).expect("stdout is json")
}

#[tokio::test]
async fn list_and_get_round_trip_through_argv() {
    let (cluster, kubectl) = setup();
    cluster.create(&widgets(), NS, "b", json!({"size": 2}));
    cluster.create(&widgets(), NS, "a", json!({"size": 1}));

    let list = json_of(
        &run(
            &kubectl,
            &["get", "widgets.example.com", "-n", NS, "-o", "json"],
        )
        .await,
    );
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"][0], cluster.get(&widgets(), NS, "a").unwrap());
    assert_eq!(list["items"][1]["spec"]["size"], 2);

    let get = [
        "get",
        "widgets.example.com",
        "a",
        "-n",
        NS,
        "--ignore-not-found",
        "-o",
        "json",
    ];
    assert_eq!(
        json_of(&run(&kubectl, &get).await),
        cluster.get(&widgets(), NS, "a").unwrap()
    );

    let missing = run(
        &kubectl,
        &[
            "get",
            "widgets.example.com",
            "zz",
            "-n",
            NS,
            "--ignore-not-found",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!((missing.exit_code, missing.stdout.as_str()), (0, ""));
    let strict = run(
        &kubectl,
        &["get", "widgets.example.com", "zz", "-n", NS, "-o", "json"],
    )
    .await;
    assert_eq!(strict.exit_code, 1);
    assert_eq!(
        strict.stderr,
        "Error from server (NotFound): widgets.example.com \"zz\" not found\n"
    );

    assert_eq!(kubectl.count(), 4);
    assert_eq!(
        cluster.calls(),
        CallCounts {
            list: 1,
            get: 3,
            ..CallCounts::default()
        }
    );
    assert_eq!(
        kubectl.commands()[0],
        ["get", "widgets.example.com", "-n", NS, "-o", "json"]
    );
}

#[tokio::test]
async fn replace_reads_the_status_body_from_the_file() {
    let (cluster, kubectl) = setup();
    let a = cluster.create(&widgets(), NS, "a", json!({"size": 1}));
    let body = json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {
            "name": "a", "namespace": NS,
            "uid": a["metadata"]["uid"], "resourceVersion": a["metadata"]["resourceVersion"],
        },
        "status": {"phase": "Ready"},
    });
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(body.to_string().as_bytes()).unwrap();
    let path = file.path().to_str().unwrap();
    let raw = "/apis/example.com/v1/namespaces/default/widgets/a/status";

    let out = json_of(&run(&kubectl, &["replace", "--raw", raw, "-f", path]).await);
    assert_eq!(out["status"]["phase"], "Ready");
    assert_eq!(out["spec"]["size"], 1);
    assert_eq!(out, cluster.get(&widgets(), NS, "a").unwrap());

    // The same body again is stale now.
    let stale = run(&kubectl, &["replace", "--raw", raw, "-f", path]).await;
    assert_eq!((stale.exit_code, stale.stderr.as_str()), (1, CONFLICT));
    assert_eq!(cluster.calls().update_status, 2);
}

#[tokio::test]
async fn patch_sets_finalizers_guarded_by_the_resource_version() {
    let (cluster, kubectl) = setup();
    let a = cluster.create(&widgets(), NS, "a", json!({}));
    let patch = json!({"metadata": {"resourceVersion": a["metadata"]["resourceVersion"], "finalizers": [FINALIZER]}})
        .to_string();
    let args = [
        "patch",
        "widgets.example.com",
        "a",
        "-n",
        NS,
        "--type=merge",
        "-p",
        &patch,
        "-o",
        "json",
    ];
    let out = json_of(&run(&kubectl, &args).await);
    assert_eq!(out["metadata"]["finalizers"], json!([FINALIZER]));
    assert_eq!(cluster.calls().update_finalizers, 1);

    let again = run(&kubectl, &args).await;
    assert_eq!(again.exit_code, 1);
    assert_eq!(again.stderr, CONFLICT);
    assert_eq!(
        classify_output(&again.stdout, &again.stderr),
        ErrorKind::Conflict
    );

    let other = r#"{"spec":{"size":3}}"#;
    let unsupported = run(
        &kubectl,
        &[
            "patch",
            "widgets.example.com",
            "a",
            "-n",
            NS,
            "--type=merge",
            "-p",
            other,
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(unsupported.exit_code, 1);
}

#[tokio::test]
async fn unknown_commands_and_types_fail_like_kubectl() {
    let (_cluster, kubectl) = setup();
    let unknown = run(&kubectl, &["frobnicate", "widgets"]).await;
    assert_eq!(unknown.exit_code, 1);
    assert!(
        unknown.stderr.starts_with("error: unknown command"),
        "{}",
        unknown.stderr
    );

    let no_type = run(
        &kubectl,
        &["get", "gadgets.example.com", "-n", NS, "-o", "json"],
    )
    .await;
    assert_eq!(no_type.exit_code, 1);
    assert_eq!(
        no_type.stderr,
        "error: the server doesn't have a resource type \"gadgets.example.com\"\n"
    );
    assert_eq!(classify_output("", &no_type.stderr), ErrorKind::NotFound);

    let yaml = run(
        &kubectl,
        &["get", "widgets.example.com", "-n", NS, "-o", "yaml"],
    )
    .await;
    assert_eq!(yaml.exit_code, 1);
    assert_eq!(
        kubectl.count(),
        3,
        "unsupported invocations are recorded too"
    );
}

#[tokio::test]
async fn injected_unavailable_prints_the_connection_refused_text() {
    let (cluster, kubectl) = setup();
    cluster.inject(Operation::List, blue_testkit::Fault::Unavailable);
    let out = run(
        &kubectl,
        &["get", "widgets.example.com", "-n", NS, "-o", "json"],
    )
    .await;
    assert_eq!(out.exit_code, 1);
    assert!(out.stderr.contains(
        "The connection to the server 127.0.0.1:6443 was refused - did you specify the right host or port?"
    ));
}

#[tokio::test]
async fn the_real_kubectl_client_runs_against_the_fake() {
    let (cluster, kubectl) = setup();
    let client = client(&kubectl);
    let d = widgets();
    cluster.create(&d, NS, "a", json!({"size": 1}));

    let items = client.list_resources(&d, NS).await.unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(client.get_resource(&d, NS, "missing").await.unwrap(), None);
    let a = client.get_resource(&d, NS, "a").await.unwrap().unwrap();

    let a = client
        .update_finalizers(&d, &a, &[FINALIZER.to_owned()])
        .await
        .unwrap();
    assert_eq!(a["metadata"]["finalizers"], json!([FINALIZER]));
    let a = client
        .update_status(&d, &a, &json!({"phase": "Ready"}))
        .await
        .unwrap();
    assert_eq!(a["status"]["phase"], "Ready");
    assert_eq!(cluster.get(&d, NS, "a").unwrap(), a);

    // A concurrent spec edit makes the next write from the old snapshot conflict.
    cluster.edit_spec(&d, NS, "a", |s| s["size"] = json!(2));
    let err = client
        .update_status(&d, &a, &json!({"phase": "Stale"}))
        .await
        .unwrap_err();
    assert!(err.is_conflict());
    let err = client.update_finalizers(&d, &a, &[]).await.unwrap_err();
    assert!(err.is_conflict());

    // The deletion flow: the last finalizer removal makes the object go.
    let deleting = cluster.delete(&d, NS, "a").unwrap();
    let gone = client.update_finalizers(&d, &deleting, &[]).await.unwrap();
    assert!(gone["metadata"]["deletionTimestamp"].is_string());
    assert!(client.list_resources(&d, NS).await.unwrap().is_empty());

    assert_eq!(kubectl.count(), 9);
    assert_eq!(
        cluster.calls(),
        CallCounts {
            list: 2,
            get: 2,
            update_status: 2,
            update_finalizers: 3,
            leases: 0,
            ..CallCounts::default()
        }
    );
    for invocation in kubectl.invocations() {
        assert_eq!(
            invocation.argv[..4],
            ["kubectl", "--context", "fake", "--request-timeout=30s"]
        );
    }
    let replace = &kubectl.commands()[4];
    assert_eq!(
        replace[..3],
        [
            "replace",
            "--raw",
            "/apis/example.com/v1/namespaces/default/widgets/a/status"
        ]
    );
    assert!(
        !std::path::Path::new(&replace[4]).exists(),
        "the transport removed its input file"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Every fault reaches the real client with the kind it was injected as.
    #[test]
    fn faults_survive_the_round_trip_through_kubectl_text(op in arb_operation(), fault in arb_fault()) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        runtime.block_on(async {
            let (cluster, kubectl) = setup();
            let client = client(&kubectl);
            let d = widgets();
            let a = cluster.create(&d, NS, "a", json!({}));
            let before = cluster.revision();
            cluster.inject(op, fault);
            let kind = match op {
                Operation::List => client.list_resources(&d, NS).await.map(drop),
                Operation::Get => client.get_resource(&d, NS, "a").await.map(drop),
                Operation::UpdateStatus => client.update_status(&d, &a, &json!({})).await.map(drop),
                Operation::UpdateFinalizers => client.update_finalizers(&d, &a, &[]).await.map(drop),
                lease => unreachable!("arb_operation yields resource operations, not {lease:?}"),
            }
            .unwrap_err()
            .kind();
            prop_assert_eq!(kind, fault.kind());
            prop_assert_eq!(cluster.revision(), before);
            Ok(())
        })?;
    }
}

#[tokio::test]
async fn replace_rejects_bad_bodies_and_paths_without_writing() {
    let (cluster, kubectl) = setup();
    cluster.create(&widgets(), NS, "a", json!({}));
    let raw = "/apis/example.com/v1/namespaces/default/widgets/a/status";
    let write = |text: &str| {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        file
    };
    let other = write(r#"{"metadata":{"name":"b","resourceVersion":"1"},"status":{}}"#);
    let not_json = write("status: {}");
    let no_meta = write(r#"{"metadata":"a"}"#);
    for file in [&other, &not_json, &no_meta] {
        let path = file.path().to_str().unwrap();
        let out = run(&kubectl, &["replace", "--raw", raw, "-f", path]).await;
        assert_eq!(out.exit_code, 1, "{}", out.stderr);
    }
    let missing = run(
        &kubectl,
        &["replace", "--raw", raw, "-f", "/nonexistent/body.json"],
    )
    .await;
    assert_eq!(missing.exit_code, 1);
    let unknown = "/apis/example.com/v2/namespaces/default/widgets/a/status";
    let path = other.path().to_str().unwrap();
    let wrong_version = run(&kubectl, &["replace", "--raw", unknown, "-f", path]).await;
    assert_eq!(
        classify_output("", &wrong_version.stderr),
        ErrorKind::NotFound
    );
    assert_eq!(cluster.revision(), 1, "nothing was written");
    assert_eq!(cluster.calls().update_status, 0);
}

#[tokio::test]
async fn reads_name_the_exact_version_and_another_version_is_unknown() {
    let (cluster, kubectl) = setup();
    cluster.create(&widgets(), NS, "a", json!({}));
    let listed = client(&kubectl)
        .list_resources(&widgets(), NS)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(kubectl.commands()[0][1], "widgets.v1.example.com");

    let other = ResourceDescriptor::new("example.com", "v2", "widgets", "Widget");
    let err = client(&kubectl)
        .list_resources(&other, NS)
        .await
        .unwrap_err();
    assert_eq!(
        err.kind(),
        ErrorKind::NotFound,
        "like kubectl: no such resource type"
    );
    let plain = run(
        &kubectl,
        &["get", "widgets.example.com", "-n", NS, "-o", "json"],
    )
    .await;
    assert_eq!(json_of(&plain)["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn preflight_and_events_work_through_the_kubectl_command_lines() {
    use blue_kubernetes::config::preflight;
    use blue_kubernetes::resource::{Phase, Reason};
    use blue_kubernetes::{controller, reconcile, Config, Report};
    let (cluster, kubectl) = setup();
    cluster.create(&widgets(), NS, "a", json!({"config": {"value": 1}}));
    let infra = blue_testkit::FakeInfra::new();
    let mut config = Config::new(
        std::sync::Arc::new(client(&kubectl)),
        vec![infra.package(widgets())],
    );
    config.namespace = NS.into();
    config.event_component = Some("fake-operator".into());
    let controller = controller(config).unwrap();
    assert_eq!(preflight(&controller).await, vec![]);

    let denied = blue_kubernetes_client::AccessCheck::new(NS, "patch", "example.com", "widgets");
    cluster.deny(denied.clone());
    assert_eq!(
        preflight(&controller).await,
        vec![blue_kubernetes::config::Problem::Forbidden(denied)]
    );

    let package = &controller.config().packages[0];
    kubectl.reset();
    let report = reconcile(&controller, package, NS, "a").await.unwrap();
    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    let reasons: Vec<Value> = cluster
        .events()
        .iter()
        .map(|e| e["reason"].clone())
        .collect();
    // The Reconciling Event was still queued when Converged came behind it.
    assert_eq!(reasons, [json!("Converged")]);
    // A new resource: get, re-read, finalizer, Reconciling, Ready (five
    // calls, the infrastructure is faked in memory) plus one create per Event.
    let commands = kubectl.commands();
    let events = commands
        .iter()
        .filter(|c| c[..3] == ["create", "--raw", "/api/v1/namespaces/default/events"])
        .count();
    assert_eq!((commands.len(), events), (6, 1), "{commands:?}");
}
