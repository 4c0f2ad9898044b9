//! The watching runtime: edits handled from their events, due times from
//! timers, lists only at resync, lost events found by the resync, failing
//! watches falling back to lists and recovering, namespace scopes and
//! cluster-scoped types. Paused tokio time drives everything.

mod common;

use blue_kubernetes::{start, Config, Runtime};

use blue_kubernetes::config::Namespaces;
use blue_kubernetes_client::ResourceDescriptor;
use blue_testkit::{Callback, FakeCluster, FakeInfra, Fault, Operation};
use common::*;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const POLL_MS: u64 = 500;
const RESYNC_MS: u64 = 300_000;

struct Rig {
    cluster: FakeCluster,
    infra: FakeInfra,
    runtime: Runtime,
}

fn rig_with(packages: &[ResourceDescriptor], tweak: impl FnOnce(&mut Config)) -> Rig {
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    let packages = packages.iter().map(|d| infra.package(d.clone())).collect();
    let controller = build(&cluster, tokio_clock(), packages, |config| {
        config.poll_ms = POLL_MS;
        config.resync_ms = RESYNC_MS;
        tweak(config);
    });
    let runtime = start(controller).unwrap();
    Rig {
        cluster,
        infra,
        runtime,
    }
}

fn rig() -> Rig {
    rig_with(&[widgets()], |_| {})
}

async fn wait_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

fn status_of(cluster: &FakeCluster, d: &ResourceDescriptor, ns: &str, name: &str) -> Value {
    cluster.get(d, ns, name).unwrap()["status"].clone()
}

/// Ready for the object's current generation.
fn settled(cluster: &FakeCluster, d: &ResourceDescriptor, ns: &str, name: &str) -> bool {
    let object = cluster.get(d, ns, name).unwrap();
    object["status"]["phase"] == "Ready"
        && object["status"]["observedGeneration"] == object["metadata"]["generation"]
}

/// A spec that is not checked again for an hour.
fn hourly(value: u64) -> Value {
    json!({"reconcileInterval": "1h", "config": {"value": value}})
}

