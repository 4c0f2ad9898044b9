//! The runner's drain with a real runtime: a converge that never returns
//! holds the stop only until the drain's timeout, and a drain ends as
//! soon as the running reconciles do. Paused tokio time: no real waits.

mod common;

use blue_kubernetes::runner::{drain, Drained};
use blue_kubernetes::{
    async_trait, controller, package::NoOutputs, start, CallbackResult, Config, Context,
    Infrastructure, Observation, Outcome, Package, ResourceSchema, Runtime,
};
use blue_testkit::FakeCluster;
use common::*;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WidgetConfig {
    #[allow(dead_code)]
    value: i64,
}

/// A package whose converge takes `converge_for`, or never returns.
#[derive(Clone, Default)]
struct Slow {
    converge_for: Option<Duration>,
    started: Arc<AtomicUsize>,
}

#[async_trait]
impl Infrastructure for Slow {
    type Config = WidgetConfig;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(widgets())
    }

    async fn observe(&self, _: &Context<WidgetConfig>) -> CallbackResult<Observation<NoOutputs>> {
        Ok(Observation::ABSENT)
    }

    async fn converge(&self, _: &Context<WidgetConfig>) -> CallbackResult<Outcome<NoOutputs>> {
        self.started.fetch_add(1, Ordering::SeqCst);
        match self.converge_for {
            Some(duration) => tokio::time::sleep(duration).await,
            None => std::future::pending().await,
        }
        Ok(Outcome::done())
    }

    async fn delete(&self, _: &Context<WidgetConfig>) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }
}

/// A runtime over a fake cluster with one widget whose converge has begun.
async fn converging(slow: &Slow) -> Runtime {
    let cluster = FakeCluster::new();
    let package = Package::new(slow.clone()).unwrap();
    let mut config = Config::new(Arc::new(cluster.clone()), vec![package]);
    config.namespace = NS.into();
    config.now = tokio_clock();
    config.watch = false;
    let runtime = start(controller(config).unwrap()).unwrap();
    cluster.create(&widgets(), NS, "w", spec(json!(1)));
    // Paused time runs ahead whenever every task waits, also while part of
    // a pass is on another thread: bound the wait by real time instead, and
    // give other threads a moment each round.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        if slow.started.load(Ordering::SeqCst) > 0 {
            return runtime;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("converge never started");
}

#[tokio::test(start_paused = true)]
async fn a_converge_that_never_returns_holds_the_drain_only_until_its_timeout() {
    let runtime = converging(&Slow::default()).await;
    let began = Instant::now();
    let drained = drain(runtime, Duration::from_secs(25), std::future::pending()).await;
    assert_eq!(drained, Drained::TimedOut);
    assert_eq!(began.elapsed(), Duration::from_secs(25));
}

#[tokio::test(start_paused = true)]
async fn the_drain_ends_when_the_running_converge_does() {
    let slow = Slow {
        converge_for: Some(Duration::from_secs(3)),
        ..Slow::default()
    };
    let runtime = converging(&slow).await;
    let began = Instant::now();
    let drained = drain(runtime, Duration::from_secs(25), std::future::pending()).await;
    assert_eq!(drained, Drained::Finished);
    assert!(
        began.elapsed() <= Duration::from_secs(3),
        "{:?}",
        began.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn a_second_signal_ends_the_drain_at_once() {
    let runtime = converging(&Slow::default()).await;
    let began = Instant::now();
    let second = tokio::time::sleep(Duration::from_secs(2));
    let drained = drain(runtime, Duration::from_secs(25), second).await;
    assert_eq!(drained, Drained::Interrupted);
    assert_eq!(began.elapsed(), Duration::from_secs(2));
}
