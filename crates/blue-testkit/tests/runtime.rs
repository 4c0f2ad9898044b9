//! The polling runtime: cost budget, coalescing, bounded workers, transport
//! failures per type, draining shutdown. Paused tokio time drives both the
//! poller and the controller clock.

mod common;

use async_trait::async_trait;
use blue_kubernetes::{start, Config, Error, Package, Runtime};
use blue_kubernetes_client::{Call, Client, ErrorKind, Hook, Layered, ResourceDescriptor};
use blue_testkit::{Callback, FakeCluster, FakeInfra, Fault, Operation};
use common::*;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const POLL_MS: u64 = 500;

struct Rig {
    cluster: FakeCluster,
    infra: FakeInfra,
    runtime: Runtime,
}

fn rig(packages: impl FnOnce(&FakeInfra) -> Vec<Package>, tweak: impl FnOnce(&mut Config)) -> Rig {
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    rig_over(cluster.clone(), infra, Arc::new(cluster), packages, tweak)
}

fn rig_over(
    cluster: FakeCluster,
    infra: FakeInfra,
    client: Arc<dyn Client>,
    packages: impl FnOnce(&FakeInfra) -> Vec<Package>,
    tweak: impl FnOnce(&mut Config),
) -> Rig {
    let mut config = Config::new(client, packages(&infra));
    config.namespace = NS.into();
    config.now = tokio_clock();
    config.poll_ms = POLL_MS;
    // These are the polling runtime's rules (one list per type every
    // `poll_ms`, due-ness decided from it); watching is tested in
    // `watch_runtime.rs`.
    config.watch = false;
    tweak(&mut config);
    let runtime = start(blue_kubernetes::controller(config).unwrap()).unwrap();
    Rig {
        cluster,
        infra,
        runtime,
    }
}

async fn polls(n: u64) {
    tokio::time::sleep(Duration::from_millis(POLL_MS * n)).await;
}

fn phase(cluster: &FakeCluster, d: &ResourceDescriptor, name: &str) -> Value {
    cluster.get(d, NS, name).unwrap()["status"]["phase"].clone()
}

