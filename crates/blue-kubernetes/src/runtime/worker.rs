//! A worker: takes the next resource from the queue, acts on the book's
//! copy of it (read instead when there is none: after a start until the
//! first list, after a watch gap until the relist, with the per-call
//! transport), runs one pass on it, and hands the outcome to the
//! dispatcher: one read at most per pass (a second from etcd when the
//! server's watch cache lacks the object), none on a continuous watch. A
//! bug anywhere in a pass costs one attempt, not the worker.

use super::book::protocol::Ended;
use super::dispatch::{pass_began, pass_ended, set_queue_depth};
use super::queue::Work;
use super::Shared;
use crate::reconcile::{prepare, run_locked, PassOutcome, Report, Request, Terms};
use crate::telemetry::failure_log::Failure;
use crate::telemetry::Verdict;
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

pub(super) async fn work_loop(shared: Arc<Shared>) {
    while let Some(work) = shared.queue.pop().await {
        set_queue_depth(&shared);
        if !shared.may_dispatch() {
            shared.queue.done(&work.key);
            continue;
        }
        // Taken before the read: a request for a resource found gone is
        // done with (its deletion event follows), and one that could not
        // be read stands, behind the read's backoff.
        let (requested, copy) = pass_began(&shared, &work.key);
        let ended = match copy {
            Some(snapshot) => pass(&shared, &work, snapshot, requested, true).await,
            None => match read(&shared, &work).await {
                Ok(snapshot) => pass(&shared, &work, snapshot, requested, false).await,
                Err(verdict) => Ended {
                    unserved_request: match verdict {
                        Verdict::Broke(_) => requested,
                        _ => Request::None,
                    },
                    verdict,
                    started_from: None,
                    written: None,
                    next_check: None,
                    not_owned: None,
                    released: false,
                },
            },
        };
        shared.queue.done(&work.key);
        pass_ended(&shared, &work, ended);
    }
}

/// Reads the object the book has no copy of. `Err` when there is
/// nothing to reconcile now: gone (its deletion event follows), or
/// unreadable (backed off like a failed write).
async fn read(shared: &Shared, work: &Work) -> Result<serde_json::Value, Verdict> {
    let key = &work.key;
    let descriptor = shared.controller.config.packages[key.package()].descriptor();
    let client = &shared.controller.config.client;
    // From the API server's watch cache: a stale answer is as safe as a
    // delivered snapshot (every write carries its resourceVersion, so a
    // stale one loses its first write before any effect) and costs the
    // server no etcd read per periodic check.
    let (namespace, name) = (key.namespace(), key.name());
    let read = match client
        .get_resource_cached(descriptor, namespace, name)
        .await
    {
        // The watch cache lags etcd by a few milliseconds, so a resource
        // a consistent list just showed can be missing from it: only
        // etcd can say it is gone (else it would wait for the next list).
        Ok(None) => client.get_resource(descriptor, namespace, name).await,
        read => read,
    };
    match read {
        Ok(Some(object)) => Ok(object),
        Ok(None) => Err(Verdict::Skipped),
        Err(e) => {
            let failure = Failure::of(&e);
            let failures = &shared.controller.memory.failures;
            failures.failed(&shared.subject(key), failure.clone());
            shared.counters.read_failed();
            Err(Verdict::Broke(failure))
        }
    }
}

/// One pass over `snapshot`, measured and recorded; returns what
/// the book needs.
async fn pass(
    shared: &Shared,
    work: &Work,
    snapshot: serde_json::Value,
    requested: Request,
    copy: bool,
) -> Ended {
    let metrics = shared.controller.telemetry.metrics.clone();
    let package = &shared.controller.config.packages[work.key.package()];
    let label = [("controller", package.descriptor().qualified_plural())];
    metrics.active_workers.get_or_create(&label).inc();
    let started = tokio::time::Instant::now();
    let metadata = serde_json::json!({ "metadata": snapshot.get("metadata") });
    let controller = &shared.controller;
    // The snapshot is the freshest at hand (the watch's copy, or read
    // just before): acting on it is as safe as a re-read, since
    // every write carries its resourceVersion (against a newer one the
    // first write fails with Conflict, before any effect). The next check
    // is kept in memory, so a check may be quiet.
    let run = async {
        // The book applied the due rule to the version it queued: a copy
        // of that version is not judged again, a newer or re-read one is.
        let version = snapshot.pointer("/metadata/resourceVersion");
        let judged = copy && version.and_then(serde_json::Value::as_str) == Some(&work.version);
        let due = requested.any() || judged;
        let prepared = match prepare(controller, package, snapshot, due).await {
            Ok(Some(prepared)) => prepared,
            Ok(None) => return PassOutcome::unwritten(Ok(Report::NotDue)),
            Err(e) => return PassOutcome::unwritten(Err(e)),
        };
        // With sharding, only the holder of the identity's shard goes on
        // (`identity` is side-effect free: having called it costs nothing),
        // under that shard's lease; else under the leader's, if any.
        let permit = match &controller.shards {
            Some(table) => {
                let shard = crate::sharding::shard_of(prepared.identity(), table.shards());
                match table.admit(shard, controller.now()) {
                    Some(permit) => Some(permit),
                    None => return PassOutcome::unwritten(Ok(Report::NotOwned { shard })),
                }
            }
            None => None,
        };
        let terms = Terms {
            may_be_quiet: true,
            expects_effect: requested == Request::Repair,
            ..match &permit {
                Some(permit) => Terms::under(controller, Some(&permit.gate), permit.token),
                None => Terms::leader(controller),
            }
        };
        // The permit goes after the lock: a drain that sees the shard idle
        // sees the identity free as well.
        run_locked(prepared, terms).await
    };
    // A bug anywhere in a pass must cost one attempt, not a worker.
    let caught = AssertUnwindSafe(run).catch_unwind().await;
    let (result, written, next_check) = match caught {
        Ok(PassOutcome {
            report,
            written,
            next_check,
        }) => (Ok(report), written, next_check),
        Err(panic) => (Err(panic), None, None),
    };
    if let Ok(Ok(report)) = &result {
        tracing::debug!(subject = %shared.subject(&work.key), ?report, "reconciled");
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
    let released = matches!(&result, Ok(Ok(Report::Released)));
    let verdict = Verdict::of(&result);
    let (subject, failures) = (shared.subject(&work.key), &controller.memory.failures);
    match &verdict {
        Verdict::Wrote | Verdict::WroteFailed => drop(failures.succeeded(&subject)),
        // Nothing could be recorded in status: the book backs it off.
        Verdict::Broke(failure) => drop(failures.failed(&subject, failure.clone())),
        _ => {}
    }
    metrics.active_workers.get_or_create(&label).dec();
    metrics
        .reconcile_time
        .get_or_create(&label)
        .observe(started.elapsed().as_secs_f64());
    let [(_, controller)] = &label;
    shared.counters.pass_ended(controller, &verdict);
    Ended {
        verdict,
        started_from: Some(metadata),
        written,
        next_check,
        unserved_request,
        not_owned,
        released,
    }
}
