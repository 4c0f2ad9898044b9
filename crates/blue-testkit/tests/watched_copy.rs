//! The watched copy: a pass acts on the last version its watch delivered,
//! whatever queued it, while that watch has had no gap; it reads the
//! object only without such a copy; and a stale copy loses its first
//! write with Conflict before any effect. Paused tokio time drives it.

mod common;

use blue_kubernetes::{start, Runtime};
use blue_testkit::{Callback, FakeCluster, FakeInfra, Fault, Operation};
use common::*;
use serde_json::json;
use std::time::Duration;

struct Rig {
    cluster: FakeCluster,
    infra: FakeInfra,
    runtime: Runtime,
}

/// One widget, Ready and checked every 30 s, under a watching runtime.
async fn rig() -> Rig {
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    let controller = build(
        &cluster,
        tokio_clock(),
        vec![infra.package(widgets())],
        |c| {
            c.poll_ms = 500;
            c.resync_ms = 3_600_000;
        },
    );
    let runtime = start(controller).unwrap();
    cluster.create(&widgets(), NS, "w", every_30s(1));
    wait_ms(100).await;
    assert_eq!(phase(&cluster), "Ready");
    Rig {
        cluster,
        infra,
        runtime,
    }
}

fn every_30s(value: u64) -> serde_json::Value {
    json!({"reconcileInterval": "30s", "config": {"value": value}})
}

fn phase(cluster: &FakeCluster) -> serde_json::Value {
    cluster.get(&widgets(), NS, "w").unwrap()["status"]["phase"].clone()
}

async fn wait_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

