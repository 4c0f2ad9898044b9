//! Related objects and triggers: a change to a related
//! object asks for an early check of the resource it maps to, in memory;
//! related kinds are watched once per kind and scope, listed every poll
//! without watches, and their lost events are found by the resync list;
//! `Runtime::trigger` and the one-shot `Controller::reconcile_now` ask for
//! a check from outside. Paused tokio time drives everything.

mod common;

use blue_kubernetes::package::NoOutputs;
use blue_kubernetes::{
    async_trait, start, CallbackResult, Config, Context, IdentityContext, Infrastructure,
    Observation, Outcome, Report, ResourceSchema, Runtime,
};

use blue_kubernetes::related::Related;

use blue_kubernetes::resource::Phase;
use blue_kubernetes_client::ResourceDescriptor;
use blue_testkit::{Callback, FakeCluster, FakeInfra, Operation};
use common::*;
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering;
use std::time::Duration;

const POLL_MS: u64 = 500;
const RESYNC_MS: u64 = 300_000;
const OWNER: &str = "example.com/owner";

fn config_maps() -> ResourceDescriptor {
    ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap")
}

struct Rig {
    cluster: FakeCluster,
    infra: FakeInfra,
    runtime: Runtime,
}

/// Widgets (and gadgets) whose ConfigMaps name them in an annotation.
fn rig_with(tweak: impl FnOnce(&mut Config)) -> Rig {
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    let related = || Related::annotated(config_maps(), OWNER);
    let packages = vec![
        infra.package_with(widgets(), |b| b.related(related())),
        infra.package_with(gadgets(), |b| b.related(related())),
    ];
    let controller = build(&cluster, tokio_clock(), packages, |config| {
        config.poll_ms = POLL_MS;
        config.resync_ms = RESYNC_MS;
        tweak(config);
    });
    Rig {
        runtime: start(controller).unwrap(),
        cluster,
        infra,
    }
}

fn rig() -> Rig {
    rig_with(|_| {})
}

async fn wait_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// Checked again only after an hour: anything sooner was asked for.
fn hourly(value: u64) -> Value {
    json!({"reconcileInterval": "1h", "config": {"value": value}})
}

fn config_map(name: &str, owner: &str) -> Value {
    json!({"metadata": {"name": name, "annotations": {OWNER: owner}}, "data": {"k": "v"}})
}

fn cm_path(name: &str) -> String {
    format!("/api/v1/namespaces/{NS}/configmaps/{name}")
}

fn create_cm(cluster: &FakeCluster, name: &str, owner: &str) {
    let collection = format!("/api/v1/namespaces/{NS}/configmaps");
    cluster.create_object(&collection, config_map(name, owner));
}

fn profile(name: &str) -> String {
    format!("{NS}--{name}")
}

/// A Ready widget `w` whose ConfigMap `w-cm` exists, everything settled.
async fn ready_widget(r: &Rig) {
    r.cluster.create(&widgets(), NS, "w", hourly(1));
    create_cm(&r.cluster, "w-cm", "w");
    wait_ms(100).await;
    assert_eq!(
        r.cluster.get(&widgets(), NS, "w").unwrap()["status"]["phase"],
        "Ready"
    );
}

#[tokio::test(start_paused = true)]
async fn a_deleted_related_object_has_its_owner_checked_at_once() {
    let r = rig();
    ready_widget(&r).await;
    r.infra.remove(&profile("w"));
    r.cluster.reset_calls();
    let writes = r.cluster.revision();
    r.cluster.delete_object(&cm_path("w-cm"));
    // Far less than a poll period: only the ConfigMap's event can have done it.
    wait_ms(10).await;
    assert_eq!(r.infra.get(&profile("w")), Some(json!(1)), "drift repaired");
    assert_eq!(r.cluster.calls().list_page, 0);
    assert!(r.runtime.stats().requested_checks >= 1);
    assert!(r.cluster.revision() > writes);
    r.runtime.stop().await;
}

