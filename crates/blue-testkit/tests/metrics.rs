//! Prometheus metrics, health and Stats after a scripted sequence on a
//! running runtime (paused tokio time drives the poller and the clock), and
//! the HTTP listener that serves them.

mod common;

use blue_kubernetes::{start, Config, Runtime};
use blue_testkit::{Callback, FakeCluster, FakeInfra, Fault, Misbehaviour, Operation};
use common::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const POLL_MS: u64 = 500;

fn start_runtime(
    cluster: &FakeCluster,
    infra: &FakeInfra,
    tweak: impl FnOnce(&mut Config),
) -> Runtime {
    let mut config = Config::new(Arc::new(cluster.clone()), vec![infra.package(widgets())]);
    config.namespace = NS.into();
    config.now = tokio_clock();
    config.poll_ms = POLL_MS;
    // Counts below assume a list per poll.
    config.watch = false;
    tweak(&mut config);
    start(blue_kubernetes::controller(config).unwrap()).unwrap()
}

/// `name{labels}` -> value, from the text exposition.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (key, value) = l.rsplit_once(' ').expect("sample line");
            (key.to_string(), value.parse().expect("numeric value"))
        })
        .collect()
}

fn value(samples: &BTreeMap<String, f64>, key: &str) -> f64 {
    *samples
        .get(key)
        .unwrap_or_else(|| panic!("no sample {key} in {samples:#?}"))
}

