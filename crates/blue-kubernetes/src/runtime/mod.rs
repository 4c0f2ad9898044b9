//! The polling runtime: a poller per `poll_ms`, a coalescing queue and a
//! fixed pool of workers.

mod backoff;
mod election;
mod failure_log;
mod health;
mod outcome;
mod queue;
mod stats;

pub use health::{Health, STALE_POLLS};
pub use stats::Stats;

use crate::reconcile::{reconcile_snapshot, Report};
use crate::resource;
use crate::resource::status_str;
use crate::telemetry::QUEUE_NAME;
use crate::{Controller, Error, Phase};
use backoff::{ListBackoff, WriteBackoff};
use failure_log::{Failure, FailureLog};
use futures::FutureExt;
use queue::WorkQueue;
use stats::Counters;
use std::collections::{BTreeMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A started controller. Dropping it without [`Runtime::stop`] leaves the
/// tasks running until the tokio runtime shuts down.
pub struct Runtime {
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    election: Option<election::Election>,
}

struct Shared {
    controller: Controller,
    queue: WorkQueue,
    counters: Counters,
    health: Arc<Health>,
    /// Failures that repeat, logged once per change of state.
    failures: FailureLog,
    /// Resources whose passes could not write, waiting before the next try.
    backoff: WriteBackoff,
    /// Package types whose lists fail, waiting before the next list.
    list_backoff: ListBackoff,
    /// Set with leader election: dispatch only while it allows.
    gate: Option<Arc<crate::leader::Gate>>,
}

impl Shared {
    fn may_dispatch(&self) -> bool {
        let now = self.controller.now();
        self.gate.as_ref().is_none_or(|g| g.may_dispatch(now))
    }
}

/// Starts polling and workers. Must be called inside a running tokio runtime.
///
/// With [`Config::leader_election`](crate::Config::leader_election) set, an
/// elector runs alongside: only while this process holds the Lease does the
/// poller list and the workers reconcile, and status and finalizer writes
/// are refused once the lease can no longer be proven held.
///
/// ```no_run
/// # async fn demo(controller: blue_kubernetes::Controller) -> Result<(), blue_kubernetes::Error> {
/// let runtime = blue_kubernetes::start(controller)?;
/// // ... until SIGTERM ...
/// runtime.stop().await;
/// # Ok(()) }
/// ```
pub fn start(controller: Controller) -> Result<Runtime, Error> {
    let handle = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
    let workers = controller.config.workers;
    let (controller, election) = election::begin(controller, &handle)?;
    let config = &controller.config;
    let health = Health::new(config.now.clone(), config.poll_ms, config.packages.len());
    let backoff = WriteBackoff::new(&config.names.request_annotation);
    let shared = Arc::new(Shared {
        controller,
        queue: WorkQueue::default(),
        counters: Counters::default(),
        health: Arc::new(health),
        failures: FailureLog::default(),
        backoff,
        list_backoff: ListBackoff::default(),
        gate: election.as_ref().map(|e| e.gate.clone()),
    });
    let (shutdown, stopped) = watch::channel(false);
    let mut tasks = vec![handle.spawn(poll_loop(shared.clone(), stopped))];
    tasks.extend((0..workers).map(|_| handle.spawn(work_loop(shared.clone()))));
    Ok(Runtime {
        shared,
        shutdown,
        tasks,
        election,
    })
}

/// Same as [`Runtime::stop`].
pub async fn stop(runtime: Runtime) {
    runtime.stop().await
}

impl Runtime {
    /// Drains: no new work, queued work dropped, active reconciles (and their
    /// callbacks) awaited to completion. Nothing is cancelled. With leader
    /// election, the lease is renewed while draining and released after.
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        self.shared.queue.close();
        for task in self.tasks {
            let _ = task.await;
        }
        if let Some(election) = self.election {
            election.end().await;
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        let mut stats = self.shared.counters.snapshot();
        (stats.callback_failures, stats.invalid) = self.shared.controller.telemetry.counts();
        if let Some(election) = &self.election {
            election.fill(&mut stats);
        }
        stats
    }

    /// Liveness and readiness, for `/healthz` and `/readyz`.
    pub fn health(&self) -> Arc<Health> {
        self.shared.health.clone()
    }

    /// The controller this runtime runs (e.g. for its [`metrics`](Controller::metrics)).
    pub fn controller(&self) -> &Controller {
        &self.shared.controller
    }

    /// Whether this process may dispatch work now: always without leader
    /// election, else while it holds the Lease within its renew deadline.
    pub fn is_leader(&self) -> bool {
        self.shared.may_dispatch()
    }

    /// Resources waiting in the queue (not counting running ones).
    pub fn queued(&self) -> usize {
        self.shared.queue.len()
    }
}

async fn poll_loop(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let period = Duration::from_millis(shared.controller.config.poll_ms);
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => match shared.may_dispatch() {
                true => poll_once(&shared).await,
                false => shared.health.standing_by(),
            },
            _ = stopped.changed() => return,
        }
        if *stopped.borrow() {
            return;
        }
    }
}