/// A deletion most likely needs repair, so the owner publishes
/// Reconciling while it observes (as for an edit: one round trip sooner)
/// rather than after. Seen here where the infrastructure still matches:
/// only that path publishes at all, so the check writes twice.
#[tokio::test(start_paused = true)]
async fn a_deleted_related_object_has_its_owner_publish_while_observing() {
    let r = rig();
    ready_widget(&r).await;
    let (observed, converged) = (
        r.infra.count(Callback::Observe),
        r.infra.count(Callback::Converge),
    );
    r.cluster.reset_calls();
    r.cluster.delete_object(&cm_path("w-cm"));
    wait_ms(10).await;
    assert_eq!(r.infra.count(Callback::Observe), observed + 1, "one check");
    assert_eq!(
        r.infra.count(Callback::Converge),
        converged,
        "nothing to repair"
    );
    assert_eq!(
        r.cluster.calls().update_status,
        2,
        "Reconciling published with the observe, then Ready"
    );
    assert_eq!(
        r.cluster.get(&widgets(), NS, "w").unwrap()["status"]["phase"],
        "Ready"
    );
    r.runtime.stop().await;
}

/// A resource being deleted never makes its related objects again: their
/// deletion (its own Destroy's, or anyone's) asks it for no pass.
#[tokio::test(start_paused = true)]
async fn a_deleted_related_object_asks_nothing_of_an_owner_being_deleted() {
    let r = rig();
    let object = json!({
        "metadata": {"name": "w", "namespace": NS, "finalizers": ["other/keep"]},
        "spec": hourly(1),
    });
    r.cluster.create_with(&widgets(), object);
    create_cm(&r.cluster, "w-cm", "w");
    wait_ms(100).await;
    r.cluster.delete(&widgets(), NS, "w");
    wait_ms(100).await;
    let lingering = r.cluster.get(&widgets(), NS, "w").unwrap();
    assert_eq!(
        lingering["status"]["phase"], "Deleting",
        "held by other/keep"
    );
    let requested = r.runtime.stats().requested_checks;
    r.cluster.reset_calls();
    r.cluster.delete_object(&cm_path("w-cm"));
    wait_ms(10).await;
    assert_eq!(r.cluster.calls().get, 0, "no pass re-read it");
    assert_eq!(r.runtime.stats().requested_checks, requested);
    r.runtime.stop().await;
}

