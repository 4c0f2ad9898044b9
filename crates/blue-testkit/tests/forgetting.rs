//! Forgetting in one place: resources of a package with a connection
//! Secret, durable steps, a reference and a cached related kind converge
//! (each after failing once), are deleted (Destroy and Retain; one has its
//! finalizer stripped by hand while its passes fail, so it is gone
//! without a release) and released. Afterwards every map the controller
//! keeps per resource (its Event series included) is empty: with the runtime (paused tokio time) and
//! with the one-shot `reconcile`.

mod common;

use blue_kubernetes::package::NoOutputs;
use blue_kubernetes::related::Related;
use blue_kubernetes::{
    async_trait, reconcile, start, CallbackResult, Context, Infrastructure, Observation, Outcome,
    Package, Report, ResourceSchema,
};
use blue_kubernetes_client::{ApiPath, ApiRequest, Method, ResourceDescriptor};
use blue_testkit::{FakeClock, FakeCluster, FakeInfra, Fault, Operation};
use common::*;
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Widgets per test: even ones Destroy, odd ones Retain.
const N: usize = 6;
const OWNER: &str = "example.com/owner";

fn config_maps() -> ResourceDescriptor {
    ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap")
}

fn servers() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "servers", "Server")
}

type Cx = Context<Map<String, Value>>;

/// A widget's infrastructure is a ConfigMap of its name, made by a
/// durable step once its connection Secret holds a generated password, and
/// read from the controller's cache; each widget's first converge fails.
#[derive(Clone, Default)]
struct Stores {
    failed_once: Arc<Mutex<HashSet<String>>>,
}

impl Stores {
    async fn send(cx: &Cx, method: Method, name: Option<&str>, body: Value) -> CallbackResult<()> {
        let path = ApiPath::namespaced("", "v1", NS, "configmaps", name, None)?;
        let request = ApiRequest::new(method, path).with_body(body);
        cx.api().expect("an API handle").send(request).await?;
        Ok(())
    }
}

#[async_trait]
impl Infrastructure for Stores {
    type Config = Map<String, Value>;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(widgets())
            .connection_secret()
            .steps()
            .reference("serverRef", servers())
            .related(Related::labelled(config_maps(), OWNER).cached())
    }

    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<NoOutputs>> {
        let api = cx.api().expect("an API handle");
        let found = api.cached(&config_maps(), NS, &cx.metadata().name).await?;
        Ok(match found {
            Some(_) => Observation::READY,
            None => Observation::ABSENT,
        })
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let name = cx.metadata().name.clone();
        if self.failed_once.lock().unwrap().insert(name.clone()) {
            return Err("the first converge of each widget fails".into());
        }
        let connection = cx.connection().expect("declared");
        connection.get_or_create("password", || "pw".into()).await?;
        let labels = json!({ OWNER: name });
        let cm = json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}});
        let made = Self::send(cx, Method::Post, None, cm);
        cx.steps().run("make", |_| made).await?;
        Ok(Outcome::done())
    }

    async fn delete(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let name = cx.metadata().name.clone();
        let removed = Self::send(cx, Method::Delete, Some(&name), Value::Null);
        cx.steps().run("remove", |_| removed).await?;
        Ok(Outcome::done())
    }
}

fn widget(i: usize) -> String {
    format!("w{i}")
}

fn widget_spec(i: usize) -> Value {
    let policy = if i % 2 == 0 { "Destroy" } else { "Retain" };
    json!({
        "deletionPolicy": policy,
        "reconcileInterval": "1h",
        "config": {"serverRef": {"name": "main"}},
    })
}

fn packages() -> Vec<Package> {
    let servers = FakeInfra::new().package(servers());
    vec![servers, Package::new(Stores::default()).unwrap()]
}

/// The server and the widgets, created.
fn create_all(cluster: &FakeCluster) {
    let hourly = json!({"reconcileInterval": "1h", "config": {"value": 1}});
    cluster.create(&servers(), NS, "main", hourly);
    for i in 0..N {
        cluster.create(&widgets(), NS, &widget(i), widget_spec(i));
    }
}

