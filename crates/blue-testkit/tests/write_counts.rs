//! What a new resource and a deletion cost in writes (status, finalizer
//! and Event writes), measured on the FakeCluster with the watching
//! runtime and Events on. Run with `--nocapture` to see the numbers.

mod common;

use blue_testkit::{FakeCluster, FakeInfra};
use common::*;
use serde_json::json;
use std::time::Duration;

async fn settle() {
    tokio::time::sleep(Duration::from_millis(200)).await;
}

#[tokio::test(start_paused = true)]
async fn writes_per_new_resource_and_per_deletion() {
    let (cluster, infra) = (FakeCluster::new(), FakeInfra::new());
    let packages = vec![infra.package(widgets())];
    let controller = build(&cluster, tokio_clock(), packages, |c| {
        c.event_component = Some("widget-operator".into())
    });
    let runtime = blue_kubernetes::start(controller).unwrap();
    let n = 20;
    let mut rows = Vec::new();
    for (label, policy) in [("Retain", "Retain"), ("Destroy", "Destroy")] {
        cluster.reset_calls();
        let events = cluster.event_writes();
        for i in 0..n {
            let spec = json!({"deletionPolicy": policy, "config": {"value": i}});
            cluster.create(&widgets(), NS, &format!("{label}-{i}"), spec);
        }
        settle().await;
        let created = (cluster.calls(), cluster.event_writes() - events);
        cluster.reset_calls();
        let events = cluster.event_writes();
        for i in 0..n {
            cluster.delete(&widgets(), NS, &format!("{label}-{i}"));
        }
        settle().await;
        let deleted = (cluster.calls(), cluster.event_writes() - events);
        rows.push((label, created, deleted));
    }
    runtime.stop().await;
    for (label, (c, ce), (d, de)) in &rows {
        let per = |x: usize| x as f64 / n as f64;
        println!(
            "{label}: new resource {} status + {} finalizer + {} Event writes; \
             deletion {} status + {} finalizer + {} Event writes",
            per(c.update_status),
            per(c.update_finalizers),
            per(*ce),
            per(d.update_status),
            per(d.update_finalizers),
            per(*de),
        );
    }
    let (_, (created, created_events), (deleted, deleted_events)) = &rows[0];
    // Finalizer, Reconciling, Ready; one Event, Converged: the Reconciling
    // Event was still queued when it came, and gave way to it.
    assert_eq!(created.update_finalizers, n);
    assert_eq!(created.update_status, 2 * n);
    assert_eq!(*created_events, n);
    // Retain: our finalizer goes, nothing else.
    assert_eq!((deleted.update_status, deleted.update_finalizers), (0, n));
    assert_eq!(*deleted_events, 0);
    // Destroy: Deleting, the finalizer; no Event: the Deleting one waited
    // its grace, and the release (within it) replaced it.
    let (_, _, (destroyed, destroyed_events)) = &rows[1];
    assert_eq!(
        (destroyed.update_status, destroyed.update_finalizers),
        (n, n)
    );
    assert_eq!(*destroyed_events, 0);
}
