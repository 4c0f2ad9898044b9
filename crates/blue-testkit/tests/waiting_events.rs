//! A resource waiting for a reference says which one, in its Event and in
//! the operator's log: the field, the kind and the object name, and
//! whether that object is missing or not Ready. Never its outputs.

mod common;

use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes::{reconcile, Report};
use blue_kubernetes_client::ResourceDescriptor;
use blue_testkit::{FakeClock, FakeCluster, FakeInfra};
use common::{build, NS};
use serde_json::{json, Value};

/// What the server reports: the tests look for it where it must not be.
const OUTPUT_MARKER: &str = "host-7d1c4e-marker";

fn servers() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "servers", "Server")
}

fn databases() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "databases", "Database")
}

fn db_spec(server: &str) -> Value {
    json!({"config": {"value": 1, "serverRef": {"name": server}}})
}

/// The `DependencyNotReady` Event messages written about database `name`.
fn waiting_messages(cluster: &FakeCluster, name: &str) -> Vec<String> {
    let events = cluster.events();
    let about = |e: &&Value| e["involvedObject"]["name"] == name;
    let waiting = |e: &&Value| e["reason"] == "DependencyNotReady";
    events
        .iter()
        .filter(about)
        .filter(waiting)
        .map(|e| e["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn text(lines: &[common::log::Line]) -> String {
    let lines: Vec<&str> = lines.iter().map(|(_, line)| line.as_str()).collect();
    lines.join("\n")
}

#[test]
fn waiting_names_the_reference_and_whether_its_object_is_missing_or_not_ready() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (cluster, infra) = (FakeCluster::new(), FakeInfra::new());
    let servers_package = infra.package(servers());
    let databases_package =
        infra.package_with(databases(), |b| b.reference("serverRef", servers()));
    let packages = vec![servers_package.clone(), databases_package.clone()];
    let c = build(&cluster, FakeClock::default().as_fn(), packages, |config| {
        config.event_component = Some("db-operator".into());
    });
    infra.set_outputs(&format!("{NS}--main"), json!({"host": OUTPUT_MARKER}));
    let waiting = Report::Reconciled(Phase::Waiting, Reason::DependencyNotReady);

    // Nothing named "main" exists yet.
    cluster.create(&databases(), NS, "app", db_spec("main"));
    let (report, missing_lines) =
        common::log::capture(|| runtime.block_on(reconcile(&c, &databases_package, NS, "app")));
    assert_eq!(report.unwrap(), waiting);
    assert_eq!(
        waiting_messages(&cluster, "app"),
        ["waiting for Server main (spec.config.serverRef): not found"]
    );
    let logged = text(&missing_lines);
    for said in [
        "field=\"serverRef\"",
        "kind=\"Server\"",
        "referenced=\"main\"",
        "not found",
    ] {
        assert!(logged.contains(said), "{said}: {logged}");
    }

    // It exists, with outputs recorded, but an edit is not handled yet.
    cluster.create(&servers(), NS, "main", json!({"config": {"value": 1}}));
    let ready = runtime.block_on(reconcile(&c, &servers_package, NS, "main"));
    assert!(matches!(
        ready.unwrap(),
        Report::Reconciled(Phase::Ready, _)
    ));
    cluster.edit_spec(&servers(), NS, "main", |s| s["config"]["value"] = json!(2));
    cluster.create(&databases(), NS, "api", db_spec("main"));
    let (report, unready_lines) =
        common::log::capture(|| runtime.block_on(reconcile(&c, &databases_package, NS, "api")));
    assert_eq!(report.unwrap(), waiting);
    assert_eq!(
        waiting_messages(&cluster, "api"),
        ["waiting for Server main (spec.config.serverRef) to be Ready"]
    );
    let logged = text(&unready_lines);
    assert!(logged.contains("referenced=\"main\""), "{logged}");
    let server = cluster.get(&servers(), NS, "main").unwrap();
    assert_eq!(
        server["status"]["outputs"]["host"], OUTPUT_MARKER,
        "recorded"
    );
    let events = format!("{:?}", cluster.events());
    assert!(!events.contains(OUTPUT_MARKER), "{events}");
    assert!(!logged.contains(OUTPUT_MARKER), "{logged}");
}