#[tokio::test(start_paused = true)]
async fn metrics_and_stats_follow_a_scripted_sequence() {
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    cluster.create(&widgets(), NS, "good", spec(json!(1)));
    cluster.create(&widgets(), NS, "bad", spec(json!(2)));
    cluster.create(&widgets(), NS, "odd", json!({"config": {"invalid": true}}));
    // "bad" sorts first, so its converge takes the two scripted failures.
    infra.script(Callback::Converge, Misbehaviour::Error);
    infra.script(Callback::Converge, Misbehaviour::Panic);
    cluster.inject(Operation::ListPage, Fault::Unavailable);
    let runtime = start_runtime(&cluster, &infra, |c| c.retry_max_ms = 1_000);

    tokio::time::sleep(Duration::from_millis(POLL_MS * 12)).await;
    let stats = runtime.stats();
    let text = runtime.controller().metrics().encode();
    let s = samples(&text);
    runtime.stop().await;
    // Labels are types, callbacks and classes: never objects or error text.
    for name in [
        "\"good\"",
        "\"bad\"",
        "\"odd\"",
        blue_testkit::PLANTED_SECRET,
    ] {
        assert!(!text.contains(name), "{name} in metrics");
    }

    let w = r#"controller="widgets.example.com""#;
    assert_eq!(stats.callback_failures, 2);
    assert_eq!(stats.failed, 2);
    assert_eq!(stats.invalid, 1);
    assert_eq!(stats.reconcile_errors, 0);
    assert_eq!(
        value(
            &s,
            &format!(r#"blue_callback_errors_total{{{w},callback="converge",reason="error"}}"#)
        ),
        1.0
    );
    assert_eq!(
        value(
            &s,
            &format!(r#"blue_callback_errors_total{{{w},callback="converge",reason="panic"}}"#)
        ),
        1.0
    );
    assert_eq!(
        value(
            &s,
            &format!(r#"controller_runtime_reconcile_errors_total{{{w}}}"#)
        ),
        2.0
    );
    assert_eq!(
        value(
            &s,
            &format!(r#"controller_runtime_reconcile_total{{{w},result="error"}}"#)
        ),
        2.0
    );
    // good, odd, and bad once it recovered.
    assert_eq!(
        value(
            &s,
            &format!(r#"controller_runtime_reconcile_total{{{w},result="success"}}"#)
        ),
        3.0
    );
    assert_eq!(
        value(&s, &format!(r#"blue_reconcile_retries_total{{{w}}}"#)),
        2.0
    );
    assert_eq!(
        value(
            &s,
            &format!(r#"controller_runtime_reconcile_time_seconds_count{{{w}}}"#)
        ),
        5.0
    );
    assert!(
        value(
            &s,
            &format!(r#"blue_callback_duration_seconds_count{{{w},callback="observe"}}"#)
        ) >= 3.0
    );
    assert_eq!(
        value(&s, &format!(r#"blue_resources{{{w},phase="Ready"}}"#)),
        2.0
    );
    assert_eq!(
        value(&s, &format!(r#"blue_resources{{{w},phase="Invalid"}}"#)),
        1.0
    );
    assert_eq!(
        value(&s, &format!(r#"blue_resources{{{w},phase="Failed"}}"#)),
        0.0
    );
    assert_eq!(value(&s, r#"workqueue_depth{name="blue-kubernetes"}"#), 0.0);
    assert_eq!(
        value(&s, &format!(r#"controller_runtime_active_workers{{{w}}}"#)),
        0.0
    );
    assert_eq!(value(&s, "blue_polls_total"), stats.polls as f64);
    assert_eq!(
        value(
            &s,
            r#"blue_transport_requests_total{operation="list",result="unavailable"}"#
        ),
        1.0
    );
    // One list per poll, except while a failed list backs off.
    let lists = value(
        &s,
        r#"blue_transport_request_duration_seconds_count{operation="list"}"#,
    );
    assert!(lists <= stats.polls as f64 && lists >= stats.polls as f64 - 2.0);
    assert_eq!(
        value(
            &s,
            r#"blue_transport_requests_total{operation="list",result="ok"}"#
        ),
        lists - 1.0
    );
}

#[tokio::test(start_paused = true)]
async fn ready_after_every_type_listed_and_not_live_when_the_poller_stalls() {
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    cluster.fail_always(Operation::ListPage, Some(Fault::Unavailable));
    let runtime = start_runtime(&cluster, &infra, |_| {});
    let health = runtime.health();
    tokio::time::sleep(Duration::from_millis(POLL_MS * 4)).await;
    assert!(health.is_live(), "failed lists are still progress");
    assert!(!health.is_ready(), "nothing listed yet");

    cluster.fail_always(Operation::ListPage, None);
    // Failed lists back off (1 s, 2 s ...): the next one comes within 2 s.
    tokio::time::sleep(Duration::from_millis(2_000 + POLL_MS * 2)).await;
    assert!(health.is_ready());

    // A list that hangs: no cycle completes for more than 3 intervals.
    cluster.set_latency(Duration::from_millis(POLL_MS * 10));
    tokio::time::sleep(Duration::from_millis(POLL_MS * 5)).await;
    assert!(!health.is_live());
    assert!(health.is_ready(), "readiness, once reached, stays");
    cluster.set_latency(Duration::ZERO);
    tokio::time::sleep(Duration::from_millis(POLL_MS * 12)).await;
    assert!(health.is_live(), "live again once a cycle completes");
    runtime.stop().await;
}

async fn http_get(address: std::net::SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let code = response[9..12].parse().unwrap();
    let body = response.split_once("\r\n\r\n").unwrap().1.to_string();
    (code, body)
}

#[tokio::test]
async fn the_listener_serves_metrics_healthz_and_readyz() {
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    cluster.create(&widgets(), NS, "good", spec(json!(1)));
    cluster.fail_always(Operation::ListPage, Some(Fault::Unavailable));
    // A real clock and a long poll period: the first cycle runs at once.
    let runtime = start_runtime(&cluster, &infra, |c| {
        c.poll_ms = 3_600_000;
        c.now = blue_kubernetes::config::system_clock();
    });
    let server = blue_kubernetes::telemetry::serve_http(
        "127.0.0.1:0".parse().unwrap(),
        runtime.controller().metrics().clone(),
        runtime.health(),
    )
    .await
    .unwrap();
    let address = server.address();
    while runtime.stats().polls == 0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(http_get(address, "/healthz").await, (200, "ok\n".into()));
    let (code, _) = http_get(address, "/readyz").await;
    assert_eq!(code, 503, "the only list failed");
    let (code, metrics) = http_get(address, "/metrics").await;
    assert_eq!(code, 200);
    assert!(metrics.contains("blue_polls_total 1"), "{metrics}");
    assert!(metrics.ends_with("# EOF\n"));
    assert_eq!(http_get(address, "/nope").await.0, 404);
    server.stop().await;
    runtime.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_standby_replica_is_live_and_ready_without_polling() {
    let cluster = FakeCluster::new();
    let infra = FakeInfra::new();
    let elected = |identity: &str| {
        let identity = identity.to_string();
        move |c: &mut Config| {
            let mut election = blue_kubernetes::replicas::LeaderElectionConfig::new("lease", NS);
            election.identity = identity;
            c.leader_election = Some(election);
        }
    };
    let leader = start_runtime(&cluster, &infra, elected("a"));
    tokio::time::sleep(Duration::from_millis(POLL_MS * 4)).await;
    assert!(leader.is_leader());
    let standby = start_runtime(&cluster, &infra, elected("b"));
    tokio::time::sleep(Duration::from_millis(POLL_MS * 8)).await;
    assert!(!standby.is_leader());
    assert_eq!(standby.stats().polls, 0, "a standby never lists");
    let health = standby.health();
    assert!(health.is_live(), "standing by is progress");
    assert!(health.is_ready(), "a standby does not hold up a rollout");
    standby.stop().await;
    leader.stop().await;
}
