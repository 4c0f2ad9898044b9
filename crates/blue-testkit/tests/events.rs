//! Kubernetes Events: on transitions and failures, generic text only,
//! aggregated, rate-limited, and never able to fail a reconcile.

mod common;

use blue_kubernetes::package::{NoOutputs, UserFacingMessage, ValidationErrors};
use blue_kubernetes::{
    async_trait, CallbackResult, Context, IdentityContext, Infrastructure, Observation, Outcome,
    Package, Report, ResourceSchema,
};

use blue_kubernetes::resource::{Phase, Reason};
use blue_testkit::{Callback, Fault, Misbehaviour, PLANTED_SECRET};
use common::*;
use serde_json::{json, Value};

fn with_events() -> World {
    World::with(|c| c.event_component = Some("widget-operator".into()))
}

fn summary(events: &[Value]) -> Vec<(String, String, String, u64)> {
    events
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (
                s("type"),
                s("reason"),
                s("message"),
                e["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn transitions_and_failures_become_events_attached_to_the_resource() {
    let w = with_events();
    w.create("web", spec(json!(1)));
    w.infra.script(Callback::Converge, Misbehaviour::Error);
    w.reconcile("web").await;
    w.clock.advance(1_000);
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    let events = w.cluster.events();
    assert_eq!(
        summary(&events),
        // The Reconciling Event was still queued when the failure's came
        // behind it: the outcome wins, as aggregation would show it.
        [
            (
                "Warning".into(),
                "ExecutionFailed".into(),
                "converge failed; retry 1 in 1s".into(),
                1
            ),
            (
                "Normal".into(),
                "Converged".into(),
                "infrastructure matches and is ready".into(),
                1
            ),
        ]
    );
    let web = w.get("web");
    for event in &events {
        let involved = &event["involvedObject"];
        assert_eq!(involved["uid"], web["metadata"]["uid"]);
        assert_eq!(involved["kind"], "Widget");
        assert_eq!(involved["apiVersion"], "example.com/v1");
        assert_eq!(involved["name"], "web");
        assert!(involved["resourceVersion"].is_string());
        assert_eq!(event["source"]["component"], "widget-operator");
        assert_eq!(event["reportingComponent"], "widget-operator");
        assert_eq!(event["metadata"]["namespace"], NS);
    }
    assert!(!serde_json::to_string(&events)
        .unwrap()
        .contains(PLANTED_SECRET));
}

#[tokio::test]
async fn repeated_failures_raise_one_events_count() {
    let w = with_events();
    w.create("web", spec(json!(1)));
    for _ in 0..30 {
        w.infra.script(Callback::Converge, Misbehaviour::Error);
        assert_eq!(
            w.reconcile("web").await,
            Report::Reconciled(Phase::Failed, Reason::ExecutionFailed)
        );
        // Past the longest backoff; one more Event may be written per minute.
        w.clock.advance(60_000);
    }
    let events = w.cluster.events();
    assert_eq!(
        summary(&events),
        [(
            "Warning".into(),
            "ExecutionFailed".into(),
            "converge failed; retry 30 in 1m".into(),
            30
        ),],
        "a retry's Reconciling is not an Event of its own, and the first gave way"
    );
    assert_eq!(w.cluster.event_writes(), 30);
}

#[tokio::test]
async fn a_burst_beyond_the_limit_is_dropped_and_counted_by_the_next_write() {
    let w = World::with(|c| {
        c.event_component = Some("widget-operator".into());
        c.retry_max_ms = 1_000;
    });
    w.create("web", spec(json!(1)));
    for _ in 0..41 {
        w.infra.script(Callback::Converge, Misbehaviour::Error);
    }
    for _ in 0..40 {
        w.reconcile("web").await;
        w.clock.advance(1_000);
    }
    // 40 s: no token refilled, so the burst of 10 is all that was written.
    assert_eq!(w.cluster.event_writes(), 10);
    w.clock.advance(60_000);
    w.reconcile("web").await;
    assert_eq!(w.cluster.event_writes(), 11);
    let failed = w
        .cluster
        .events()
        .into_iter()
        .find(|e| e["reason"] == "ExecutionFailed")
        .unwrap();
    assert_eq!(failed["count"], 41, "dropped occurrences are still counted");
}

#[tokio::test]
async fn event_write_failures_never_fail_a_reconcile() {
    let w = with_events();
    w.cluster.fail_events(Some(Fault::Unavailable));
    w.create("web", spec(json!(1)));
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert!(w.cluster.event_writes() >= 1);
    assert!(w.cluster.events().is_empty());
}

#[tokio::test]
async fn without_a_component_no_events_are_written() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    w.reconcile("web").await;
    assert_eq!(w.cluster.event_writes(), 0);
}

#[tokio::test]
async fn events_about_a_cluster_scoped_object_go_to_the_default_namespace() {
    let racks =
        blue_kubernetes_client::ResourceDescriptor::new("example.com", "v1", "racks", "Rack")
            .cluster_scoped();
    let cluster = blue_testkit::FakeCluster::new();
    let infra = blue_testkit::FakeInfra::new();
    let package = infra.package(racks.clone());
    let mut config =
        blue_kubernetes::Config::new(std::sync::Arc::new(cluster.clone()), vec![package.clone()]);
    config.event_component = Some("rack-operator".into());
    let c = blue_kubernetes::controller(config).unwrap();
    cluster.create(&racks, "", "rack-7", spec(json!(1)));
    let report = blue_kubernetes::reconcile(&c, &package, "", "rack-7")
        .await
        .unwrap();
    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    let events = cluster.events();
    assert!(!events.is_empty());
    for event in &events {
        assert_eq!(event["metadata"]["namespace"], "default");
        assert_eq!(event["involvedObject"]["name"], "rack-7");
        assert_eq!(event["involvedObject"]["namespace"], "");
    }
}

/// A started runtime for `widgets` in [`NS`] that writes Events.
fn runtime_with_events(
    cluster: &blue_testkit::FakeCluster,
    infra: &blue_testkit::FakeInfra,
) -> blue_kubernetes::Runtime {
    let packages = vec![infra.package(widgets())];
    let controller = build(cluster, tokio_clock(), packages, |c| {
        c.event_component = Some("widget-operator".into())
    });
    blue_kubernetes::start(controller).unwrap()
}

/// A fresh cluster and infrastructure, and a runtime over them writing
/// Events.
fn started_with_events() -> (
    blue_testkit::FakeCluster,
    blue_testkit::FakeInfra,
    blue_kubernetes::Runtime,
) {
    let (cluster, infra) = (
        blue_testkit::FakeCluster::new(),
        blue_testkit::FakeInfra::new(),
    );
    let runtime = runtime_with_events(&cluster, &infra);
    (cluster, infra, runtime)
}

/// A runtime whose Event writes are held, 100 ms (paused) after `web`
/// was created.
async fn held_pass_of_web() -> (
    blue_testkit::FakeCluster,
    blue_testkit::FakeInfra,
    blue_kubernetes::Runtime,
) {
    let (cluster, infra, runtime) = started_with_events();
    cluster.hold_events();
    cluster.create(&widgets(), NS, "web", spec(json!(1)));
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    (cluster, infra, runtime)
}

#[tokio::test(start_paused = true)]
async fn a_pass_never_waits_for_its_events_and_stop_writes_them() {
    let (cluster, infra, runtime) = held_pass_of_web().await;
    let object = cluster.get(&widgets(), NS, "web").unwrap();
    assert_eq!(object["status"]["phase"], "Ready", "the pass finished");
    assert_eq!(infra.count(Callback::Converge), 1);
    assert!(cluster.events().is_empty(), "its Events are still held");

    cluster.release_events();
    runtime.stop().await;
    let reasons: Vec<_> = summary(&cluster.events())
        .into_iter()
        .map(|(_, reason, _, _)| reason)
        .collect();
    assert_eq!(
        reasons,
        ["Converged"],
        "Reconciling gave way to it in the queue"
    );
}

#[tokio::test(start_paused = true)]
async fn stop_gives_up_on_events_it_cannot_write_after_five_seconds() {
    let (cluster, _infra, runtime) = held_pass_of_web().await;
    let stopping = tokio::time::Instant::now();
    runtime.stop().await;
    let waited = stopping.elapsed();
    assert!(waited >= std::time::Duration::from_secs(5), "{waited:?}");
    assert!(waited < std::time::Duration::from_secs(6), "{waited:?}");
    assert!(cluster.events().is_empty());
}

/// A database package whose validation marks one message user-facing and
/// keeps a detail (holding a planted secret) for the operator's log.
struct Databases;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct DatabaseConfig {
    database: Option<String>,
}

type Cx = Context<DatabaseConfig>;

#[async_trait]
impl Infrastructure for Databases {
    type Config = DatabaseConfig;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(widgets())
    }

    async fn validate(&self, cx: &Cx) -> CallbackResult<ValidationErrors> {
        let mut errors = ValidationErrors::new();
        match cx.config().database.as_deref() {
            Some("postgres") => {
                errors.push_user_facing(UserFacingMessage::new(
                    "config.database must not be a system database",
                ));
                errors.push(format!("pg_database lists it: {PLANTED_SECRET}"));
            }
            Some("") => {
                errors.push_user_facing(UserFacingMessage::new("config.database must not be empty"))
            }
            Some("hidden") => errors.push(format!("log only: {PLANTED_SECRET}")),
            _ => {}
        }
        Ok(errors)
    }

    async fn identity(
        &self,
        cx: &IdentityContext<DatabaseConfig>,
    ) -> CallbackResult<Vec<Option<String>>> {
        Ok(vec![Some(cx.profile().to_string())])
    }

    async fn observe(&self, _: &Cx) -> CallbackResult<Observation<NoOutputs>> {
        Ok(Observation::READY)
    }

    async fn converge(&self, _: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }

    async fn delete(&self, _: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }
}

