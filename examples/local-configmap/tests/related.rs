//! The operator watches its ConfigMaps (a related kind mapped by the
//! owner-name annotation): a deleted or edited ConfigMap is repaired at
//! once, long before the resource's interval or a resync.

use blue_kubernetes::{start, Package};
use blue_testkit::{FakeCluster, TestOperator};
use local_configmap_operator::configmap::OWNER_NAME_ANNOTATION;
use local_configmap_operator::package::{names, LocalConfigMaps};
use serde_json::{json, Value};
use std::time::Duration;

const CM: &str = "/api/v1/namespaces/default/configmaps/app";

/// Polls `f` every few milliseconds for at most five seconds.
async fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn data(cluster: &FakeCluster) -> Option<Value> {
    cluster.get_object(CM).map(|cm| cm["data"].clone())
}

/// A running operator whose ConfigMap `app` holds `{k: v}`, Ready; only
/// events and triggers check it (intervals and resyncs are an hour).
async fn running(cluster: &FakeCluster) -> (TestOperator, blue_kubernetes::Runtime) {
    let package = Package::new(LocalConfigMaps::default()).unwrap();
    let op = TestOperator::on(cluster, vec![package]).configure(|c| {
        let hour = 3_600_000u64;
        c.with_names(names())
            .with_poll_ms(hour)
            .with_resync_ms(hour)
    });
    let runtime = start(op.controller().clone()).unwrap();
    op.create(
        "app",
        json!({"reconcileInterval": "1h", "config": {"data": {"k": "v"}}}),
    );
    eventually("created", || data(cluster) == Some(json!({"k": "v"}))).await;
    eventually("ready", || op.status("app")["phase"] == "Ready").await;
    (op, runtime)
}

#[tokio::test]
async fn a_deleted_or_edited_config_map_is_repaired_at_once() {
    let cluster = FakeCluster::new();
    let (_op, runtime) = running(&cluster).await;
    let cm = cluster.get_object(CM).unwrap();
    assert_eq!(cm["metadata"]["annotations"][OWNER_NAME_ANNOTATION], "app");
    cluster.delete_object(CM);
    eventually("re-created", || data(&cluster) == Some(json!({"k": "v"}))).await;
    cluster.edit_object(CM, |cm| cm["data"] = json!({"k": "tampered"}));
    eventually("repaired", || data(&cluster) == Some(json!({"k": "v"}))).await;
    assert!(runtime.stats().requested_checks >= 2);
    runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_healthy_check_makes_no_request() {
    let cluster = FakeCluster::new();
    let (op, runtime) = running(&cluster).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    cluster.reset_calls();
    let checks = runtime.stats().requested_checks;
    let kind = local_configmap_operator::package::descriptor();
    assert!(runtime.trigger(&kind, "default", "app"));
    eventually("checked", || runtime.stats().requested_checks > checks).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Neither the resource (the watched copy) nor its ConfigMap (the
    // cache) is read, and a matching check writes nothing.
    assert_eq!(cluster.call_log(), []);
    drop(op);
    runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_write_planned_from_a_stale_cached_read_conflicts_and_is_made_again_from_a_live_read() {
    let cluster = FakeCluster::new();
    let (op, runtime) = running(&cluster).await;
    // Both changes stay on their way to the operator: its cached ConfigMap
    // (and its copy of the resource) fall behind.
    cluster.hold_watch_events();
    cluster.edit_object(CM, |cm| cm["data"] = json!({"k": "tampered"}));
    op.edit_spec("app", |spec| spec["config"]["data"] = json!({"k": "w"}));
    cluster.reset_calls();
    let report = op.reconcile("app").await;
    assert!(
        matches!(
            report,
            blue_kubernetes::Report::Reconciled(blue_kubernetes::resource::Phase::Ready, _)
        ),
        "{report:?}"
    );
    assert_eq!(data(&cluster), Some(json!({"k": "w"})));
    let log = cluster.call_log();
    let config_map_calls = log.iter().filter(|c| c.resource.starts_with("configmaps"));
    // The replace from the cache (refused: it carried the old version),
    // one live read, the replace from it; then the check after converge,
    // whose cached read waited for the held events and read live.
    let ops: Vec<String> = config_map_calls
        .map(|c| format!("{:?}", c.operation))
        .collect();
    assert_eq!(
        ops,
        ["RawReplace", "RawGet", "RawReplace", "Get"],
        "{log:?}"
    );
    cluster.release_watch_events();
    runtime.stop().await;
}
