//! The polling runtime with leader election: only the leader works, a
//! graceful stop hands over, and a leader cut off from its lease stops
//! dispatching at the renew deadline and writes nothing after expiry while
//! its in-flight callback still finishes. Paused tokio time drives the
//! pollers, the electors and the controller clocks.

mod common;

use blue_kubernetes::{start, Config, Runtime};

use blue_kubernetes::replicas::LeaderElectionConfig;
use blue_kubernetes_client::Client;
use blue_testkit::{Callback, FakeCluster, FakeInfra, Fault, Operation};
use common::*;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const POLL_MS: u64 = 500;
const LD: u64 = 15_000;
const RD: u64 = 10_000;
const RP: u64 = 2_000;

fn runtime(cluster: &FakeCluster, infra: &FakeInfra, identity: Option<&str>) -> Runtime {
    let client: Arc<dyn Client> = Arc::new(cluster.clone());
    let mut config = Config::new(client, vec![infra.package(widgets())]);
    config.event_component = Some("widgets-operator".into());
    config.namespace = NS.into();
    config.now = tokio_clock();
    config.poll_ms = POLL_MS;
    config.leader_election = identity.map(|id| {
        let mut election = LeaderElectionConfig::new("widgets-operator", NS);
        election.identity = id.into();
        election
    });
    start(blue_kubernetes::controller(config).unwrap()).unwrap()
}

fn holder(cluster: &FakeCluster) -> Option<String> {
    cluster
        .lease(NS, "widgets-operator")
        .and_then(|l| l.spec.holder().map(str::to_owned))
}

fn phase(cluster: &FakeCluster, name: &str) -> serde_json::Value {
    cluster.get(&widgets(), NS, name).unwrap()["status"]["phase"].clone()
}

async fn sleep_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

#[tokio::test(start_paused = true)]
async fn only_the_leader_reconciles_and_a_graceful_stop_hands_over() {
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    let a = runtime(&cluster, &infra, Some("a"));
    sleep_ms(10).await;
    let b = runtime(&cluster, &infra, Some("b"));
    for name in ["w1", "w2", "w3"] {
        cluster.create(&widgets(), NS, name, spec(json!(name)));
    }
    sleep_ms(5 * POLL_MS).await;
    for name in ["w1", "w2", "w3"] {
        assert_eq!(phase(&cluster, name), "Ready");
    }
    assert_eq!(holder(&cluster).as_deref(), Some("a"));
    assert!(a.is_leader() && !b.is_leader());
    let leading = |r: &Runtime| r.controller().metrics().encode();
    assert!(leading(&a).contains("leader_election_master_status{name=\"widgets-operator\"} 1"));
    assert!(leading(&b).contains("leader_election_master_status{name=\"widgets-operator\"} 0"));
    let (sa, sb) = (a.stats(), b.stats());
    assert_eq!((sa.leadership_acquired, sb.leadership_acquired), (1, 0));
    assert!(sa.polls > 0 && sa.reconciles >= 3);
    assert_eq!(
        (sb.polls, sb.reconciles),
        (0, 0),
        "the follower did nothing"
    );

    a.stop().await;
    assert_eq!(holder(&cluster), None, "released on stop");
    cluster.create(&widgets(), NS, "late", spec(json!("late")));
    sleep_ms(RP + 3 * POLL_MS).await;
    assert_eq!(holder(&cluster).as_deref(), Some("b"));
    assert_eq!(phase(&cluster, "late"), "Ready");
    assert!(b.is_leader() && b.stats().reconciles > 0);
    assert_eq!(
        infra.count(Callback::Converge),
        4,
        "each widget converged once"
    );
    b.stop().await;
}

#[tokio::test(start_paused = true)]
async fn without_leader_election_no_lease_is_touched() {
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    let r = runtime(&cluster, &infra, None);
    cluster.create(&widgets(), NS, "w", spec(json!(1)));
    sleep_ms(3 * POLL_MS).await;
    assert_eq!(phase(&cluster, "w"), "Ready");
    assert!(r.is_leader());
    assert_eq!(cluster.calls().leases, 0);
    assert_eq!(r.stats().leadership_acquired, 0);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_leader_cut_off_from_its_lease_stops_dispatching_then_fences_its_inflight_writes() {
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    let r = runtime(&cluster, &infra, Some("a"));
    infra.hold_effects();
    cluster.create(&widgets(), NS, "held", spec(json!(1)));
    infra.effects_started(1).await;
    assert_eq!(
        phase(&cluster, "held"),
        "Reconciling",
        "published before the effect"
    );

    // The last renewal started at most one retry period ago.
    let cut = tokio::time::Instant::now();
    cluster.fail_always(Operation::GetLease, Some(Fault::Unavailable));
    sleep_ms(RD).await;
    assert!(!r.is_leader(), "no renewal within the renew deadline");
    let polls = r.stats().polls;
    cluster.create(&widgets(), NS, "new", spec(json!(2)));
    sleep_ms(LD - RD).await;
    assert!(cut.elapsed() >= Duration::from_millis(LD));

    infra.release(1);
    sleep_ms(3 * POLL_MS).await;
    assert_eq!(
        infra.count(Callback::Converge),
        1,
        "the in-flight callback finished"
    );
    let stats = r.stats();
    assert_eq!(stats.polls, polls, "no listing after the renew deadline");
    assert_eq!(stats.leadership_lost, 1);
    assert!(
        stats.fenced_writes >= 1,
        "the final status write was refused"
    );
    let metrics = r.controller().metrics().encode();
    assert!(
        metrics.contains("leader_election_master_status{name=\"widgets-operator\"} 0"),
        "{metrics}"
    );
    let fenced = format!(
        "blue_leader_election_fenced_writes_total {}",
        stats.fenced_writes
    );
    assert!(metrics.contains(&fenced), "{metrics}");
    let fenced_events: Vec<_> = cluster
        .events()
        .into_iter()
        .filter(|e| e["reason"] == "Fenced")
        .collect();
    assert_eq!(fenced_events.len(), 1, "one Event for the refused write");
    assert_eq!(fenced_events[0]["involvedObject"]["name"], "held");
    assert_eq!(fenced_events[0]["type"], "Warning");
    assert_eq!(
        phase(&cluster, "held"),
        "Reconciling",
        "nothing written after expiry"
    );
    assert!(cluster
        .get(&widgets(), NS, "new")
        .unwrap()
        .get("status")
        .is_none());

    cluster.fail_always(Operation::GetLease, None);
    infra.release(1);
    sleep_ms(RP + 3 * POLL_MS).await;
    assert!(r.is_leader(), "the record is still ours: renewed");
    assert_eq!(phase(&cluster, "held"), "Ready");
    assert_eq!(phase(&cluster, "new"), "Ready");
    r.stop().await;
}