fn database_package() -> Package {
    Package::new(Databases).unwrap()
}

#[tokio::test]
async fn a_user_facing_validation_message_is_the_invalid_warning_event_and_never_status() {
    let w = with_events();
    let package = database_package();
    let controller = build(&w.cluster, w.clock.as_fn(), vec![package.clone()], |c| {
        c.event_component = Some("widget-operator".into())
    });
    let reconcile = |name: &'static str| {
        let (controller, package) = (controller.clone(), package.clone());
        async move {
            blue_kubernetes::reconcile(&controller, &package, NS, name)
                .await
                .unwrap()
        }
    };
    let invalid = Report::Reconciled(Phase::Invalid, Reason::InvalidConfiguration);
    w.create("marked", json!({"config": {"database": "postgres"}}));
    w.create("unmarked", json!({"config": {"database": "hidden"}}));
    assert_eq!(reconcile("marked").await, invalid);
    assert_eq!(reconcile("unmarked").await, invalid);

    let about = |name: &str| {
        let uid = w.get(name)["metadata"]["uid"].clone();
        let events: Vec<Value> = w
            .cluster
            .events()
            .into_iter()
            .filter(|e| e["involvedObject"]["uid"] == uid)
            .collect();
        summary(&events)
    };
    let warning = |message: &str, count| {
        (
            "Warning".to_string(),
            "InvalidConfiguration".to_string(),
            message.to_string(),
            count,
        )
    };
    assert_eq!(
        about("marked"),
        [warning("config.database must not be a system database", 1)]
    );
    assert_eq!(
        about("unmarked"),
        [warning("configuration is invalid; edit the resource", 1)]
    );

    // Status stays generic: the marked resource's status is the unmarked one's.
    let generic = |name: &str| {
        let mut status = w.status(name);
        status["conditions"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .for_each(|c| c["lastTransitionTime"] = Value::Null);
        status["lastReconcileTime"] = Value::Null;
        status
    };
    assert_eq!(generic("marked"), generic("unmarked"));
    let all = serde_json::to_string(&w.cluster.list(&widgets(), NS)).unwrap();
    assert!(!all.contains("system database"), "{all}");
    let events = serde_json::to_string(&w.cluster.events()).unwrap();
    assert!(!events.contains(PLANTED_SECRET), "{events}");

    // Still Invalid after an edit: the new message is news, on the same series.
    w.edit("marked", |s| s["config"]["database"] = json!(""));
    assert_eq!(reconcile("marked").await, invalid);
    assert_eq!(
        about("marked"),
        [warning("config.database must not be empty", 2)]
    );
}

