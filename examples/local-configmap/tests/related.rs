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

#[tokio::test]
async fn a_deleted_or_edited_config_map_is_repaired_at_once() {
    let cluster = FakeCluster::new();
    let package = Package::new(LocalConfigMaps::default()).unwrap();
    let op = TestOperator::on(&cluster, vec![package]).configure(|c| {
        // An hour for everything but the watches: only an event can repair it.
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
    eventually("created", || data(&cluster) == Some(json!({"k": "v"}))).await;
    let cm = cluster.get_object(CM).unwrap();
    assert_eq!(cm["metadata"]["annotations"][OWNER_NAME_ANNOTATION], "app");
    cluster.delete_object(CM);
    eventually("re-created", || data(&cluster) == Some(json!({"k": "v"}))).await;
    cluster.edit_object(CM, |cm| cm["data"] = json!({"k": "tampered"}));
    eventually("repaired", || data(&cluster) == Some(json!({"k": "v"}))).await;
    assert!(runtime.stats().requested_checks >= 2);
    runtime.stop().await;
}
