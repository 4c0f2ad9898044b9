//! Fences fail closed: a write a pass hands out the means to make (here
//! the connection Secret) is checked against the shard fence that held
//! when the pass started, from whatever task or thread it is made. A
//! write made after that fence was lost is refused; a write with the
//! fence held costs the requests it costs without any fence.
//!
//! The controller's clock is a `FakeClock`: the test moves it past the
//! shard Lease's expiry while a callback (or a task it spawned) waits, so
//! the fence is lost at a point the test chooses.

mod common;

use blue_kubernetes::{
    start, CallbackResult, Config, Observation, Package, ResourceSchema, Runtime,
};

use blue_kubernetes::connection::ConnectionError;

use blue_kubernetes::package::{CallbackInput, WorkflowOutcome};
use blue_kubernetes_client::{Call, Client, Error, Hook, Layered};
use blue_testkit::{FakeClock, FakeCluster, Operation};
use common::sharding::{self, lock};
use common::*;
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

const LEASE_MS: u64 = 15_000;

/// Numbers each test's identity system: identities of parallel tests
/// must not meet in the process-wide identity lock.
static SYSTEMS: AtomicUsize = AtomicUsize::new(0);

/// Where a late write is made from.
#[derive(Clone, Copy, Debug)]
enum From {
    /// A task `converge` spawned and left running.
    SpawnedTask,
    /// A synchronous `converge`, on its blocking thread.
    BlockingCallback,
}

/// The package's side of the test: the late write's trigger and result.
#[derive(Default)]
struct Late {
    /// Told once converge (or its task) waits for the go.
    waiting: Mutex<Option<mpsc::Sender<()>>>,
    /// The go: the fence is lost by now.
    go: Mutex<Option<oneshot::Receiver<()>>>,
    result: Mutex<Option<Result<(), ConnectionError>>>,
}

impl Late {
    /// Says it waits and takes the go to wait for.
    fn go(&self) -> oneshot::Receiver<()> {
        if let Some(tx) = lock(&self.waiting).take() {
            let _ = tx.send(());
        }
        lock(&self.go).take().expect("one late write per test")
    }

    fn record(&self, result: Result<(), ConnectionError>) {
        *lock(&self.result) = Some(result);
    }
}

fn package(system: String, from: From, late: Arc<Late>) -> Package {
    let converged = Arc::new(AtomicBool::new(false));
    let observed = converged.clone();
    let builder = Package::builder(ResourceSchema::new(widgets()).connection_secret())
        .identity(move |o| Ok(sharding::identity(&system, o.profile())))
        .observe(move |_| {
            let done = observed.load(Ordering::SeqCst);
            Ok(Observation::new(done, done, done))
        })
        .delete(|_| Ok(WorkflowOutcome::new()));
    let builder = match from {
        From::SpawnedTask => builder.converge_async(move |o: CallbackInput| {
            let (late, converged) = (late.clone(), converged.clone());
            async move {
                let connection = o.connection().expect("declared").clone();
                connection
                    .get_or_create("password", || "p4ssw0rd-long".into())
                    .await?;
                let go = late.go();
                // Left running past the pass, as a careless package might.
                tokio::spawn(async move {
                    go.await.expect("the test says go");
                    late.record(connection.set("late", "value").await);
                });
                converged.store(true, Ordering::SeqCst);
                Ok(WorkflowOutcome::new())
            }
        }),
        From::BlockingCallback => builder.converge(
            move |o: &CallbackInput| -> CallbackResult<WorkflowOutcome> {
                let connection = o.connection().expect("declared");
                connection.get_or_create_blocking("password", || "p4ssw0rd-long".into())?;
                late.go().blocking_recv().expect("the test says go");
                late.record(connection.set_blocking("late", "value"));
                converged.store(true, Ordering::SeqCst);
                Ok(WorkflowOutcome::new())
            },
        ),
    };
    builder.build().expect("all callbacks are set")
}

/// Refuses Lease calls while set: the replica can no longer renew.
#[derive(Clone, Default)]
struct LeasesCut(Arc<AtomicBool>);

#[async_trait::async_trait]
impl Hook for LeasesCut {
    async fn before(&self, call: &Call<'_>) -> Result<(), Error> {
        let lease = matches!(
            call,
            Call::GetLease { .. }
                | Call::CreateLease { .. }
                | Call::UpdateLease { .. }
                | Call::ListLeases { .. }
        );
        match lease && self.0.load(Ordering::SeqCst) {
            true => Err(Error::Timeout {
                operation: "partitioned".into(),
                timeout_ms: 0,
            }),
            false => Ok(()),
        }
    }
}

struct Replica {
    runtime: Runtime,
    clock: FakeClock,
    cut: LeasesCut,
}

