//! Two sharded replicas of the example's package on one fake cluster, both
//! auditing into one shared file (the `audit-file` test hook): every
//! resource converges, each converge is a start and an end line under the
//! resource's state identity hash (what its status reports), both replicas
//! ran some, and no identity ran in both at once.

use blue_kubernetes::{controller, start, Config, Runtime};

use blue_kubernetes::config::LockDomain;

use blue_kubernetes::replicas::ShardingConfig;
use blue_kubernetes_client::Client;
use blue_testkit::FakeCluster;
use local_configmap_operator::package::{descriptor, names, LocalConfigMaps};
use local_configmap_operator::test_hooks::audit::{intervals, overlaps, parse_audit, AuditLog};
use local_configmap_operator::test_hooks::TestHooks;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const NS: &str = "default";
const RESOURCES: usize = 6;

/// Polls `f` every few milliseconds for at most ten seconds.
async fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn replica(cluster: &FakeCluster, audit: &Path, name: &str) -> Runtime {
    let client: Arc<dyn Client> = Arc::new(cluster.clone());
    let hooks = TestHooks {
        audit: Some(Arc::new(AuditLog::open(audit, name).unwrap())),
        converge_delay: Some(Duration::from_millis(20)),
        ..TestHooks::default()
    };
    let package = LocalConfigMaps::with_test_hooks(hooks).unwrap();
    let mut config = Config::new(client, vec![package]);
    config.namespace = NS.into();
    config.names = names();
    // Each replica is a process of its own: no identity lock shared with
    // the other, so only the shards keep them apart, as in a cluster.
    config.lock_domain = LockDomain::new();
    // Short rounds, so shards are taken within a test's patience.
    let mut sharding = ShardingConfig::new("lcm", NS).with_shards(4);
    sharding.lease.identity = name.into();
    sharding.lease.retry_period_ms = 50;
    sharding.lease.renew_deadline_ms = 400;
    sharding.lease.lease_duration_ms = 600;
    config.sharding = Some(sharding);
    start(controller(config).unwrap()).unwrap()
}

fn config_map(i: usize) -> String {
    format!("/api/v1/namespaces/{NS}/configmaps/app-{i}")
}

#[tokio::test]
async fn sharded_replicas_audit_every_converge_and_never_overlap() {
    let audit = std::env::temp_dir().join(format!("lcm-sharded-audit-{}", std::process::id()));
    let _ = std::fs::remove_file(&audit);
    let cluster = FakeCluster::new();
    let (a, b) = (
        replica(&cluster, &audit, "pod-a"),
        replica(&cluster, &audit, "pod-b"),
    );
    let both_own = || !a.shards_owned().is_empty() && !b.shards_owned().is_empty();
    eventually("both replicas own shards", both_own).await;
    for i in 0..RESOURCES {
        let spec = json!({"reconcileInterval": "1h", "config": {"data": {"k": "v"}}});
        cluster.create(&descriptor(), NS, &format!("app-{i}"), spec);
    }
    let all_converged = || (0..RESOURCES).all(|i| cluster.get_object(&config_map(i)).is_some());
    eventually("every ConfigMap created", all_converged).await;
    a.stop().await;
    b.stop().await;
    let text = std::fs::read_to_string(&audit).unwrap();
    std::fs::remove_file(&audit).unwrap();
    let entries = parse_audit(&text).unwrap();
    let runs = intervals(&entries);
    assert!(runs.iter().all(|r| r.end.is_some()), "{text}");
    assert!(overlaps(&entries).is_empty(), "{text}");
    let path =
        |i| format!("/apis/examples.blue.dev/v1alpha1/namespaces/{NS}/localconfigmaps/app-{i}");
    for i in 0..RESOURCES {
        let status = &cluster.get_object(&path(i)).unwrap()["status"];
        let hash = status["stateIdentity"].as_str().unwrap_or_default();
        assert!(
            runs.iter().any(|r| r.identity == hash),
            "app-{i} ({hash}) has no audited converge: {text}"
        );
    }
}
