//! References between resources: a resource waits
//! (`Waiting` / `DependencyNotReady`, no callback at all) until what it
//! names is Ready, then its callbacks get that resource's outputs; a
//! change to the referenced resource asks for a check of its referrers; a
//! cycle or a malformed reference is Invalid; a resource being deleted
//! does not wait.

mod common;

use blue_kubernetes::{
    async_trait, controller, reconcile, start, CallbackResult, Config, Context, Error,
    IdentityContext, Infrastructure, Observation, Outcome, Package, Report, ResourceSchema,
};

use blue_kubernetes::crd::{self, CrdConfig};

use blue_kubernetes::package::{CallbackInput, NoOutputs, WorkflowOutcome};

use blue_kubernetes::related::Reference;

use blue_kubernetes::resource::Phase;
use blue_kubernetes_client::ResourceDescriptor;
use blue_testkit::{Callback, FakeClock, FakeCluster, FakeInfra};
use common::*;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn servers() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "servers", "Server")
}

fn databases() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "databases", "Database")
}

fn db_spec(value: u64, server: &str) -> Value {
    json!({"reconcileInterval": "1h", "config": {"value": value, "serverRef": {"name": server}}})
}

fn hourly(value: u64) -> Value {
    json!({"reconcileInterval": "1h", "config": {"value": value}})
}

struct Rig {
    cluster: FakeCluster,
    infra: FakeInfra,
    servers: Package,
    databases: Package,
}

fn rig() -> Rig {
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    Rig {
        servers: infra.package(servers()),
        databases: infra.package_with(databases(), |b| b.reference("serverRef", servers())),
        cluster,
        infra,
    }
}

impl Rig {
    fn controller(
        &self,
        clock: blue_kubernetes::config::Clock,
        tweak: impl FnOnce(&mut Config),
    ) -> blue_kubernetes::Controller {
        build(
            &self.cluster,
            clock,
            vec![self.servers.clone(), self.databases.clone()],
            tweak,
        )
    }

    fn phase(&self, d: &ResourceDescriptor, name: &str) -> (Value, Value) {
        let status = self.cluster.get(d, NS, name).unwrap()["status"].clone();
        let ready = condition(&status, "Ready")["reason"].clone();
        (status["phase"].clone(), ready)
    }

    /// Callbacks that ran for `name`'s profile.
    fn callbacks_of(&self, name: &str) -> usize {
        let profile = format!("{NS}--{name}");
        self.infra
            .records()
            .iter()
            .filter(|r| r.profile == profile)
            .count()
    }
}

#[tokio::test]
async fn a_resource_waits_without_any_callback_until_its_reference_is_ready() {
    let r = rig();
    let clock = FakeClock::default();
    let c = r.controller(clock.as_fn(), |_| {});
    r.cluster
        .create(&databases(), NS, "app", db_spec(1, "main"));
    let report = reconcile(&c, &r.databases, NS, "app").await.unwrap();
    assert_eq!(
        report,
        Report::Reconciled(
            Phase::Waiting,
            blue_kubernetes::resource::Reason::DependencyNotReady
        )
    );
    assert_eq!(
        r.phase(&databases(), "app"),
        (json!("Waiting"), json!("DependencyNotReady"))
    );
    let status = r.cluster.get(&databases(), NS, "app").unwrap()["status"].clone();
    assert_eq!(
        condition(&status, "Reconciling")["status"],
        "True",
        "kstatus: in progress"
    );
    assert_eq!(condition(&status, "Stalled")["status"], "False");
    assert!(r.cluster.get(&databases(), NS, "app").unwrap()["metadata"]["finalizers"].is_null());
    // The server exists but is not Ready yet: still waiting.
    r.cluster.create(&servers(), NS, "main", hourly(7));
    let report = c.reconcile_now(&r.databases, NS, "app").await.unwrap();
    assert!(matches!(report, Report::Reconciled(Phase::Waiting, _)));
    assert_eq!(
        r.callbacks_of("app"),
        0,
        "no callback ran, not even identity"
    );
    reconcile(&c, &r.servers, NS, "main").await.unwrap();
    let report = c.reconcile_now(&r.databases, NS, "app").await.unwrap();
    assert!(
        matches!(report, Report::Reconciled(Phase::Ready, _)),
        "{report:?}"
    );
    assert_eq!(r.infra.get(&format!("{NS}--app")), Some(json!(1)));
}