#[tokio::test(start_paused = true)]
async fn a_timer_fired_pass_on_a_continuous_watch_reads_nothing() {
    let r = rig().await;
    r.cluster.reset_calls();
    let observed = r.infra.count(Callback::Observe);
    wait_ms(3 * 33_000).await;
    assert_eq!(
        r.infra.count(Callback::Observe),
        observed + 3,
        "three checks"
    );
    let calls = r.cluster.calls();
    assert_eq!(calls.get, 0, "{calls:?}");
    assert_eq!(calls.total(), 0, "quiet checks, no list: {calls:?}");
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn after_a_watch_gap_a_pass_reads_once_then_trusts_the_watch_again() {
    let r = rig().await;
    // The watch breaks and cannot be opened again: lists only, no copy.
    r.cluster
        .fail_always(Operation::Watch, Some(Fault::Unavailable));
    r.cluster.expire_watches();
    wait_ms(10_000).await;
    assert_eq!(r.runtime.stats().watch_fallbacks, 1);
    r.cluster.reset_calls();
    let observed = r.infra.count(Callback::Observe);
    wait_ms(30_000).await;
    assert_eq!(r.infra.count(Callback::Observe), observed + 1);
    assert_eq!(r.cluster.calls().get, 1, "read: no copy since the gap");

    r.cluster.fail_always(Operation::Watch, None);
    wait_ms(70_000).await;
    assert_eq!(r.cluster.watch_stats().open, 1, "watching again");
    r.cluster.reset_calls();
    let observed = r.infra.count(Callback::Observe);
    wait_ms(33_000).await;
    assert_eq!(r.infra.count(Callback::Observe), observed + 1);
    assert_eq!(r.cluster.calls().get, 0, "the relist's copy");
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_stale_copy_loses_its_first_write_and_no_effect_runs() {
    let r = rig().await;
    // The watch stays open but its events are held back: the copy is
    // behind the object from here on.
    r.cluster.hold_watch_events();
    r.cluster
        .edit_spec(&widgets(), NS, "w", |s| s["config"]["value"] = json!(2));
    // The infrastructure drifts, so a pass on the stale copy would repair
    // it with the old value, if its first write did not fail.
    r.infra.remove(&format!("{NS}--w"));
    let converged = r.infra.count(Callback::Converge);
    let conflicts = r.runtime.stats().conflicts;
    r.cluster.reset_calls();
    r.runtime.trigger(&widgets(), NS, "w");
    wait_ms(1_000).await;
    assert_eq!(
        r.runtime.stats().conflicts,
        conflicts + 1,
        "the stale copy's write lost"
    );
    // The next pass read the object and repaired with the new value: one
    // converge in all, so none ran on the stale copy (it would have set 1
    // and left the new generation to another).
    assert_eq!(r.cluster.calls().get, 1, "read after the conflict");
    assert_eq!(r.infra.count(Callback::Converge), converged + 1);
    assert_eq!(r.infra.get(&format!("{NS}--w")), Some(json!(2)));
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_resource_missing_from_the_servers_watch_cache_is_read_again_not_dropped() {
    // Without watches every pass reads its resource, through the API
    // server's watch cache; here that cache lags behind the lists.
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    let controller = build(
        &cluster,
        tokio_clock(),
        vec![infra.package(widgets())],
        |c| c.watch = false,
    );
    cluster.lag_watch_cache();
    let runtime = start(controller).unwrap();
    cluster.create(&widgets(), NS, "w", every_30s(1));
    wait_ms(2_000).await;
    assert_eq!(phase(&cluster), "Ready", "{:?}", cluster.calls());
    assert!(cluster.cached_reads() >= 1, "the lagging cache was asked");
    runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_check_asked_for_during_a_pass_waits_for_the_passs_write_then_reads_nothing() {
    let r = rig().await;
    let started = r.infra.effects_started_count();
    r.infra.hold_effects();
    r.cluster
        .edit_spec(&widgets(), NS, "w", |s| s["config"]["value"] = json!(2));
    wait_ms(100).await;
    assert_eq!(r.infra.effects_started_count(), started + 1, "converging");
    // Asked for while the pass runs; the pass's last write will be late.
    r.runtime.trigger(&widgets(), NS, "w");
    r.cluster.hold_watch_events();
    r.cluster.reset_calls();
    let observed = r.infra.count(Callback::Observe);
    r.infra.release(1);
    wait_ms(1_000).await;
    assert_eq!(phase(&r.cluster), "Ready");
    let after_pass = r.infra.count(Callback::Observe);
    assert_eq!(after_pass, observed + 1, "only the pass's own observe");
    r.cluster.release_watch_events();
    wait_ms(1_000).await;
    assert_eq!(
        r.infra.count(Callback::Observe),
        after_pass + 1,
        "the check asked for"
    );
    let calls = r.cluster.calls();
    assert_eq!(calls.get, 0, "acted on the copy with the write: {calls:?}");
    assert_eq!(r.runtime.stats().conflicts, 0);
    r.runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_check_asked_for_after_a_release_runs_no_pass_on_the_released_resource() {
    let r = rig().await;
    r.cluster.edit_spec(&widgets(), NS, "w", |s| {
        s["deletionPolicy"] = json!("Destroy")
    });
    wait_ms(100).await;
    let started = r.infra.effects_started_count();
    r.infra.hold_effects();
    r.cluster.delete(&widgets(), NS, "w");
    wait_ms(100).await;
    assert_eq!(r.infra.effects_started_count(), started + 1, "deleting");
    // The deletion event will be late; meanwhile the pass's own delete of
    // the infrastructure (a related object, say) asks for a check.
    r.cluster.hold_watch_events();
    r.infra.release(1);
    wait_ms(100).await;
    assert!(r.cluster.get(&widgets(), NS, "w").is_none(), "released");
    r.cluster.reset_calls();
    let observed = r.infra.count(Callback::Observe);
    assert!(r.runtime.trigger(&widgets(), NS, "w"), "still cached");
    wait_ms(1_000).await;
    assert_eq!(r.infra.count(Callback::Observe), observed, "no pass");
    assert_eq!(r.cluster.calls().total(), 0, "{:?}", r.cluster.calls());
    r.cluster.release_watch_events();
    wait_ms(100).await;
    assert_eq!(r.runtime.cached(), 0, "forgotten on its deletion");
    assert_eq!(r.runtime.stats().conflicts, 0);
    r.runtime.stop().await;
}
