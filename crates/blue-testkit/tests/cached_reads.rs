//! Cached related reads: a package reads its ConfigMap from the
//! controller's cache (no request), and still sees its own writes and
//! deletes at once, even while the watch delivers late; past the bound a
//! read goes to the API server and is counted. Paused tokio time.

mod common;

use blue_kubernetes::package::NoOutputs;
use blue_kubernetes::related::Related;
use blue_kubernetes::{
    async_trait, start, CallbackResult, Context, Controller, Infrastructure, Observation, Outcome,
    Package, ResourceSchema, Runtime,
};
use blue_kubernetes_client::{ApiPath, ApiRequest, Method, PatchType, ResourceDescriptor};
use blue_testkit::{FakeCluster, Operation};
use common::*;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const OWNER: &str = "example.com/owner";

fn config_maps() -> ResourceDescriptor {
    ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap")
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct MirrorConfig {
    value: u64,
}

/// What a callback's cached read right after its own write saw.
type Seen = Vec<(&'static str, Option<Value>)>;

/// A widget's infrastructure is a ConfigMap of its name holding its value;
/// every cached read a callback made after its own write is recorded.
#[derive(Clone, Default)]
struct Mirrors {
    after_writes: Arc<Mutex<Seen>>,
}

type Cx = Context<MirrorConfig>;

impl Mirrors {
    async fn read(&self, cx: &Cx) -> CallbackResult<Option<Value>> {
        let api = cx.api().expect("an API handle");
        let name = &cx.metadata().name;
        Ok(api.cached(&config_maps(), NS, name).await?)
    }

    async fn send(
        &self,
        cx: &Cx,
        method: Method,
        name: Option<&str>,
        body: Value,
    ) -> CallbackResult<()> {
        let path = ApiPath::namespaced("", "v1", NS, "configmaps", name, None)?;
        let request = ApiRequest::new(method, path).with_body(body);
        cx.api().expect("an API handle").send(request).await?;
        Ok(())
    }

    fn record(&self, callback: &'static str, seen: Option<Value>) {
        let data = seen.map(|cm| cm["data"]["v"].clone());
        self.after_writes.lock().unwrap().push((callback, data));
    }
}

#[async_trait]
impl Infrastructure for Mirrors {
    type Config = MirrorConfig;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(widgets()).related(Related::labelled(config_maps(), OWNER).cached())
    }

    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<NoOutputs>> {
        Ok(match self.read(cx).await? {
            None => Observation::ABSENT,
            Some(cm) => {
                let matches = cm["data"]["v"].as_str() == Some(&cx.config().value.to_string());
                Observation::new(true, matches, true)
            }
        })
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let name = cx.metadata().name.clone();
        let data = json!({"v": cx.config().value.to_string()});
        match self.read(cx).await? {
            None => {
                let labels = json!({ OWNER: name });
                let cm = json!({"metadata": {"name": name, "labels": labels}, "data": data});
                self.send(cx, Method::Post, None, cm).await?;
            }
            Some(_) => {
                let patch = json!({ "data": data });
                self.send(cx, Method::Patch(PatchType::Merge), Some(&name), patch)
                    .await?;
            }
        }
        let seen = self.read(cx).await?;
        self.record("converge", seen);
        Ok(Outcome::done())
    }

    async fn delete(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let name = cx.metadata().name.clone();
        self.send(cx, Method::Delete, Some(&name), Value::Null)
            .await?;
        let seen = self.read(cx).await?;
        self.record("delete", seen);
        Ok(Outcome::done())
    }
}

struct Rig {
    cluster: FakeCluster,
    mirrors: Mirrors,
    package: Package,
    controller: Controller,
    runtime: Runtime,
}

/// A runtime over one widget whose ConfigMap holds 1, Ready and settled;
/// `controller` shares its cache, for one-shot passes the test times.
async fn rig() -> Rig {
    let cluster = FakeCluster::new();
    let mirrors = Mirrors::default();
    let package = Package::new(mirrors.clone()).unwrap();
    let controller = build(&cluster, tokio_clock(), vec![package.clone()], |c| {
        c.poll_ms = 500;
    });
    let runtime = start(controller.clone()).unwrap();
    cluster.create(&widgets(), NS, "w", spec(json!(1)));
    wait_ms(100).await;
    let cm = cluster.get(&config_maps(), NS, "w").expect("converged");
    assert_eq!(cm["data"]["v"], "1");
    mirrors.after_writes.lock().unwrap().clear();
    Rig {
        cluster,
        mirrors,
        package,
        controller,
        runtime,
    }
}

async fn wait_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

fn config_map_reads(cluster: &FakeCluster) -> usize {
    let log = cluster.call_log();
    let reads = log.iter().filter(|c| c.operation == Operation::Get);
    reads
        .filter(|c| c.resource.starts_with("configmaps."))
        .count()
}

fn fallbacks(controller: &Controller) -> String {
    let text = controller.metrics().encode();
    let lines = text
        .lines()
        .filter(|l| l.starts_with("blue_cached_read_fallbacks_total"));
    lines.collect::<Vec<_>>().join("\n")
}

/// Makes `change` and runs one pass now, while the watch holds its
/// events back for `late_ms`.
async fn pass_with_late_events(r: &Rig, late_ms: u64, change: impl FnOnce(&FakeCluster)) {
    r.cluster.hold_watch_events();
    change(&r.cluster);
    let cluster = r.cluster.clone();
    let release = tokio::spawn(async move {
        wait_ms(late_ms).await;
        cluster.release_watch_events();
    });
    r.controller
        .reconcile_now(&r.package, NS, "w")
        .await
        .expect("a pass");
    release.await.unwrap();
}

/// Edits the widget to `value` and runs one pass now, its events late.
async fn converge_with_late_events(r: &Rig, value: u64, late_ms: u64) {
    pass_with_late_events(r, late_ms, |cluster| {
        cluster.edit_spec(&widgets(), NS, "w", |s| s["config"]["value"] = json!(value));
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn a_healthy_check_reads_its_config_map_from_the_cache() {
    let r = rig().await;
    r.cluster.reset_calls();
    r.runtime.trigger(&widgets(), NS, "w");
    wait_ms(100).await;
    assert_eq!(config_map_reads(&r.cluster), 0);
    assert_eq!(fallbacks(&r.controller), "");
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_write_followed_at_once_by_a_read_sees_the_write() {
    let r = rig().await;
    r.cluster.reset_calls();
    converge_with_late_events(&r, 2, 300).await;
    let seen = r.mirrors.after_writes.lock().unwrap().clone();
    assert_eq!(seen, [("converge", Some(json!("2")))], "its own write");
    assert_eq!(config_map_reads(&r.cluster), 0, "waited for the watch");
    assert_eq!(fallbacks(&r.controller), "");
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_delete_followed_by_a_read_sees_it_gone() {
    let r = rig().await;
    r.cluster.reset_calls();
    pass_with_late_events(&r, 300, |cluster| {
        cluster.edit(&widgets(), NS, "w", |w| {
            w["spec"]["deletionPolicy"] = json!("Destroy")
        });
        cluster.delete(&widgets(), NS, "w");
    })
    .await;
    let seen = r.mirrors.after_writes.lock().unwrap().clone();
    assert_eq!(seen, [("delete", None)]);
    assert_eq!(config_map_reads(&r.cluster), 0);
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn past_the_bound_a_read_goes_to_the_api_server_and_is_counted() {
    let r = rig().await;
    r.cluster.reset_calls();
    converge_with_late_events(&r, 3, 5_000).await;
    let seen = r.mirrors.after_writes.lock().unwrap().clone();
    assert_eq!(seen, [("converge", Some(json!("3")))], "read live");
    // The converge's read after its write, and the observe after the
    // converge: each waited its second, then read the API server.
    assert_eq!(config_map_reads(&r.cluster), 2);
    let counted = fallbacks(&r.controller);
    assert!(counted.contains(r#"reason="wait"} 2"#), "{counted}");
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn after_an_expired_watch_the_cache_sees_what_changed_in_the_gap() {
    let r = rig().await;
    r.cluster.expire_watches();
    // Lost to the expiring stream: only the relist can bring it.
    r.cluster
        .edit(&config_maps(), NS, "w", |cm| cm["data"]["v"] = json!("9"));
    wait_ms(5_000).await;
    let cm = r.cluster.get(&config_maps(), NS, "w").expect("kept");
    assert_eq!(cm["data"]["v"], "1", "the drift was seen and repaired");
    let seen = r.mirrors.after_writes.lock().unwrap().clone();
    assert_eq!(seen, [("converge", Some(json!("1")))]);
    r.cluster.reset_calls();
    r.runtime.trigger(&widgets(), NS, "w");
    wait_ms(100).await;
    assert_eq!(config_map_reads(&r.cluster), 0, "from the relisted cache");
    r.runtime.stop().await;
}