#[tokio::test]
async fn a_malformed_reference_or_an_unmanaged_kind_is_refused() {
    let r = rig();
    let c = r.controller(FakeClock::default().as_fn(), |_| {});
    let spec = json!({"config": {"value": 1, "serverRef": "main"}});
    r.cluster.create(&databases(), NS, "bad", spec);
    reconcile(&c, &r.databases, NS, "bad").await.unwrap();
    assert_eq!(
        r.phase(&databases(), "bad"),
        (json!("Invalid"), json!("InvalidConfiguration"))
    );
    assert_eq!(r.callbacks_of("bad"), 0);
    // A controller whose package refers to a kind none of its packages manages.
    let client: Arc<dyn blue_kubernetes_client::Client> = Arc::new(r.cluster.clone());
    let alone = Config::new(client, vec![r.databases.clone()]);
    let err = controller(alone).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidConfig {
                field: "packages",
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_cycle_of_references_is_invalid_and_breaking_it_lets_both_proceed() {
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    let nodes = infra.package_with(widgets(), |b| b.reference("parentRef", widgets()));
    let c = build(
        &cluster,
        FakeClock::default().as_fn(),
        vec![nodes.clone()],
        |_| {},
    );
    let node = |value: u64, parent: &str| json!({"reconcileInterval": "1h", "config": {"value": value, "parentRef": {"name": parent}}});
    cluster.create(&widgets(), NS, "a", node(1, "b"));
    cluster.create(&widgets(), NS, "b", node(2, "c"));
    cluster.create(&widgets(), NS, "c", node(3, "a"));
    reconcile(&c, &nodes, NS, "a").await.unwrap();
    let status = cluster.get(&widgets(), NS, "a").unwrap()["status"].clone();
    assert_eq!(status["phase"], "Invalid");
    assert_eq!(condition(&status, "Ready")["reason"], "CyclicReference");
    assert_eq!(condition(&status, "Stalled")["status"], "True");
    // c names no one now: c converges, then b, then a.
    cluster.edit_spec(&widgets(), NS, "c", |s| s["config"] = json!({"value": 3}));
    for name in ["c", "b", "a"] {
        let report = c.reconcile_now(&nodes, NS, name).await.unwrap();
        assert!(
            matches!(report, Report::Reconciled(Phase::Ready, _)),
            "{name}: {report:?}"
        );
    }
    assert_eq!(infra.count(Callback::Converge), 3);
}

#[tokio::test]
async fn callbacks_get_the_referenced_outputs_typed() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    struct DbConfig {
        server_ref: Reference,
    }
    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct ServerOutputs {
        port: u16,
    }
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    let servers_package = infra.package(servers());
    /// Records the typed config's reference and the outputs it got.
    struct Dbs(Arc<Mutex<Vec<(String, ServerOutputs)>>>);
    impl Dbs {
        fn record(&self, cx: &Context<DbConfig>) {
            let outputs = cx
                .referenced::<ServerOutputs>("serverRef")
                .expect("resolved");
            let name = cx.config().server_ref.name.clone();
            self.0.lock().unwrap().push((name, outputs));
        }
    }
    #[async_trait]
    impl Infrastructure for Dbs {
        type Config = DbConfig;
        type Outputs = NoOutputs;
        fn schema() -> ResourceSchema {
            ResourceSchema::new(databases()).reference("serverRef", servers())
        }
        async fn identity(
            &self,
            cx: &IdentityContext<DbConfig>,
        ) -> CallbackResult<Vec<Option<String>>> {
            Ok(vec![Some("typed-refs".into()), Some(cx.profile().into())])
        }
        async fn observe(&self, cx: &Context<DbConfig>) -> CallbackResult<Observation<NoOutputs>> {
            self.record(cx);
            Ok(Observation::ABSENT)
        }
        async fn converge(&self, cx: &Context<DbConfig>) -> CallbackResult<Outcome<NoOutputs>> {
            self.record(cx);
            Ok(Outcome::done())
        }
        async fn delete(&self, _: &Context<DbConfig>) -> CallbackResult<Outcome<NoOutputs>> {
            Ok(Outcome::done())
        }
    }
    let seen: Arc<Mutex<Vec<(String, ServerOutputs)>>> = Arc::default();
    let dbs = Package::new(Dbs(seen.clone())).unwrap();
    let definition = crd::generate(&dbs, &CrdConfig::default()).unwrap();
    let config = &definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
        ["spec"]["properties"]["config"];
    assert_eq!(
        config["properties"]["serverRef"]["required"],
        json!(["name"])
    );
    assert_eq!(
        config["properties"]["serverRef"]["properties"]["name"]["type"],
        "string"
    );
    let c = build(
        &cluster,
        FakeClock::default().as_fn(),
        vec![servers_package.clone(), dbs.clone()],
        |_| {},
    );
    cluster.create(&servers(), NS, "main", hourly(1));
    infra.set_outputs(&format!("{NS}--main"), json!({"port": 5432}));
    reconcile(&c, &servers_package, NS, "main").await.unwrap();
    cluster.create(
        &databases(),
        NS,
        "app",
        json!({"config": {"serverRef": {"name": "main"}}}),
    );
    reconcile(&c, &dbs, NS, "app").await.unwrap();
    let seen = seen.lock().unwrap();
    assert!(seen.len() >= 2, "observe and converge ran");
    assert!(seen
        .iter()
        .all(|s| *s == ("main".to_string(), ServerOutputs { port: 5432 })));
}

#[tokio::test]
async fn a_resource_being_deleted_does_not_wait_for_what_it_names() {
    let r = rig();
    let c = r.controller(FakeClock::default().as_fn(), |_| {});
    r.cluster.create(&servers(), NS, "main", hourly(7));
    reconcile(&c, &r.servers, NS, "main").await.unwrap();
    let mut spec = db_spec(1, "main");
    spec["deletionPolicy"] = json!("Destroy");
    r.cluster.create(&databases(), NS, "app", spec);
    reconcile(&c, &r.databases, NS, "app").await.unwrap();
    assert_eq!(r.phase(&databases(), "app").0, "Ready");
    r.cluster.delete(&servers(), NS, "main");
    reconcile(&c, &r.servers, NS, "main").await.unwrap();
    assert!(
        r.cluster.get(&servers(), NS, "main").is_none(),
        "the server went first"
    );
    r.cluster.delete(&databases(), NS, "app");
    let report = reconcile(&c, &r.databases, NS, "app").await.unwrap();
    assert_eq!(report, Report::Released);
    assert!(r.cluster.get(&databases(), NS, "app").is_none());
    assert_eq!(r.infra.get(&format!("{NS}--app")), None, "destroyed");
}

async fn wait_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

#[tokio::test(start_paused = true)]
async fn the_runtime_rechecks_referrers_when_what_they_name_turns_ready_or_goes() {
    let r = rig();
    let runtime = start(r.controller(tokio_clock(), |c| c.resync_ms = 300_000)).unwrap();
    r.cluster
        .create(&databases(), NS, "app", db_spec(1, "main"));
    wait_ms(100).await;
    assert_eq!(r.phase(&databases(), "app").0, "Waiting");
    // Created after its referrer: the database follows at once, not in an hour.
    r.cluster.create(&servers(), NS, "main", hourly(7));
    wait_ms(100).await;
    assert_eq!(r.phase(&servers(), "main").0, "Ready");
    assert_eq!(r.phase(&databases(), "app").0, "Ready");
    // The server goes: the database waits again.
    r.cluster.delete(&servers(), NS, "main");
    wait_ms(100).await;
    assert!(r.cluster.get(&servers(), NS, "main").is_none());
    assert_eq!(
        r.phase(&databases(), "app"),
        (json!("Waiting"), json!("DependencyNotReady"))
    );
    // A heartbeat-like change of an unrelated resource asks for nothing.
    let requested = runtime.stats().requested_checks;
    r.cluster.create(&servers(), NS, "other", hourly(1));
    wait_ms(100).await;
    assert_eq!(runtime.stats().requested_checks, requested);
    runtime.stop().await;
}

/// What a referrer's callbacks were handed as `serverRef`'s outputs, in
/// the order they ran (`identity`, `observe`, `delete`).
type Seen = Arc<Mutex<Vec<(&'static str, Option<Value>)>>>;

/// A database package whose every callback records the `serverRef`
/// outputs it was handed.
fn spying_databases(seen: &Seen) -> Package {
    let spy = |callback: &'static str, seen: &Seen| {
        let seen = seen.clone();
        move |opts: &CallbackInput| {
            let handed = opts.referenced("serverRef").cloned();
            seen.lock().unwrap().push((callback, handed));
        }
    };
    let (identity, observe, delete) = (
        spy("identity", seen),
        spy("observe", seen),
        spy("delete", seen),
    );
    Package::builder(ResourceSchema::new(databases()).reference("serverRef", servers()))
        .identity(move |opts| {
            identity(opts);
            Ok(vec![Some("spy".into()), Some(opts.profile().into())])
        })
        .observe(move |opts| {
            observe(opts);
            // Gone once deleted, so that a delete completes.
            let deleting = !opts.resource()["metadata"]["deletionTimestamp"].is_null();
            Ok(match deleting {
                true => Observation::ABSENT,
                false => Observation::READY,
            })
        })
        .converge(|_| Ok(WorkflowOutcome::new()))
        .delete(move |opts| {
            delete(opts);
            Ok(WorkflowOutcome::new())
        })
        .build()
        .unwrap()
}

const FORGED_HOST: &str = "collector.attacker.example";

/// Runs `f` on a fresh current-thread runtime, capturing what it logs.
fn logged<T>(f: impl std::future::Future<Output = T>) -> (T, Vec<common::log::Line>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    common::log::capture(|| runtime.block_on(f))
}

#[test]
fn a_forged_ready_on_a_resource_we_never_reconciled_is_not_trusted() {
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    let servers_package = infra.package(servers());
    let seen = Seen::default();
    let dbs = spying_databases(&seen);
    let c = build(
        &cluster,
        FakeClock::default().as_fn(),
        vec![servers_package.clone(), dbs.clone()],
        |_| {},
    );
    // Written by someone with `/status` access, never by the controller:
    // no finalizer, no recorded profile or state identity.
    cluster.create_with(
        &servers(),
        json!({
            "metadata": {"name": "main", "namespace": NS},
            "spec": hourly(7),
            "status": {"phase": "Ready", "observedGeneration": 1,
                       "outputs": {"host": FORGED_HOST}},
        }),
    );
    cluster.create(&databases(), NS, "app", db_spec(1, "main"));
    let (report, lines) = logged(reconcile(&c, &dbs, NS, "app"));
    assert_eq!(
        report.unwrap(),
        Report::Reconciled(
            Phase::Waiting,
            blue_kubernetes::resource::Reason::DependencyNotReady
        )
    );
    let status = cluster.get(&databases(), NS, "app").unwrap()["status"].clone();
    assert_eq!(status["phase"], "Waiting");
    assert_eq!(condition(&status, "Ready")["reason"], "DependencyNotReady");
    assert!(seen.lock().unwrap().is_empty(), "no callback ran");
    // The operator learns why, without the forged values.
    let why: Vec<_> = lines
        .iter()
        .filter(|(_, l)| l.contains("field=\"serverRef\"") && l.contains("missing="))
        .collect();
    assert!(!why.is_empty(), "a line says why: {lines:?}");
    for (level, line) in &why {
        assert!(*level <= tracing::Level::INFO, "INFO or WARN: {line}");
        assert!(line.contains("name=\"app\""), "{line}");
        assert!(line.contains("missing=\"finalizer\""), "{line}");
    }
    let all: String = lines.iter().map(|(_, l)| l.as_str()).collect();
    assert!(!all.contains(FORGED_HOST), "no forged value is logged");

    // Reconciled by the controller, the server carries its marks and
    // outputs it really observed: the database proceeds with those.
    infra.set_outputs(&format!("{NS}--main"), json!({"host": "db.internal"}));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        reconcile(&c, &servers_package, NS, "main").await.unwrap();
        let server = cluster.get(&servers(), NS, "main").unwrap();
        assert_eq!(finalizers(&server), [blue_kubernetes::config::FINALIZER]);
        assert!(server["status"]["stateIdentity"].is_string());
        let report = c.reconcile_now(&dbs, NS, "app").await.unwrap();
        assert!(
            matches!(report, Report::Reconciled(Phase::Ready, _)),
            "{report:?}"
        );
    });
    let seen = seen.lock().unwrap();
    let forged = Some(json!({"host": FORGED_HOST}));
    assert!(seen.iter().all(|(_, handed)| *handed != forged), "{seen:?}");
    let observed = seen.iter().find(|(callback, _)| *callback == "observe");
    let real = Some(json!({"host": "db.internal"}));
    assert_eq!(observed.map(|(_, handed)| handed), Some(&real), "{seen:?}");
}

