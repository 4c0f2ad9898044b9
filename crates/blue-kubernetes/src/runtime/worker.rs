//! A worker: takes the next resource from the queue, reads it if the
//! queue did not keep the object its watch event delivered (a timer fired,
//! a list found it due, or the queue was long), runs one pass on it, and
//! hands the outcome to the dispatcher. Either way the pass acts on that
//! object without reading it again: one read at most per pass. A bug anywhere in a pass costs one attempt, not the
//! worker.

use super::dispatch::{after_pass, set_queue_depth, take_request, Ended};
use super::failure_log::Failure;
use super::outcome::{self, Verdict};
use super::queue::Work;
use super::Shared;
use crate::reconcile::{reconcile_snapshot, Origin, PassOutcome, Report, Request};
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

pub(super) async fn work_loop(shared: Arc<Shared>) {
    while let Some(mut work) = shared.queue.pop().await {
        set_queue_depth(&shared);
        if !shared.may_dispatch() {
            shared.queue.done(&work.key);
            continue;
        }
        // Taken before the read: a request for a resource found gone is
        // done with (its deletion event follows), and one that could not
        // be read stands, behind the read's backoff.
        let requested = take_request(&shared, &work.key);
        let snapshot = match work.snapshot.take() {
            Some(snapshot) => snapshot,
            None => match read(&shared, &work).await {
                Ok(snapshot) => snapshot,
                Err(hold) => {
                    shared.queue.done(&work.key);
                    let ended = Ended {
                        unserved_request: hold.map_or(Request::None, |_| requested),
                        hold,
                        ..Ended::default()
                    };
                    after_pass(&shared, &work, ended);
                    continue;
                }
            },
        };
        let ended = pass(&shared, &work, snapshot, requested).await;
        shared.queue.done(&work.key);
        after_pass(&shared, &work, ended);
    }
}

/// Reads the object a timer (or a list) queued. `Err(hold)` when there is nothing
/// to reconcile now: gone (its deletion event follows), or unreadable
/// (backed off like a failed write).
async fn read(shared: &Shared, work: &Work) -> Result<serde_json::Value, Option<u64>> {
    let key = &work.key;
    let descriptor = shared.controller.config.packages[key.package()].descriptor();
    let client = &shared.controller.config.client;
    // From the API server's watch cache: a stale answer is as safe as a
    // delivered snapshot (every write carries its resourceVersion, so a
    // stale one loses its first write before any effect) and costs the
    // server no etcd read per periodic check.
    match client
        .get_resource_cached(descriptor, key.namespace(), key.name())
        .await
    {
        Ok(Some(object)) => Ok(object),
        Ok(None) => Err(None),
        Err(e) => {
            let subject = outcome::subject(shared, &work.key);
            shared.failures.failed(&subject, Failure::of(&e));
            shared.counters.read_failed();
            let uid = super::dispatch::uid_of(shared, &work.key);
            let config = &shared.controller.config;
            let now = shared.controller.now();
            let delay = match uid {
                Some(uid) => {
                    shared
                        .backoff
                        .failed_read(&uid, now, config.retry_base_ms, config.retry_max_ms)
                }
                None => config.retry_base_ms,
            };
            Err(Some(now.saturating_add(delay)))
        }
    }
}

/// One pass over `snapshot`, measured and recorded; returns what
/// [`after_pass`] needs.
async fn pass(
    shared: &Shared,
    work: &Work,
    snapshot: serde_json::Value,
    requested: Request,
) -> Ended {
    let metrics = shared.controller.telemetry.metrics.clone();
    let package = &shared.controller.config.packages[work.key.package()];
    let label = [("controller", package.descriptor().qualified_plural())];
    metrics.active_workers.get_or_create(&label).inc();
    let started = tokio::time::Instant::now();
    let metadata = serde_json::json!({ "metadata": snapshot.get("metadata") });
    // A bug anywhere in a pass must cost one attempt, not a worker.
    let caught = AssertUnwindSafe(reconcile_snapshot(
        &shared.controller,
        package,
        snapshot,
        Origin::Runtime,
        requested,
    ))
    .catch_unwind()
    .await;
    let (result, written, next_check) = match caught {
        Ok(PassOutcome {
            report,
            written,
            next_check,
        }) => (Ok(report), written, next_check),
        Err(panic) => (Err(panic), None, None),
    };
    if let Ok(Ok(report)) = &result {
        tracing::debug!(subject = %outcome::subject(shared, &work.key), ?report, "reconciled");
    }
    let not_owned = match &result {
        Ok(Ok(Report::NotOwned { shard })) => Some(*shard),
        _ => None,
    };
    // Only a pass that reached a verdict (or found the resource gone)
    // looked; a busy lock, a lost race or an unreachable cluster did not.
    // A request to a replica not holding the shard is the holder's to
    // serve (it saw the same news).
    let served = not_owned.is_some()
        || matches!(
            &result,
            Ok(Ok(Report::Reconciled(..)
                | Report::Released
                | Report::NotFound))
        );
    let unserved_request = if served { Request::None } else { requested };
    let verdict = Verdict::of(&result);
    let hold = outcome::settle(shared, &work.key, &metadata, &verdict);
    metrics.active_workers.get_or_create(&label).dec();
    metrics
        .reconcile_time
        .get_or_create(&label)
        .observe(started.elapsed().as_secs_f64());
    let [(_, controller)] = &label;
    shared.counters.pass_ended(controller, &verdict);
    Ended {
        hold,
        written,
        next_check,
        unserved_request,
        not_owned,
    }
}