fn phase(cluster: &FakeCluster, d: &ResourceDescriptor, name: &str) -> Value {
    cluster.get(d, NS, name).expect("exists")["status"]["phase"].clone()
}

/// What the garbage collector would do for the objects the widgets own:
/// the connection Secrets, and the ConfigMaps Retain left.
fn collect_garbage(cluster: &FakeCluster) {
    for plural in ["secrets", "configmaps"] {
        let collection = format!("/api/v1/namespaces/{NS}/{plural}");
        for object in cluster.objects(&collection) {
            let name = object["metadata"]["name"].as_str().unwrap();
            cluster.delete_object(&format!("{collection}/{name}"));
        }
    }
}

async fn wait_s(s: u64) {
    tokio::time::sleep(Duration::from_secs(s)).await;
}

#[tokio::test(start_paused = true)]
async fn the_runtime_forgets_every_resource_released_or_gone() {
    let cluster = FakeCluster::new();
    let controller = build(&cluster, tokio_clock(), packages(), |c| {
        c.poll_ms = 500;
        c.event_component = Some("widgets-operator".into());
    });
    let runtime = start(controller).unwrap();
    create_all(&cluster);
    wait_s(30).await;
    for i in 0..N {
        assert_eq!(phase(&cluster, &widgets(), &widget(i)), "Ready");
    }
    // Entries, timers, references, connection values and step marks, Event
    // series at least.
    let before = runtime.remembered();
    assert!(before >= 4 * N, "{before} entries remembered");

    // Deleting fails for a while: every status and finalizer write does.
    cluster.fail_always(Operation::UpdateStatus, Some(Fault::Unavailable));
    cluster.fail_always(Operation::UpdateFinalizers, Some(Fault::Unavailable));
    for i in 0..N {
        cluster.delete(&widgets(), NS, &widget(i));
    }
    wait_s(5).await;
    // Meanwhile a user strips one's finalizer: it is gone, never released.
    cluster.edit(&widgets(), NS, &widget(0), |o| {
        o["metadata"]["finalizers"] = json!([])
    });
    cluster.fail_always(Operation::UpdateStatus, None);
    cluster.fail_always(Operation::UpdateFinalizers, None);
    wait_s(120).await;
    for i in 0..N {
        assert!(cluster.get(&widgets(), NS, &widget(i)).is_none());
    }
    cluster.delete(&servers(), NS, "main");
    collect_garbage(&cluster);
    wait_s(5).await;

    assert!(cluster.get(&servers(), NS, "main").is_none(), "released");
    assert_eq!((runtime.cached(), runtime.related_cached()), (0, 0));
    assert_eq!(runtime.remembered(), 0, "every per-resource map is empty");
    runtime.stop().await;
}

#[tokio::test]
async fn a_one_shot_reconcile_forgets_every_resource_it_releases() {
    let cluster = FakeCluster::new();
    let clock = FakeClock::default();
    let packages = packages();
    let controller = build(&cluster, clock.as_fn(), packages.clone(), |c| {
        c.event_component = Some("widgets-operator".into())
    });
    let pass = |package: usize, name: String| {
        let (controller, package) = (controller.clone(), packages[package].clone());
        async move { reconcile(&controller, &package, NS, &name).await.unwrap() }
    };
    create_all(&cluster);
    pass(0, "main".into()).await;
    for i in 0..N {
        // Failed once, retried after the first backoff.
        pass(1, widget(i)).await;
        clock.advance(2_000);
        pass(1, widget(i)).await;
        assert_eq!(phase(&cluster, &widgets(), &widget(i)), "Ready");
    }
    let before = controller.remembered();
    assert!(
        before >= 2 * N,
        "{before}: connection values with step marks, Event series"
    );

    for i in 0..N {
        cluster.delete(&widgets(), NS, &widget(i));
        assert_eq!(pass(1, widget(i)).await, Report::Released);
    }
    cluster.delete(&servers(), NS, "main");
    assert_eq!(pass(0, "main".into()).await, Report::Released);
    assert_eq!(
        controller.remembered(),
        0,
        "every per-resource map is empty"
    );
}
