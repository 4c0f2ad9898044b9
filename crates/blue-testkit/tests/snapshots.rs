//! A pass acts on the freshest snapshot at hand: the
//! object its watch event delivered, else one read. Paused tokio time
//! drives the watching runtime.

mod common;

use async_trait::async_trait;
use blue_kubernetes::{start, Config, Runtime};
use blue_kubernetes_client::{Call, Client, Hook, Layered};
use blue_testkit::{Callback, FakeCluster, FakeInfra};
use common::*;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

async fn wait_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

fn start_over(cluster: &FakeCluster, infra: &FakeInfra, client: Arc<dyn Client>) -> Runtime {
    let mut config = Config::new(client, vec![infra.package(widgets())]);
    config.namespace = NS.into();
    config.now = tokio_clock();
    config.poll_ms = 500;
    let _ = cluster;
    start(blue_kubernetes::controller(config).unwrap()).unwrap()
}

fn settled(cluster: &FakeCluster, name: &str) -> bool {
    let object = cluster.get(&widgets(), NS, name).unwrap();
    object["status"]["phase"] == "Ready"
        && object["status"]["observedGeneration"] == object["metadata"]["generation"]
}

fn hourly(value: u64) -> Value {
    json!({"reconcileInterval": "1h", "config": {"value": value}})
}

/// Once armed, makes the next write's snapshot stale: someone edits the
/// spec just before the write is sent.
struct EditBeforeNextWrite {
    cluster: FakeCluster,
    armed: AtomicBool,
}

#[async_trait]
impl Hook for EditBeforeNextWrite {
    async fn before(&self, call: &Call<'_>) -> Result<(), blue_kubernetes_client::Error> {
        let write = matches!(
            call,
            Call::UpdateStatus { .. } | Call::UpdateFinalizers { .. }
        );
        if write && self.armed.swap(false, Ordering::SeqCst) {
            self.cluster.edit_spec(&widgets(), NS, "w", |spec| {
                spec["config"]["value"] = json!(3)
            });
        }
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_pass_on_a_stale_delivered_object_conflicts_on_its_first_write_and_runs_no_effect() {
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    let hook = Arc::new(EditBeforeNextWrite {
        cluster: cluster.clone(),
        armed: AtomicBool::new(false),
    });
    let client = Arc::new(Layered::new(Arc::new(cluster.clone()), hook.clone()));
    let runtime = start_over(&cluster, &infra, client);
    cluster.create(&widgets(), NS, "w", hourly(1));
    wait_ms(100).await;
    assert!(settled(&cluster, "w"));
    let converges = infra.count(Callback::Converge);
    cluster.reset_calls();
    hook.armed.store(true, Ordering::SeqCst);
    cluster.edit_spec(&widgets(), NS, "w", |spec| {
        spec["config"]["value"] = json!(2)
    });
    wait_ms(100).await;
    assert!(settled(&cluster, "w"));
    assert_eq!(infra.get(&format!("{NS}--w")), Some(json!(3)));
    assert_eq!(
        infra.count(Callback::Converge),
        converges + 1,
        "value 2 was never converged: its publish lost the race"
    );
    let calls = cluster.calls();
    // The stale pass read nothing; the edit's event came while it ran, so
    // the pass after it reads once.
    assert_eq!(calls.get, 1, "{calls:?}");
    assert_eq!(runtime.stats().conflicts, 1, "{:?}", runtime.stats());
    runtime.stop().await;
}