#[tokio::test]
async fn without_a_component_a_user_facing_message_writes_no_event() {
    let w = World::new();
    let package = database_package();
    let controller = build(&w.cluster, w.clock.as_fn(), vec![package.clone()], |_| {});
    w.create("marked", json!({"config": {"database": "postgres"}}));
    blue_kubernetes::reconcile(&controller, &package, NS, "marked")
        .await
        .unwrap();
    assert_eq!(w.status("marked")["phase"], "Invalid");
    assert!(w.cluster.events().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_queued_reconciling_event_gives_way_to_its_outcome_queued_behind_it() {
    let (cluster, _infra, runtime) = started_with_events();
    // Held, the writer takes nothing before the passes end.
    cluster.hold_events();
    for name in ["a", "b", "c"] {
        cluster.create(&widgets(), NS, name, spec(json!(1)));
    }
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    cluster.release_events();
    runtime.stop().await;
    let mut reasons: Vec<_> = cluster
        .events()
        .iter()
        .map(|e| e["reason"].as_str().unwrap().to_string())
        .collect();
    reasons.sort();
    // Each Reconciling gave way to the Converged queued behind it.
    assert_eq!(reasons, ["Converged", "Converged", "Converged"]);
    assert_eq!(cluster.event_writes(), 3);
    let uids: std::collections::HashSet<_> = cluster
        .events()
        .iter()
        .map(|e| e["involvedObject"]["uid"].clone())
        .collect();
    assert_eq!(
        uids.len(),
        3,
        "one per object: no outcome replaced another's"
    );
}

/// A pass whose converge holds: its Reconciling Event waits out its grace
/// (for an outcome that would replace it), then is written while the
/// converge still runs; the outcome follows.
#[tokio::test(start_paused = true)]
async fn a_long_converges_reconciling_event_is_written_once_its_grace_is_over() {
    use std::time::Duration;
    let (cluster, infra, runtime) = started_with_events();
    infra.hold_effects();
    cluster.create(&widgets(), NS, "web", spec(json!(1)));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(infra.effects_started_count(), 1, "converge holds");
    assert!(cluster.events().is_empty(), "Reconciling waits its grace");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let reasons = |c: &blue_testkit::FakeCluster| -> Vec<String> {
        summary(&c.events()).into_iter().map(|e| e.1).collect()
    };
    assert_eq!(reasons(&cluster), ["Reconciling"]);
    infra.release(1);
    tokio::time::sleep(Duration::from_millis(100)).await;
    runtime.stop().await;
    assert_eq!(reasons(&cluster), ["Reconciling", "Converged"]);
}

/// Several new resources, the writer idle between them and every call
/// taking time (so the writer runs while a pass waits): each Reconciling
/// gives way to its outcome, one Event write per resource.
#[tokio::test(start_paused = true)]
async fn new_resources_cost_one_event_write_each_with_the_writer_idle() {
    let (cluster, _infra, runtime) = started_with_events();
    cluster.set_latency(std::time::Duration::from_millis(5));
    for name in ["a", "b", "c"] {
        cluster.create(&widgets(), NS, name, spec(json!(1)));
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    runtime.stop().await;
    let reasons: Vec<_> = summary(&cluster.events())
        .into_iter()
        .map(|e| e.1)
        .collect();
    assert_eq!(reasons, ["Converged", "Converged", "Converged"]);
    assert_eq!(cluster.event_writes(), 3);
}

/// A Destroy that finishes within the grace writes no Deleting Event (the
/// release replaces it, as an outcome would); one whose delete holds past
/// the grace does.
#[tokio::test(start_paused = true)]
async fn a_quick_destroy_writes_no_deleting_event_and_a_long_one_does() {
    use std::time::Duration;
    let (cluster, infra, runtime) = started_with_events();
    let destroy = json!({"deletionPolicy": "Destroy", "config": {"value": 1}});
    for name in ["quick", "slow"] {
        cluster.create(&widgets(), NS, name, destroy.clone());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    cluster.delete(&widgets(), NS, "quick");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(cluster.get(&widgets(), NS, "quick").is_none(), "destroyed");
    let deleting = |c: &blue_testkit::FakeCluster| {
        let events = c.events();
        let named = |e: &&Value| e["reason"] == "Deleting";
        events
            .iter()
            .filter(named)
            .map(|e| e["involvedObject"]["name"].clone())
            .collect::<Vec<_>>()
    };
    assert!(deleting(&cluster).is_empty(), "no Deleting Event for quick");
    infra.hold_effects();
    cluster.delete(&widgets(), NS, "slow");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(deleting(&cluster), [json!("slow")]);
    infra.release(1);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(cluster.get(&widgets(), NS, "slow").is_none(), "destroyed");
    runtime.stop().await;
}
