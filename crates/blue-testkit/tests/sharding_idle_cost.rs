//! The idle cost of sharding (issue 23's target): three replicas with the
//! default [`ShardingConfig`] settings, settled, send at most one Lease request
//! per second each, and as many with hundreds of resources as with none.
//! Each replica's Lease calls are counted by a hook on its own client, and
//! the fake cluster's count of every Lease call must agree with their sum.
//! Paused tokio time drives everything; the rate is per simulated second.

mod common;

use blue_kubernetes::{start, Config, Runtime};

use blue_kubernetes::replicas::ShardingConfig;
use blue_kubernetes_client::{Call, Client, Error, Hook, Layered};
use blue_testkit::{FakeCluster, FakeInfra};
use common::watchdog::paused_test;
use common::*;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const REPLICAS: usize = 3;
/// Long enough for membership and every shard to settle.
const SETTLE_MS: u64 = 60_000;
/// The measuring window: a whole number of rounds at any period that
/// divides a minute.
const WINDOW_MS: u64 = 60_000;
const RESOURCES: usize = 300;

/// Counts the Lease calls of one replica.
#[derive(Clone, Default)]
struct LeaseCalls(Arc<AtomicU64>);

#[async_trait::async_trait]
impl Hook for LeaseCalls {
    async fn before(&self, call: &Call<'_>) -> Result<(), Error> {
        if call.operation().contains("lease") {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

fn replica(cluster: &FakeCluster, infra: &FakeInfra, name: &str) -> (Runtime, LeaseCalls) {
    let calls = LeaseCalls::default();
    let inner: Arc<dyn Client> = Arc::new(cluster.clone());
    let client: Arc<dyn Client> = Arc::new(Layered::new(inner, calls.clone()));
    let mut config = Config::new(client, vec![infra.package(widgets())]);
    config.namespace = NS.into();
    config.now = tokio_clock();
    let mut sharding = ShardingConfig::new("idle-operator", NS);
    sharding.lease.identity = name.into();
    config.sharding = Some(sharding);
    let runtime = start(blue_kubernetes::controller(config).unwrap()).unwrap();
    (runtime, calls)
}

/// Per replica, Lease requests per simulated second over one window; and
/// the fake cluster's Lease calls in it, which must be their sum.
async fn window(cluster: &FakeCluster, replicas: &[(Runtime, LeaseCalls)]) -> Vec<f64> {
    let before: Vec<u64> = replicas
        .iter()
        .map(|(_, c)| c.0.load(Ordering::SeqCst))
        .collect();
    let cluster_before = cluster.calls().leases;
    tokio::time::sleep(Duration::from_millis(WINDOW_MS)).await;
    let counts: Vec<u64> = (replicas.iter().zip(before))
        .map(|((_, c), b)| c.0.load(Ordering::SeqCst) - b)
        .collect();
    let sum: u64 = counts.iter().sum();
    assert_eq!(
        (cluster.calls().leases - cluster_before) as u64,
        sum,
        "the cluster saw every counted Lease call"
    );
    let secs = WINDOW_MS as f64 / 1000.0;
    counts.iter().map(|&c| c as f64 / secs).collect()
}

#[test]
fn three_settled_replicas_send_at_most_one_lease_request_a_second_each_whatever_the_resources() {
    paused_test(|| async {
        let cluster = FakeCluster::new();
        let infra = FakeInfra::new();
        let replicas: Vec<_> = (0..REPLICAS)
            .map(|i| replica(&cluster, &infra, &format!("r{i}")))
            .collect();
        tokio::time::sleep(Duration::from_millis(SETTLE_MS)).await;
        let owned: usize = replicas.iter().map(|(r, _)| r.shards_owned().len()).sum();
        let shards = ShardingConfig::new("idle-operator", NS).shards as usize;
        assert_eq!(owned, shards, "settled: every shard owned once");

        let empty = window(&cluster, &replicas).await;
        eprintln!("Lease requests/s per replica, no resources: {empty:?}");
        for name in (0..RESOURCES).map(|i| format!("w{i}")) {
            cluster.create(&widgets(), NS, &name, spec(json!(1)));
        }
        tokio::time::sleep(Duration::from_millis(SETTLE_MS)).await;
        let ready = (0..RESOURCES)
            .filter(|i| {
                let o = cluster.get(&widgets(), NS, &format!("w{i}")).unwrap();
                o["status"]["phase"] == "Ready"
            })
            .count();
        assert_eq!(ready, RESOURCES, "every resource converged");
        let busy = window(&cluster, &replicas).await;
        eprintln!("Lease requests/s per replica, {RESOURCES} resources: {busy:?}");

        for (e, b) in empty.iter().zip(&busy) {
            assert!(*e <= 1.0 && *b <= 1.0, "at most 1/s: {empty:?} {busy:?}");
            // One round's requests of slack: the window's phase.
            assert!(
                (e - b).abs() <= 2.0 / 60.0,
                "independent of the resources: {empty:?} {busy:?}"
            );
        }
        for (runtime, _) in replicas {
            runtime.stop().await;
        }
    });
}