/// One cycle: one list per package type; due-ness decided from the listed
/// snapshots so an idle cycle costs nothing more.
async fn poll_once(shared: &Shared) {
    let config = &shared.controller.config;
    for (index, package) in config.packages.iter().enumerate() {
        let descriptor = package.descriptor();
        if shared.list_backoff.waiting(index, shared.controller.now()) {
            continue;
        }
        let subject = format!("list {}", descriptor.qualified_plural());
        let list = config.client.list_resources(descriptor, &config.namespace);
        match shared.failures.answered(&subject, "get", list).await {
            Err(e) => {
                // The error is text-free by construction; logged by class.
                shared.failures.failed(&subject, Failure::of(&e));
                shared.list_backoff.failed(
                    index,
                    shared.controller.now(),
                    config.retry_base_ms,
                    config.retry_max_ms,
                );
                shared.counters.update(|s| {
                    *s.transport_failures
                        .entry(descriptor.qualified_plural())
                        .or_default() += 1;
                });
            }
            Ok(items) => {
                shared.failures.succeeded(&subject);
                shared.list_backoff.succeeded(index);
                shared.health.listed(index);
                count_phases(shared, &descriptor.qualified_plural(), &items);
                let now = shared.controller.now();
                let mut listed = HashSet::with_capacity(items.len());
                for item in &items {
                    let key = (
                        index,
                        resource::namespace(item).to_string(),
                        resource::name(item).to_string(),
                    );
                    listed.insert(key.clone());
                    if shared.controller.is_due(item) && !shared.backoff.waiting(item, now) {
                        shared.queue.push(key, item.clone());
                    }
                }
                shared.queue.retain_listed(index, &listed);
                let uids = items.iter().filter_map(resource::uid).collect();
                shared.backoff.retain_listed(index, &uids);
                let subjects: HashSet<String> =
                    listed.iter().map(|k| outcome::subject(shared, k)).collect();
                let prefix = format!("{} ", descriptor.qualified_plural());
                shared
                    .failures
                    .retain(|s| !s.starts_with(&prefix) || subjects.contains(s));
            }
        }
    }
    shared.counters.update(|s| s.polls += 1);
    shared.health.poll_completed();
    let metrics = &shared.controller.telemetry.metrics;
    metrics.polls.inc();
    set_queue_depth(shared);
}

/// `blue_resources{controller, phase}`: the listed resources per phase.
fn count_phases(shared: &Shared, controller: &str, items: &[serde_json::Value]) {
    let mut counts: BTreeMap<&str, i64> = Phase::ALL.iter().map(|p| (p.as_str(), 0)).collect();
    counts.insert("None", 0);
    for item in items {
        let phase = status_str(item, "phase").unwrap_or("None");
        // Unknown text in status is not ours to export as a label.
        if let Some(n) = counts.get_mut(phase) {
            *n += 1;
        }
    }
    let phases = &shared.controller.telemetry.metrics.phases;
    for (phase, n) in counts {
        phases
            .get_or_create(&[("controller", controller.into()), ("phase", phase.into())])
            .set(n);
    }
}

fn set_queue_depth(shared: &Shared) {
    let depth = i64::try_from(shared.queue.len()).unwrap_or(i64::MAX);
    shared
        .controller
        .telemetry
        .metrics
        .queue_depth
        .get_or_create(&[("name", QUEUE_NAME.into())])
        .set(depth);
}

async fn work_loop(shared: Arc<Shared>) {
    let metrics = shared.controller.telemetry.metrics.clone();
    while let Some((key, snapshot)) = shared.queue.pop().await {
        set_queue_depth(&shared);
        if !shared.may_dispatch() {
            shared.queue.done(&key, None);
            continue;
        }
        let package = &shared.controller.config.packages[key.0];
        let label = [("controller", package.descriptor().qualified_plural())];
        metrics.active_workers.get_or_create(&label).inc();
        let started = tokio::time::Instant::now();
        let listed_at = snapshot
            .pointer("/metadata/resourceVersion")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string);
        let metadata = serde_json::json!({ "metadata": snapshot.get("metadata") });
        // A bug anywhere in a pass must cost one attempt, not a worker.
        let result = AssertUnwindSafe(reconcile_snapshot(&shared.controller, package, snapshot))
            .catch_unwind()
            .await;
        outcome::record(&shared, &key, &metadata, &result);
        metrics.active_workers.get_or_create(&label).dec();
        metrics
            .reconcile_time
            .get_or_create(&label)
            .observe(started.elapsed().as_secs_f64());
        let outcome = match &result {
            Ok(Ok(Report::Reconciled(Phase::Failed, _))) | Ok(Err(_)) | Err(_) => "error",
            Ok(Ok(Report::Reconciled(..) | Report::Released)) => "success",
            Ok(Ok(Report::Conflict)) => "conflict",
            Ok(Ok(Report::Busy)) => "busy",
            Ok(Ok(_)) => "skipped",
        };
        if outcome == "error" {
            metrics.reconcile_errors.get_or_create(&label).inc();
        }
        let [(_, controller)] = &label;
        metrics
            .reconciles
            .get_or_create(&[
                ("controller", controller.clone()),
                ("result", outcome.into()),
            ])
            .inc();
        // Only a successful write guarantees the listed version is stale.
        let wrote = matches!(result, Ok(Ok(Report::Reconciled(..) | Report::Released)));
        shared.counters.update(|s| match result {
            Ok(Ok(report)) => {
                s.reconciles += 1;
                match report {
                    Report::Busy => s.busy += 1,
                    Report::Conflict => s.conflicts += 1,
                    Report::Reconciled(Phase::Failed, _) => s.failed += 1,
                    _ => {}
                }
            }
            Ok(Err(_)) | Err(_) => s.reconcile_errors += 1,
        });
        shared.queue.done(&key, listed_at.filter(|_| wrote));
    }
}