#[tokio::test]
async fn a_deleting_referrer_is_not_handed_outputs_whose_marks_were_stripped() {
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    let servers_package = infra.package(servers());
    let seen = Seen::default();
    let dbs = spying_databases(&seen);
    let c = build(
        &cluster,
        FakeClock::default().as_fn(),
        vec![servers_package.clone(), dbs.clone()],
        |_| {},
    );
    cluster.create(&servers(), NS, "main", hourly(7));
    infra.set_outputs(&format!("{NS}--main"), json!({"host": "db.internal"}));
    reconcile(&c, &servers_package, NS, "main").await.unwrap();
    let mut spec = db_spec(1, "main");
    spec["deletionPolicy"] = json!("Destroy");
    cluster.create(&databases(), NS, "app", spec);
    reconcile(&c, &dbs, NS, "app").await.unwrap();
    assert_eq!(
        cluster.get(&databases(), NS, "app").unwrap()["status"]["phase"],
        "Ready"
    );
    // Someone with `/status` access rewrites the server's record: still
    // Ready for its generation, but without the identity the controller
    // recorded, and naming another host.
    let server = cluster.get(&servers(), NS, "main").unwrap();
    let mut forged = server["status"].clone();
    forged.as_object_mut().unwrap().remove("stateIdentity");
    forged["outputs"] = json!({"host": FORGED_HOST});
    let client: &dyn blue_kubernetes_client::Client = &cluster;
    client
        .update_status(&servers(), &server, &forged)
        .await
        .unwrap();
    // A resource being deleted does not wait, but it is handed nothing
    // from a resource that fails the test.
    seen.lock().unwrap().clear();
    cluster.delete(&databases(), NS, "app");
    let report = reconcile(&c, &dbs, NS, "app").await.unwrap();
    assert_eq!(report, Report::Released);
    let seen = seen.lock().unwrap();
    assert!(
        seen.iter().any(|(callback, _)| *callback == "observe"),
        "{seen:?}"
    );
    for (callback, handed) in seen.iter() {
        assert_eq!(*handed, None, "{callback}");
    }
}