fn replica(cluster: &FakeCluster, package: Package, sharded: bool) -> Replica {
    let clock = FakeClock::default();
    let cut = LeasesCut::default();
    let inner: Arc<dyn Client> = Arc::new(cluster.clone());
    let client: Arc<dyn Client> = Arc::new(Layered::new(inner, cut.clone()));
    let mut config = Config::new(client, vec![package]);
    config.namespace = NS.into();
    config.now = clock.as_fn();
    config.poll_ms = 50;
    if sharded {
        let mut settings = sharding::settings("fences", 2, 1, "a");
        settings.lease.retry_period_ms = 50;
        assert_eq!(settings.lease.lease_duration_ms, LEASE_MS);
        config.sharding = Some(settings);
    }
    let runtime = start(blue_kubernetes::controller(config).unwrap()).unwrap();
    Replica {
        runtime,
        clock,
        cut,
    }
}

/// Waits (wall clock, bounded) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "not within 20 s: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn secret_has(cluster: &FakeCluster, key: &str) -> bool {
    let path = format!("/api/v1/namespaces/{NS}/secrets/db-connection");
    cluster
        .get_object(&path)
        .is_some_and(|s| s["data"].get(key).is_some())
}

async fn late_write_after_the_shard_lease_expired(from: From) {
    let system = format!("fences-{}", SYSTEMS.fetch_add(1, Ordering::Relaxed));
    let cluster = FakeCluster::new();
    let late = Arc::new(Late::default());
    let (waiting_tx, waiting) = mpsc::channel();
    let (go, go_rx) = oneshot::channel();
    *lock(&late.waiting) = Some(waiting_tx);
    *lock(&late.go) = Some(go_rx);
    let r = replica(&cluster, package(system, from, late.clone()), true);
    until("the replica holds both shards", || {
        r.runtime.shards_owned().len() == 2
    })
    .await;
    cluster.create(&widgets(), NS, "db", spec(json!(1)));
    until("the late writer waits", || waiting.try_recv().is_ok()).await;
    assert!(secret_has(&cluster, "password"), "written under the fence");

    // The replica can no longer renew, and its Leases run out.
    r.cut.0.store(true, Ordering::SeqCst);
    r.clock.advance(LEASE_MS + 1);
    go.send(()).unwrap();
    until("the late write returns", || lock(&late.result).is_some()).await;

    let result = lock(&late.result).take().unwrap();
    assert_eq!(result, Err(ConnectionError::Fenced), "{from:?}");
    assert!(
        !secret_has(&cluster, "late"),
        "{from:?}: the write was sent"
    );
    r.cut.0.store(false, Ordering::SeqCst);
    r.runtime.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_write_from_a_spawned_task_after_the_shard_moved_is_refused() {
    late_write_after_the_shard_lease_expired(From::SpawnedTask).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_write_from_a_blocking_callback_after_the_shard_moved_is_refused() {
    late_write_after_the_shard_lease_expired(From::BlockingCallback).await;
}

/// The requests a resource's way to Ready costs, Lease calls aside.
async fn requests_to_ready(sharded: bool) -> Vec<Operation> {
    let system = format!("fences-{}", SYSTEMS.fetch_add(1, Ordering::Relaxed));
    let cluster = FakeCluster::new();
    let late = Arc::new(Late::default());
    let (go, go_rx) = oneshot::channel();
    *lock(&late.go) = Some(go_rx);
    // The write happens at once, with the fence held.
    go.send(()).unwrap();
    let r = replica(
        &cluster,
        package(system, From::BlockingCallback, late.clone()),
        sharded,
    );
    // Started alike: listed, watching and (sharded) holding every shard,
    // so both resources take the same path.
    let health = r.runtime.health();
    until("the replica is ready", || {
        health.is_ready() && (!sharded || r.runtime.shards_owned().len() == 2)
    })
    .await;
    cluster.reset_calls();
    cluster.create(&widgets(), NS, "db", spec(json!(1)));
    until("db is Ready", || {
        cluster.get(&widgets(), NS, "db").unwrap()["status"]["phase"] == "Ready"
    })
    .await;
    r.runtime.stop().await;
    assert_eq!(lock(&late.result).take(), Some(Ok(())));
    // Up to the write that made it Ready: the Secret's own watch event
    // may queue another check before the runtime stops.
    let mut status_writes = 0;
    cluster
        .call_log()
        .into_iter()
        .map(|c| c.operation)
        .take_while(|op| {
            let before_ready = status_writes < 2;
            status_writes += usize::from(*op == Operation::UpdateStatus);
            before_ready
        })
        .filter(|op| {
            matches!(
                op,
                Operation::UpdateStatus
                    | Operation::UpdateFinalizers
                    | Operation::RawGet
                    | Operation::RawCreate
                    | Operation::RawReplace
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_with_the_fence_held_costs_the_requests_it_costs_unfenced() {
    let fenced = requests_to_ready(true).await;
    let unfenced = requests_to_ready(false).await;
    assert!(fenced.contains(&Operation::RawCreate), "{fenced:?}");
    assert_eq!(fenced.last(), Some(&Operation::UpdateStatus), "{fenced:?}");
    assert_eq!(fenced, unfenced, "fenced {fenced:?}, unfenced {unfenced:?}");
}