#[tokio::test(start_paused = true)]
async fn an_edit_is_handled_from_its_event_without_a_list() {
    let r = rig();
    r.cluster.create(&widgets(), NS, "w", hourly(1));
    wait_ms(100).await;
    assert!(settled(&r.cluster, &widgets(), NS, "w"));
    r.cluster.reset_calls();
    r.cluster.edit_spec(&widgets(), NS, "w", |spec| {
        spec["config"]["value"] = json!(2)
    });
    // Far less than a poll period: only the event can have done it.
    wait_ms(10).await;
    assert!(settled(&r.cluster, &widgets(), NS, "w"));
    assert_eq!(r.infra.get(&format!("{NS}--w")), Some(json!(2)));
    assert_eq!(r.cluster.calls().list_page, 0);
    assert!(r.runtime.stats().watch_events >= 1);
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn idle_watching_sends_nothing_until_the_resync_list() {
    let r = rig();
    for n in 0..20 {
        r.cluster
            .create(&widgets(), NS, &format!("w{n}"), hourly(n));
    }
    wait_ms(1_000).await;
    assert_eq!(r.runtime.cached(), 20);
    r.cluster.reset_calls();
    wait_ms(RESYNC_MS - 2_000).await;
    let calls = r.cluster.calls();
    assert_eq!(calls.total(), 0, "{calls:?}");
    wait_ms(2_000).await;
    let calls = r.cluster.calls();
    assert_eq!(calls.list_page, 1, "one resync list");
    assert_eq!(calls.get + calls.writes(), 0, "nothing was due");
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_due_time_fires_its_timer_without_a_list_or_a_read() {
    let r = rig();
    let spec = json!({"reconcileInterval": "30s", "config": {"value": 1}});
    r.cluster.create(&widgets(), NS, "w", spec);
    wait_ms(100).await;
    let first = status_of(&r.cluster, &widgets(), NS, "w")["lastReconcileTime"].clone();
    r.cluster.reset_calls();
    let observed = r.infra.count(Callback::Observe);
    wait_ms(33_000).await;
    let calls = r.cluster.calls();
    assert_eq!(calls.list_page, 0);
    assert_eq!(calls.update_status, 0, "a quiet periodic check");
    assert_eq!(calls.get, 0, "acted on the watched copy");
    let again = status_of(&r.cluster, &widgets(), NS, "w")["lastReconcileTime"].clone();
    assert_eq!(first, again);
    assert_eq!(
        r.infra.count(Callback::Observe),
        observed + 1,
        "checked once"
    );
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_due_timer_fires_at_the_next_step_of_its_slack_never_before() {
    // An hour's tenth is far more than the slack: the step is the slack.
    const STEP: u64 = 10_000;
    // The rig's clock starts now (paused time moves only when awaited).
    let start = tokio::time::Instant::now();
    let now = || blue_testkit::DEFAULT_START_MS + start.elapsed().as_millis() as u64;
    let r = rig_with(&[widgets()], |config| config.timer_slack_ms = STEP);
    r.cluster.create(&widgets(), NS, "w", hourly(1));
    wait_ms(100).await;
    let due = ms_of(&status_of(&r.cluster, &widgets(), NS, "w")["nextReconcileTime"]);
    let fires = due.div_ceil(STEP) * STEP;
    let observed = r.infra.count(Callback::Observe);
    // The fake cluster's uids are fixed, so the jittered due time is too;
    // the half below must not be skipped silently if they change.
    assert!(
        fires > due + 1,
        "pick a resource whose due time is off the step"
    );
    wait_ms(due + 1 - now()).await;
    assert_eq!(
        r.infra.count(Callback::Observe),
        observed,
        "due, not yet on its step"
    );
    wait_ms(fires + 1 - now()).await;
    assert_eq!(
        r.infra.count(Callback::Observe),
        observed + 1,
        "checked on its step"
    );
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_lost_event_is_found_by_the_resync_list() {
    let r = rig();
    r.cluster.create(&widgets(), NS, "w", hourly(1));
    wait_ms(100).await;
    r.cluster.drop_watch_events(1);
    r.cluster.edit_spec(&widgets(), NS, "w", |spec| {
        spec["config"]["value"] = json!(2)
    });
    wait_ms(RESYNC_MS / 2).await;
    assert!(
        !settled(&r.cluster, &widgets(), NS, "w"),
        "the event was lost"
    );
    wait_ms(RESYNC_MS / 2 + 100).await;
    assert!(
        settled(&r.cluster, &widgets(), NS, "w"),
        "the resync found it"
    );
    assert_eq!(r.infra.get(&format!("{NS}--w")), Some(json!(2)));
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_silent_watch_costs_at_most_one_resync_period() {
    let r = rig();
    wait_ms(100).await;
    r.cluster.stall_watches();
    r.cluster.create(&widgets(), NS, "w", hourly(1));
    wait_ms(RESYNC_MS + 100).await;
    assert!(settled(&r.cluster, &widgets(), NS, "w"));
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_expired_watch_relists_and_watches_again() {
    let r = rig();
    wait_ms(100).await;
    r.cluster.reset_calls();
    r.cluster.expire_watches();
    wait_ms(100).await;
    assert_eq!(r.cluster.calls().list_page, 1);
    r.cluster.create(&widgets(), NS, "w", hourly(1));
    wait_ms(100).await;
    assert!(settled(&r.cluster, &widgets(), NS, "w"));
    assert_eq!(r.cluster.calls().list_page, 1, "handled from the new watch");
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn failing_watches_fall_back_to_lists_then_recover() {
    let r = rig();
    r.cluster
        .fail_always(Operation::Watch, Some(Fault::Unavailable));
    // Three failed watches (with 1 s and 2 s backoff), then lists.
    wait_ms(5_000).await;
    assert_eq!(r.runtime.stats().watch_fallbacks, 1);
    r.cluster.create(&widgets(), NS, "w", hourly(1));
    wait_ms(2 * POLL_MS).await;
    assert!(
        settled(&r.cluster, &widgets(), NS, "w"),
        "listing meanwhile"
    );
    r.cluster.fail_always(Operation::Watch, None);
    wait_ms(70_000).await;
    let opened = r.cluster.watch_stats().open;
    assert_eq!(opened, 1, "watching again");
    r.cluster.reset_calls();
    wait_ms(10_000).await;
    assert_eq!(r.cluster.calls().list_page, 0, "no more periodic lists");
    assert_eq!(r.runtime.stats().watch_fallbacks, 1);
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn several_namespaces_are_each_watched_and_others_ignored() {
    let r = rig_with(&[widgets()], |c| c.namespace = Namespaces::from(["a", "b"]));
    for ns in ["a", "b", "c"] {
        r.cluster.create(&widgets(), ns, "w", hourly(1));
    }
    wait_ms(100).await;
    assert!(settled(&r.cluster, &widgets(), "a", "w"));
    assert!(settled(&r.cluster, &widgets(), "b", "w"));
    assert_eq!(status_of(&r.cluster, &widgets(), "c", "w"), Value::Null);
    assert_eq!(r.cluster.watch_stats().open, 2);
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn all_namespaces_is_one_watch_over_every_namespace() {
    let r = rig_with(&[widgets()], |c| c.namespace = Namespaces::All);
    wait_ms(100).await;
    for ns in ["a", "b", "c"] {
        r.cluster.create(&widgets(), ns, "w", hourly(1));
    }
    wait_ms(100).await;
    for ns in ["a", "b", "c"] {
        assert!(settled(&r.cluster, &widgets(), ns, "w"), "{ns}");
    }
    assert_eq!(r.cluster.watch_stats().open, 1);
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_cluster_scoped_type_is_watched_whatever_the_namespaces() {
    let racks = ResourceDescriptor::new("example.com", "v1", "racks", "Rack").cluster_scoped();
    let r = rig_with(std::slice::from_ref(&racks), |c| {
        c.namespace = Namespaces::from(["a", "b"])
    });
    wait_ms(100).await;
    r.cluster.create(&racks, "", "rack-7", hourly(7));
    wait_ms(100).await;
    assert!(settled(&r.cluster, &racks, "", "rack-7"));
    assert_eq!(r.infra.get("rack-7"), Some(json!(7)), "profile: the name");
    assert_eq!(r.cluster.watch_stats().open, 1);
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn lists_are_read_page_by_page_and_a_lost_deletion_is_forgotten_at_resync() {
    let r = rig_with(&[widgets()], |c| c.page_limit = 2);
    for n in 0..5 {
        r.cluster
            .create(&widgets(), NS, &format!("w{n}"), hourly(n));
    }
    wait_ms(100).await;
    assert_eq!(r.runtime.cached(), 5);
    assert_eq!(r.cluster.calls().list_page, 3, "pages of 2, 2 and 1");
    r.cluster.drop_watch_events(1);
    r.cluster.delete(&widgets(), NS, "w0");
    // Our finalizer keeps it until the controller sees the deletion.
    wait_ms(RESYNC_MS / 2).await;
    assert!(
        r.cluster.get(&widgets(), NS, "w0").is_some(),
        "the event was lost"
    );
    wait_ms(RESYNC_MS / 2 + 100).await;
    assert!(
        r.cluster.get(&widgets(), NS, "w0").is_none(),
        "the resync found it"
    );
    assert_eq!(r.runtime.cached(), 4);
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_pass_is_not_repeated_for_its_own_intermediate_writes() {
    let r = rig();
    wait_ms(100).await;
    r.cluster.create(&widgets(), NS, "w", hourly(1));
    wait_ms(100).await;
    assert!(settled(&r.cluster, &widgets(), NS, "w"));
    // Finalizer, Reconciling publish, Ready: three writes whose events all
    // arrive; the one pass acted on the object its event delivered.
    let calls = r.cluster.calls();
    assert_eq!(calls.get, 0, "{calls:?}");
    assert_eq!(r.runtime.stats().reconciles, 1);
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_start_reads_nothing_once_its_first_list_completed() {
    let cluster = FakeCluster::new();
    for n in 0..300 {
        cluster.create(&widgets(), NS, &format!("w{n:03}"), hourly(n));
    }
    let infra = FakeInfra::new();
    let mut config = Config::new(Arc::new(cluster.clone()), vec![infra.package(widgets())]);
    config.namespace = NS.into();
    config.now = tokio_clock();
    let runtime = start(blue_kubernetes::controller(config).unwrap()).unwrap();
    wait_ms(5_000).await;
    for n in 0..300 {
        assert!(settled(&cluster, &widgets(), NS, &format!("w{n:03}")));
    }
    // The list's copies, watched since: no read before any pass.
    assert_eq!(cluster.calls().get, 0);
    runtime.stop().await;
}