/// Names a transport would refuse, or that no object can have.
const NOT_OBJECT_NAMES: [&str; 4] = ["../main", "a/b", "..", "-o=yaml"];

#[tokio::test]
async fn a_reference_name_that_is_no_object_name_is_invalid_and_never_sent() {
    let r = rig();
    let c = r.controller(FakeClock::default().as_fn(), |_| {});
    r.cluster.create(&servers(), NS, "main", hourly(7));
    reconcile(&c, &r.servers, NS, "main").await.unwrap();
    let extra = ["Main", "a..b", "a_b", "main.", &"a".repeat(254)];
    for (i, bad) in NOT_OBJECT_NAMES.iter().copied().chain(extra).enumerate() {
        let name = format!("app-{i}");
        r.cluster.reset_calls();
        r.cluster.create(&databases(), NS, &name, db_spec(1, bad));
        let report = reconcile(&c, &r.databases, NS, &name).await.unwrap();
        assert_eq!(
            report,
            Report::Reconciled(
                Phase::Invalid,
                blue_kubernetes::resource::Reason::InvalidConfiguration
            ),
            "{bad:?}"
        );
        assert_eq!(
            r.phase(&databases(), &name),
            (json!("Invalid"), json!("InvalidConfiguration")),
            "{bad:?}"
        );
        assert_eq!(r.callbacks_of(&name), 0, "{bad:?}");
        let sent: Vec<_> = r
            .cluster
            .call_log()
            .into_iter()
            .filter(|call| call.name.as_deref() == Some(bad))
            .collect();
        assert!(sent.is_empty(), "{bad:?} reached the client: {sent:?}");
    }
}

