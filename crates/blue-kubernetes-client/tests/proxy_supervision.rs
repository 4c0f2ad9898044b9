//! Supervision of the proxy process against a fake proxy: restart after it
//! dies or hangs, backoff, and nothing left behind (process or directory)
//! after success, failure, a killed proxy, shutdown and a panic.

mod common;
mod fake_proxy;

use blue_kubernetes_client::{ApiPath, ApiRequest, Error, ErrorKind, RawApi};
use fake_proxy::{is_alive, kill, Answer, Fake, MARKER};
use std::time::Duration;

fn get(path: &str) -> ApiRequest {
    ApiRequest::get(ApiPath::parse(path).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_proxy_fails_the_next_request_fast_and_is_restarted_by_the_one_after() {
    let fake = Fake::start();
    let client = fake.client(|_| {});
    client.start().await.unwrap();
    let first_pid = client.pid().await.unwrap();
    let first_dir = client.socket_dir().await.unwrap();
    assert_eq!(fake.pids(), [first_pid as i32]);

    kill(first_pid as i32);
    // The fake's socket is a link to a server that still answers, so only
    // noticing the exit (not a refused connection) can fail this request.
    let err = client.send(get("/api/v1/x")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(matches!(err, Error::Proxy { .. }));
    assert!(!first_dir.exists(), "the dead proxy's directory is removed");

    assert!(client.send(get("/api/v1/x")).await.is_ok());
    let stats = client.stats().await;
    assert_eq!((stats.starts, stats.restarts, stats.exits), (2, 1, 1));
    let pids = fake.pids();
    assert_eq!(pids.len(), 2);
    assert_eq!(client.pid().await, Some(pids[1] as u32));
    assert!(!is_alive(pids[0]));
    drop(client);
    fake.assert_nothing_left();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_that_stops_answering_is_replaced() {
    let fake = Fake::start();
    fake.answer("/api/v1/hang", Answer::Hang);
    let client = fake.client(|o| o.unanswered_limit = 2);
    let hang = || client.send(get("/api/v1/hang").with_timeout(Duration::from_millis(100)));
    assert_eq!(hang().await.unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(client.stats().await.hangs, 0, "one deadline is not a hang");
    assert_eq!(hang().await.unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(client.stats().await.hangs, 1);
    assert!(!is_alive(fake.pids()[0]), "the hung proxy was killed");

    assert!(client.send(get("/api/v1/fine")).await.is_ok());
    let stats = client.stats().await;
    assert_eq!((stats.starts, stats.restarts), (2, 1));
    drop(client);
    fake.assert_nothing_left();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_starts_back_off_without_spawning() {
    let fake = Fake::start();
    let mut options = fake.kubectl_options().with_env("FAKE_EXIT", "1");
    options.context = Some("fake-ctx".into());
    let mut options = blue_kubernetes_client::ProxyConfig::new(options);
    options.restart_backoff_ms = 3_600_000;
    let client = blue_kubernetes_client::proxy_client(options).unwrap();
    for attempt in 0..4 {
        let err = client.send(get("/api/v1/x")).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unavailable, "attempt {attempt}");
        assert!(!err.to_string().contains(MARKER));
    }
    // The first failure retries at once, the second waits an hour.
    assert_eq!(fake.pids().len(), 2);
    let stats = client.stats().await;
    assert_eq!((stats.starts, stats.failed_starts), (0, 2));
    drop(client);
    fake.assert_nothing_left();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_left_after_a_successful_run() {
    let fake = Fake::start();
    let client = fake.client(|_| {});
    client.send(get("/api/v1/x")).await.unwrap();
    let dir = client.socket_dir().await.unwrap();
    assert!(dir.join("api.sock").exists());
    assert!(is_alive(fake.pids()[0]));
    drop(client);
    fake.assert_nothing_left();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_left_after_a_failed_start() {
    let fake = Fake::start();
    let options = fake.kubectl_options().with_env("FAKE_EXIT", "1");
    let client =
        blue_kubernetes_client::proxy_client(blue_kubernetes_client::ProxyConfig::new(options))
            .unwrap();
    assert!(client.start().await.is_err());
    assert_eq!(fake.pids().len(), 1);
    fake.assert_nothing_left();
    drop(client);
    fake.assert_nothing_left();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_left_after_the_proxy_was_killed() {
    let fake = Fake::start();
    let client = fake.client(|_| {});
    client.start().await.unwrap();
    kill(fake.pids()[0]);
    drop(client);
    fake.assert_nothing_left();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_the_proxy_and_later_requests_fail() {
    let fake = Fake::start();
    let client = fake.client(|_| {});
    client.start().await.unwrap();
    client.shutdown().await;
    fake.assert_nothing_left();
    let err = client.send(get("/api/v1/x")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(fake.pids().len(), 1, "no restart after shutdown");
}

#[test]
fn nothing_is_left_after_a_panic() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fake = runtime.block_on(async { Fake::start() });
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(async {
            let client = fake.client(|_| {});
            client.send(get("/api/v1/x")).await.unwrap();
            assert!(is_alive(fake.pids()[0]));
            panic!("a package bug while the client is in use");
        })
    }));
    assert!(panicked.is_err());
    fake.assert_nothing_left();
    runtime.block_on(async { drop(fake) });
}
