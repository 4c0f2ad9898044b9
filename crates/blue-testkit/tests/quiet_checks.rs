//! Quiet periodic checks: a check that would change only
//! the schedule writes nothing, a heartbeat writes once when the stored
//! `lastReconcileTime` is old, the runtime keeps each next check in memory
//! (watching or polling), and a start spreads the resources whose stored
//! time passed. Paused tokio time drives the runtime and its clock.

mod common;

use blue_kubernetes::{start, Config, Runtime};
use blue_testkit::{Callback, FakeCluster, FakeInfra};
use common::*;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const INTERVAL_MS: u64 = 30_000;

async fn wait_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

fn start_on(cluster: &FakeCluster, infra: &FakeInfra, tweak: impl FnOnce(&mut Config)) -> Runtime {
    let mut config = Config::new(Arc::new(cluster.clone()), vec![infra.package(widgets())]);
    config.namespace = NS.into();
    config.now = tokio_clock();
    config.poll_ms = 500;
    tweak(&mut config);
    start(blue_kubernetes::controller(config).unwrap()).unwrap()
}

fn every_30s(value: u64) -> Value {
    json!({"reconcileInterval": "30s", "config": {"value": value}})
}

fn status(cluster: &FakeCluster, name: &str) -> Value {
    cluster.get(&widgets(), NS, name).unwrap()["status"].clone()
}

#[tokio::test(start_paused = true)]
async fn a_matching_periodic_check_writes_nothing() {
    let (cluster, infra) = (FakeCluster::new(), FakeInfra::new());
    let runtime = start_on(&cluster, &infra, |_| {});
    cluster.create(&widgets(), NS, "w", every_30s(1));
    wait_ms(100).await;
    let stored = status(&cluster, "w");
    cluster.reset_calls();
    let observed = infra.count(Callback::Observe);
    // Five stretched intervals: five checks.
    wait_ms(5 * stretched(INTERVAL_MS)).await;
    let checks = infra.count(Callback::Observe) - observed;
    assert!((5..=6).contains(&checks), "{checks}");
    assert_eq!(cluster.calls().writes(), 0);
    assert_eq!(status(&cluster, "w"), stored, "status untouched");
    runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_heartbeat_writes_once_when_the_stored_time_is_old() {
    let (cluster, infra) = (FakeCluster::new(), FakeInfra::new());
    let runtime = start_on(&cluster, &infra, |c| c.status_heartbeat_ms = 100_000);
    cluster.create(&widgets(), NS, "w", every_30s(1));
    wait_ms(100).await;
    let first = ms_of(&status(&cluster, "w")["lastReconcileTime"]);
    cluster.reset_calls();
    // Checks at about 30, 60, 90 s are quiet; the one at about 120 s finds
    // the stored time 100 s old and writes; the next ones are quiet again.
    wait_ms(4 * stretched(INTERVAL_MS) + 1_000).await;
    assert_eq!(cluster.calls().update_status, 1, "one heartbeat");
    let beat = ms_of(&status(&cluster, "w")["lastReconcileTime"]);
    assert!(beat - first >= 100_000, "{}", beat - first);
    runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_zero_heartbeat_writes_every_check() {
    let (cluster, infra) = (FakeCluster::new(), FakeInfra::new());
    let runtime = start_on(&cluster, &infra, |c| c.status_heartbeat_ms = 0);
    cluster.create(&widgets(), NS, "w", every_30s(1));
    wait_ms(100).await;
    cluster.reset_calls();
    let observed = infra.count(Callback::Observe);
    wait_ms(3 * stretched(INTERVAL_MS)).await;
    let checks = infra.count(Callback::Observe) - observed;
    assert!(checks >= 3, "{checks}");
    assert_eq!(cluster.calls().update_status, checks);
    runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_polling_runtime_is_not_made_due_by_a_stale_stored_time() {
    let (cluster, infra) = (FakeCluster::new(), FakeInfra::new());
    let runtime = start_on(&cluster, &infra, |c| c.watch = false);
    cluster.create(&widgets(), NS, "w", every_30s(1));
    wait_ms(1_000).await;
    let stored_next = ms_of(&status(&cluster, "w")["nextReconcileTime"]);
    let observed = infra.count(Callback::Observe);
    // Past the stored time: one quiet check, after which the stored time
    // stays behind while every list shows it.
    let now = blue_testkit::DEFAULT_START_MS + 1_000;
    wait_ms(stored_next - now + 600).await;
    assert_eq!(infra.count(Callback::Observe), observed + 1, "checked once");
    cluster.reset_calls();
    wait_ms(INTERVAL_MS - 2_000).await;
    let calls = cluster.calls();
    assert!(calls.list_page >= 50, "{calls:?}");
    assert_eq!(calls.get + calls.writes(), 0, "{calls:?}");
    assert_eq!(
        infra.count(Callback::Observe),
        observed + 1,
        "not checked again"
    );
    runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_restart_checks_every_resource_whose_stored_time_passed_spread_over_a_tenth() {
    let (cluster, infra) = (FakeCluster::new(), FakeInfra::new());
    let n = 200;
    // One clock for both processes: the second starts where the first
    // stopped.
    let clock = tokio_clock();
    let runtime = start_on(&cluster, &infra, |c| c.now = clock.clone());
    for i in 0..n {
        cluster.create(&widgets(), NS, &format!("w{i:03}"), every_30s(i));
    }
    wait_ms(2_000).await;
    // Quiet checks for a few minutes: every stored time falls behind.
    wait_ms(200_000).await;
    runtime.stop().await;
    let observed = infra.count(Callback::Observe);
    cluster.reset_calls();

    let runtime = start_on(&cluster, &infra, |c| c.now = clock);
    wait_ms(100).await;
    let early = infra.count(Callback::Observe) - observed;
    assert!(early < n as usize / 10, "spread, not all at once: {early}");
    wait_ms(INTERVAL_MS / 10).await;
    let checked = infra.count(Callback::Observe) - observed;
    assert_eq!(
        checked, n as usize,
        "each once, within a tenth of its interval"
    );
    assert_eq!(
        cluster.calls().writes(),
        0,
        "quiet: the heartbeat is not due"
    );
    runtime.stop().await;
}