#[test]
fn an_invalid_reference_name_is_logged_by_its_field_not_its_value() {
    let r = rig();
    let c = r.controller(FakeClock::default().as_fn(), |_| {});
    r.cluster
        .create(&databases(), NS, "app", db_spec(1, "-o=yaml"));
    let (report, lines) = logged(reconcile(&c, &r.databases, NS, "app"));
    assert!(matches!(
        report.unwrap(),
        Report::Reconciled(Phase::Invalid, _)
    ));
    let named: Vec<_> = lines
        .iter()
        .filter(|(_, l)| l.contains("field=\"serverRef\""))
        .collect();
    assert!(!named.is_empty(), "the field is named: {lines:?}");
    let all: String = lines.iter().map(|(_, l)| l.as_str()).collect();
    assert!(!all.contains("-o=yaml"), "the value is not echoed: {all}");
}

#[tokio::test]
async fn the_fake_cluster_refuses_names_a_transport_refuses() {
    let cluster = FakeCluster::new();
    cluster.create(&servers(), NS, "main", hourly(1));
    let client: &dyn blue_kubernetes_client::Client = &cluster;
    for bad in NOT_OBJECT_NAMES {
        let err = client.get_resource(&servers(), NS, bad).await.unwrap_err();
        assert!(
            matches!(err, blue_kubernetes_client::Error::InvalidOption { .. }),
            "{bad:?}: {err}"
        );
    }
    assert!(client
        .get_resource(&servers(), NS, "main")
        .await
        .unwrap()
        .is_some());
}