/// A Destroy that deletes the related object itself is not asked for
/// another pass by that deletion (its Deleting publish came first): once
/// our finalizer is released nothing could come of it but a read.
#[tokio::test(start_paused = true)]
async fn a_related_object_deleted_during_its_owners_destroy_asks_no_pass_after_it() {
    let r = rig();
    let spec =
        json!({"reconcileInterval": "1h", "deletionPolicy": "Destroy", "config": {"value": 1}});
    r.cluster.create(&widgets(), NS, "w", spec);
    create_cm(&r.cluster, "w-cm", "w");
    wait_ms(100).await;
    r.infra.hold_effects();
    r.cluster.delete(&widgets(), NS, "w");
    r.infra.effects_started(2).await;
    r.cluster.delete_object(&cm_path("w-cm"));
    wait_ms(10).await;
    r.cluster.reset_calls();
    r.infra.release(1);
    wait_ms(100).await;
    assert!(r.cluster.get(&widgets(), NS, "w").is_none(), "released");
    assert_eq!(r.cluster.calls().get, 0, "no pass read it again");
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_edited_related_object_asks_for_a_quiet_check_only_of_its_owner() {
    let r = rig();
    ready_widget(&r).await;
    r.cluster.create(&gadgets(), NS, "g", hourly(1));
    wait_ms(100).await;
    let observed = r.infra.count(Callback::Observe);
    r.cluster.reset_calls();
    r.cluster
        .edit_object(&cm_path("w-cm"), |cm| cm["data"]["k"] = json!("edited"));
    wait_ms(10).await;
    assert_eq!(r.infra.count(Callback::Observe), observed + 1, "one check");
    let record = r.infra.records().pop().unwrap();
    assert_eq!(
        record.profile,
        profile("w"),
        "the widget's, not the gadget's"
    );
    let calls = r.cluster.calls();
    assert_eq!(
        calls.update_status, 0,
        "matching: nothing written for a request"
    );
    assert_eq!(calls.get, 0, "the owner acted on its watched copy");
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_kind_related_to_two_packages_is_watched_once_and_maps_to_each() {
    let r = rig();
    ready_widget(&r).await;
    r.cluster.create(&gadgets(), NS, "w", hourly(1));
    wait_ms(100).await;
    let lists = r
        .cluster
        .call_log()
        .iter()
        .filter(|c| c.operation == Operation::ListPage && c.resource == "configmaps.")
        .count();
    assert_eq!(lists, 1, "one list of ConfigMaps for both packages");
    // `w` names a widget and a gadget (of one profile): both are checked.
    let requested = r.runtime.stats().requested_checks;
    r.infra.remove(&profile("w"));
    r.cluster.delete_object(&cm_path("w-cm"));
    wait_ms(10).await;
    assert_eq!(r.runtime.stats().requested_checks, requested + 2);
    assert_eq!(r.infra.get(&profile("w")), Some(json!(1)));
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_first_list_seeds_the_cache_and_a_relist_of_the_same_versions_asks_nothing() {
    let cluster = FakeCluster::new();
    create_cm(&cluster, "w-cm", "w");
    let infra = FakeInfra::new();
    let package = infra.package_with(widgets(), |b| {
        b.related(Related::annotated(config_maps(), OWNER))
    });
    cluster.create(&widgets(), NS, "w", hourly(1));
    let controller = build(&cluster, tokio_clock(), vec![package], |c| {
        c.poll_ms = POLL_MS;
        c.resync_ms = RESYNC_MS;
    });
    let runtime = start(controller).unwrap();
    wait_ms(100).await;
    assert_eq!(runtime.related_cached(), 1);
    let first_pass = infra.count(Callback::Observe);
    wait_ms(RESYNC_MS + 1_000).await;
    assert_eq!(
        infra.count(Callback::Observe),
        first_pass,
        "the resync found nothing new"
    );
    assert_eq!(runtime.stats().requested_checks, 0);
    runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_lost_related_event_is_found_by_the_resync_list() {
    let r = rig();
    ready_widget(&r).await;
    r.infra.remove(&profile("w"));
    r.cluster.drop_watch_events(1);
    r.cluster.delete_object(&cm_path("w-cm"));
    wait_ms(RESYNC_MS / 2).await;
    assert_eq!(r.infra.get(&profile("w")), None, "the event was lost");
    wait_ms(RESYNC_MS / 2 + 1_000).await;
    assert_eq!(
        r.infra.get(&profile("w")),
        Some(json!(1)),
        "found by the resync"
    );
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn without_watches_related_objects_are_listed_every_poll() {
    let r = rig_with(|c| c.watch = false);
    ready_widget(&r).await;
    wait_ms(POLL_MS).await;
    r.infra.remove(&profile("w"));
    r.cluster.delete_object(&cm_path("w-cm"));
    wait_ms(POLL_MS + 100).await;
    assert_eq!(
        r.infra.get(&profile("w")),
        Some(json!(1)),
        "the next list saw it"
    );
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_related_change_while_its_owner_runs_is_served_after_that_pass() {
    let r = rig();
    r.cluster.create(&widgets(), NS, "w", hourly(1));
    create_cm(&r.cluster, "w-cm", "w");
    wait_ms(100).await;
    r.infra.hold_effects();
    r.cluster
        .edit_spec(&widgets(), NS, "w", |s| s["config"]["value"] = json!(2));
    r.infra.effects_started(2).await;
    // While the converge is held, the ConfigMap goes and the
    // infrastructure drifts again: the running pass cannot see it.
    r.cluster.delete_object(&cm_path("w-cm"));
    let observed = r.infra.count(Callback::Observe);
    r.infra.release(1);
    wait_ms(10).await;
    assert!(
        r.infra.count(Callback::Observe) >= observed + 2,
        "looked again after the pass"
    );
    r.infra.release(10);
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn trigger_asks_for_an_early_check_of_a_cached_resource_only() {
    let r = rig();
    ready_widget(&r).await;
    r.infra.remove(&profile("w"));
    assert!(r.runtime.trigger(&widgets(), NS, "w"));
    wait_ms(10).await;
    assert_eq!(r.infra.get(&profile("w")), Some(json!(1)));
    assert!(!r.runtime.trigger(&widgets(), NS, "nobody"), "not cached");
    assert!(
        !r.runtime.trigger(&config_maps(), NS, "w"),
        "no package's kind"
    );
    assert_eq!(r.runtime.stats().requested_checks, 1);
    r.runtime.stop().await;
}

#[tokio::test]
async fn the_one_shot_trigger_reconciles_a_resource_that_is_not_due() {
    let world = World::new();
    world.create("w", hourly(1));
    assert!(matches!(
        world.reconcile("w").await,
        Report::Reconciled(Phase::Ready, _)
    ));
    assert_eq!(world.reconcile("w").await, Report::NotDue);
    world.infra.remove(&World::profile("w"));
    let report = world
        .controller
        .reconcile_now(&world.package, NS, "w")
        .await
        .unwrap();
    assert!(matches!(report, Report::Reconciled(Phase::Ready, _)));
    assert_eq!(world.infra.get(&World::profile("w")), Some(json!(1)));
    let missing = world
        .controller
        .reconcile_now(&world.package, NS, "gone")
        .await;
    assert_eq!(missing.unwrap(), Report::NotFound);
}

/// A package whose converge sets `host` in its connection Secret.
#[derive(Default)]
struct SecretHolder {
    converged: std::sync::atomic::AtomicBool,
}

type Cx = Context<Map<String, Value>>;

#[async_trait]
impl Infrastructure for SecretHolder {
    type Config = Map<String, Value>;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(widgets()).connection_secret()
    }

    async fn identity(
        &self,
        cx: &IdentityContext<Self::Config>,
    ) -> CallbackResult<Vec<Option<String>>> {
        Ok(vec![
            Some("related-secret".into()),
            Some(cx.profile().into()),
        ])
    }

    async fn observe(&self, _: &Cx) -> CallbackResult<Observation<NoOutputs>> {
        let made = self.converged.load(Ordering::SeqCst);
        Ok(Observation::new(made, made, made))
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let connection = cx.connection().expect("declared");
        connection.set("host", "db.internal").await?;
        self.converged.store(true, Ordering::SeqCst);
        Ok(Outcome::done())
    }

    async fn delete(&self, _: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }
}

#[tokio::test(start_paused = true)]
async fn a_deleted_connection_secret_is_restored_at_once() {
    let cluster = FakeCluster::new();
    let package = blue_kubernetes::Package::new(SecretHolder::default()).unwrap();
    let controller = build(&cluster, tokio_clock(), vec![package], |c| {
        c.poll_ms = POLL_MS;
        c.resync_ms = RESYNC_MS;
    });
    let runtime = start(controller).unwrap();
    cluster.create(&widgets(), NS, "db", hourly(1));
    wait_ms(100).await;
    let secret = format!("/api/v1/namespaces/{NS}/secrets/db-connection");
    assert!(cluster.get_object(&secret).is_some());
    cluster.delete_object(&secret);
    wait_ms(10).await;
    let restored = cluster
        .get_object(&secret)
        .expect("restored without waiting an hour");
    assert_eq!(restored["data"]["host"], "ZGIuaW50ZXJuYWw=");
    // A check that finds it whole reads it from the watch's cache.
    wait_ms(10).await;
    cluster.reset_calls();
    assert!(runtime.trigger(&widgets(), NS, "db"));
    wait_ms(10).await;
    let log = cluster.call_log();
    let secrets = log.iter().filter(|c| c.resource.starts_with("secrets"));
    assert_eq!(secrets.count(), 0, "{log:?}");
    assert!(runtime.stats().requested_checks > 0);
    runtime.stop().await;
}