#[tokio::test(start_paused = true)]
async fn idle_poll_cycle_costs_one_list_per_type_regardless_of_resource_count() {
    let r = rig(|i| vec![i.package(widgets()), i.package(gadgets())], |_| {});
    for n in 0..20 {
        r.cluster
            .create(&widgets(), NS, &format!("w{n}"), spec(json!(n)));
        r.cluster
            .create(&gadgets(), NS, &format!("g{n}"), spec(json!(n)));
    }
    polls(10).await;
    for n in 0..20 {
        assert_eq!(phase(&r.cluster, &widgets(), &format!("w{n}")), "Ready");
        assert_eq!(phase(&r.cluster, &gadgets(), &format!("g{n}")), "Ready");
    }
    r.cluster.reset_calls();
    let before = r.runtime.stats().polls;
    polls(20).await;
    // `polls` counts lists: one per type per cycle.
    let lists = r.runtime.stats().polls - before;
    let calls = r.cluster.calls();
    assert!(lists >= 19 * 2, "{lists}");
    assert_eq!(calls.list_page as u64, lists);
    assert_eq!(calls.get + calls.writes(), 0);
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn periodic_check_of_matching_infrastructure_is_one_read_and_no_status_write() {
    let r = rig(|i| vec![i.package(widgets())], |_| {});
    let n = 10;
    for i in 0..n {
        let spec = json!({"reconcileInterval": "30s", "config": {"value": i}});
        r.cluster.create(&widgets(), NS, &format!("w{i}"), spec);
    }
    polls(4).await;
    r.cluster.reset_calls();
    polls(66).await; // 33 s: every resource passes its stretched interval once
    let calls = r.cluster.calls();
    assert_eq!(calls.get, n);
    assert_eq!(calls.update_status, 0, "quiet checks");
    assert_eq!(calls.update_finalizers, 0);
    assert_eq!(
        r.infra.count(Callback::Converge),
        n,
        "only the first converge"
    );
    r.runtime.stop().await;
}

/// Fails lists and watches of one type only.
struct FailingType(ResourceDescriptor);

#[async_trait]
impl Hook for FailingType {
    async fn before(&self, call: &Call<'_>) -> Result<(), blue_kubernetes_client::Error> {
        let listing = matches!(
            call,
            Call::List { .. } | Call::ListPage { .. } | Call::Watch { .. }
        );
        match listing && call.descriptor() == Some(&self.0) {
            true => Err(blue_kubernetes_client::Error::kubectl(
                "get",
                ErrorKind::Unavailable,
            )),
            false => Ok(()),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn transport_failure_on_one_type_is_counted_while_others_continue() {
    let cluster = FakeCluster::new();
    let client = Arc::new(Layered::new(
        Arc::new(cluster.clone()),
        FailingType(gadgets()),
    ));
    let r = rig_over(
        cluster.clone(),
        FakeInfra::new(),
        client,
        |i| vec![i.package(gadgets()), i.package(widgets())],
        |_| {},
    );
    cluster.create(&widgets(), NS, "w", spec(json!(1)));
    cluster.create(&gadgets(), NS, "g", spec(json!(1)));
    polls(5).await;
    assert_eq!(phase(&cluster, &widgets(), "w"), "Ready");
    assert!(cluster
        .get(&gadgets(), NS, "g")
        .unwrap()
        .get("status")
        .is_none());
    let stats = r.runtime.stats();
    // 2.5 s of polls: lists at 0 and 1 s, then a 2 s backoff.
    assert_eq!(stats.transport_failures["gadgets.example.com"], 2);
    assert!(!stats.transport_failures.contains_key("widgets.example.com"));
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn failed_reread_is_counted_and_never_kills_a_worker_or_leaks_a_lock() {
    let r = rig(|i| vec![i.package(widgets())], |c| c.workers = 1);
    r.cluster
        .fail_always(Operation::Get, Some(Fault::Unavailable));
    r.cluster.create(&widgets(), NS, "w", spec(json!(1)));
    polls(5).await;
    // 2.5 s: attempts at 0 s and 1 s, then a 2 s backoff.
    assert_eq!(r.runtime.stats().reconcile_errors, 2);
    assert!(!blue_kubernetes::is_locked(&r.infra.identity("dev--w")));
    r.cluster.clear_faults();
    polls(8).await;
    assert_eq!(phase(&r.cluster, &widgets(), "w"), "Ready");
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn workers_are_bounded() {
    let r = rig(|i| vec![i.package(widgets())], |c| c.workers = 2);
    r.infra.hold_effects();
    for i in 0..5 {
        r.cluster
            .create(&widgets(), NS, &format!("w{i}"), spec(json!(i)));
    }
    r.infra.effects_started(2).await;
    polls(10).await;
    assert_eq!(r.infra.effects_started_count(), 2);
    r.infra.release(100);
    polls(10).await;
    assert_eq!(r.infra.count(Callback::Converge), 5);
    for i in 0..5 {
        assert_eq!(phase(&r.cluster, &widgets(), &format!("w{i}")), "Ready");
    }
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn stop_waits_for_active_callbacks_and_drops_queued_work() {
    let r = rig(|i| vec![i.package(widgets())], |c| c.workers = 1);
    r.infra.hold_effects();
    for i in 0..3 {
        r.cluster
            .create(&widgets(), NS, &format!("w{i}"), spec(json!(i)));
    }
    r.infra.effects_started(1).await;
    polls(2).await;
    let (infra, cluster) = (r.infra.clone(), r.cluster.clone());
    let stopping = tokio::spawn(r.runtime.stop());
    polls(10).await;
    assert!(!stopping.is_finished(), "stop waits for the held callback");
    infra.release(100);
    stopping.await.unwrap();
    assert_eq!(
        infra.count(Callback::Converge),
        1,
        "queued work was dropped"
    );
    let ready = (0..3)
        .filter(|i| phase(&cluster, &widgets(), &format!("w{i}")) == "Ready")
        .count();
    assert_eq!(ready, 1, "the active reconcile finished, not cancelled");
}

#[tokio::test(start_paused = true)]
async fn sync_callbacks_do_not_block_polling() {
    let r = rig(|i| vec![i.sync_package(widgets())], |c| c.workers = 1);
    r.infra.hold_effects();
    r.cluster.create(&widgets(), NS, "w", spec(json!(1)));
    r.infra.effects_started(1).await;
    // A blocking thread is parked in converge; paused time does not
    // auto-advance past blocking work, so move it by hand.
    let before = r.runtime.stats().polls;
    for _ in 0..10 {
        tokio::time::advance(Duration::from_millis(POLL_MS)).await;
        tokio::task::yield_now().await;
    }
    assert!(r.runtime.stats().polls >= before + 9);
    r.infra.release(1);
    r.runtime.stop().await;
    assert_eq!(r.infra.get("dev--w"), Some(json!(1)));
}

#[test]
fn start_outside_a_tokio_runtime_is_an_error() {
    let w = World::new();
    assert!(matches!(start(w.controller.clone()), Err(Error::NoRuntime)));
}

#[test]
fn invalid_configuration_names_the_field() {
    let w = World::new();
    type Tweak = Box<dyn Fn(&mut Config)>;
    let cases: Vec<(&str, Tweak)> = vec![
        ("packages", Box::new(|c| c.packages.clear())),
        ("workers", Box::new(|c| c.workers = 0)),
        ("poll_ms", Box::new(|c| c.poll_ms = 0)),
        ("namespace", Box::new(|c| c.namespace = "Not Valid".into())),
        ("retry_base_ms", Box::new(|c| c.retry_base_ms = 0)),
        ("retry_max_ms", Box::new(|c| c.retry_max_ms = 10)),
        ("timer_slack_ms", Box::new(|c| c.timer_slack_ms = 60_001)),
        (
            "packages",
            Box::new(|c| c.packages.push(c.packages[0].clone())),
        ),
    ];
    for (field, tweak) in cases {
        let mut config = w.controller.config().clone();
        tweak(&mut config);
        match blue_kubernetes::controller(config) {
            Err(Error::InvalidConfig { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: {other:?}"),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn forbidden_status_writes_back_off_doubling_instead_of_every_poll() {
    let r = rig(|i| vec![i.package(widgets())], |_| {});
    r.cluster.fail_always(
        Operation::UpdateStatus,
        Some(Fault::Kind(ErrorKind::Forbidden)),
    );
    r.cluster.create(&widgets(), NS, "w", spec(json!(1)));
    polls(120).await; // one minute
                      // Attempts at 0, 1, 3, 7, 15, 31 s; the next waits for 63 s.
    assert_eq!(r.cluster.calls().update_status, 6);
    assert_eq!(r.runtime.stats().reconcile_errors, 6);
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_edit_ends_a_write_backoff_at_once() {
    let r = rig(|i| vec![i.package(widgets())], |_| {});
    r.cluster.fail_always(
        Operation::UpdateStatus,
        Some(Fault::Kind(ErrorKind::Forbidden)),
    );
    r.cluster.create(&widgets(), NS, "w", spec(json!(1)));
    polls(40).await; // 20 s: now waiting until 31 s
    r.cluster.clear_faults();
    polls(2).await;
    assert!(
        phase(&r.cluster, &widgets(), "w").is_null(),
        "still backing off"
    );
    r.cluster
        .edit_spec(&widgets(), NS, "w", |s| s["config"]["value"] = json!(2));
    polls(2).await;
    assert_eq!(phase(&r.cluster, &widgets(), "w"), "Ready");
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_successful_write_resets_the_backoff() {
    let r = rig(|i| vec![i.package(widgets())], |_| {});
    let forbid = |on: bool| {
        r.cluster.fail_always(
            Operation::UpdateStatus,
            on.then_some(Fault::Kind(ErrorKind::Forbidden)),
        )
    };
    forbid(true);
    r.cluster.create(&widgets(), NS, "w", spec(json!(1)));
    polls(20).await; // attempts at 0, 1, 3, 7 s
    forbid(false);
    polls(20).await; // the 15 s attempt succeeds
    assert_eq!(phase(&r.cluster, &widgets(), "w"), "Ready");
    forbid(true);
    r.cluster.reset_calls();
    r.cluster
        .edit_spec(&widgets(), NS, "w", |s| s["config"]["value"] = json!(2));
    polls(6).await; // attempts at 0 and 1 s (not 16 s later): the count restarted
    assert_eq!(r.cluster.calls().update_status, 2);
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_conflict_is_not_a_failure_and_is_reread_at_once() {
    let r = rig(|i| vec![i.package(widgets())], |_| {});
    for _ in 0..3 {
        r.cluster.inject(Operation::UpdateStatus, Fault::Conflict);
    }
    r.cluster.create(&widgets(), NS, "w", spec(json!(1)));
    polls(5).await;
    assert_eq!(phase(&r.cluster, &widgets(), "w"), "Ready");
    assert_eq!(r.runtime.stats().reconcile_errors, 0);
    assert!(r.runtime.stats().conflicts >= 3);
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_forbidden_list_backs_off_and_recovers_with_the_first_success() {
    let r = rig(|i| vec![i.package(widgets())], |_| {});
    r.cluster
        .fail_always(Operation::ListPage, Some(Fault::Kind(ErrorKind::Forbidden)));
    r.cluster.create(&widgets(), NS, "w", spec(json!(1)));
    // One minute: lists at 0, 1, 3, 7, 15, 31 s instead of 120.
    polls(120).await;
    assert_eq!(r.cluster.calls().list_page, 6);
    r.cluster.clear_faults();
    polls(70).await; // the 63 s attempt succeeds
    assert_eq!(phase(&r.cluster, &widgets(), "w"), "Ready");
    r.cluster.reset_calls();
    polls(10).await;
    assert!(r.cluster.calls().list_page >= 9, "every poll lists again");
    r.runtime.stop().await;
}
