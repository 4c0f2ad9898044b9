//! One reconcile of one resource. Its callers (the one-shot [`reconcile`]
//! and `Controller::reconcile_now`, and the runtime's worker) prepare a
//! pass the same way (`prepare`: the due check, options, `plan`,
//! identity), then decide what is theirs to decide (shard admission, the
//! lease the writes are fenced by, the identity lock, a second look), and
//! the `driver` advances the `pass` by the `decision`: the ordered rules (the crate README,
//! "One pass, in order") without I/O.

pub(crate) mod awaited;
mod decision;
mod driver;
mod pass;
mod plan;
mod prepare;
mod protocol;
mod references;
mod reporting;
mod steps;
mod workflow;

pub(crate) use driver::run_locked;
pub(crate) use prepare::prepare;
pub(crate) use prepare::Terms;
pub use protocol::Report;
pub(crate) use protocol::{PassOutcome, Request};

use crate::domain::resource::uid;
use crate::telemetry::log::{self, Subject};
use crate::{package::erased::Package, Controller, Error};

/// Reconciles `namespace/name` of `package`'s type now if it is due, with
/// the same locks and rules as the polling runtime
/// ([`Controller::reconcile_now`] runs a pass whether it is due or not).
///
/// Reads the resource, then proceeds only if it is due. A write that loses
/// an optimistic-concurrency race is [`Report::Conflict`]; every other
/// transport failure (reads included) is an [`Error::Transport`].
///
/// ```no_run
/// # async fn demo(controller: blue_kubernetes::Controller, package: blue_kubernetes::Package) {
/// use blue_kubernetes::{reconcile, resource::Phase, Report};
/// match reconcile(&controller, &package, "default", "web").await {
///     Ok(Report::Reconciled(Phase::Ready, _)) => println!("ready"),
///     Ok(other) => println!("{other:?}"),
///     Err(e) => eprintln!("{e}"),
/// }
/// # }
/// ```
pub async fn reconcile(
    controller: &Controller,
    package: &Package,
    namespace: &str,
    name: &str,
) -> Result<Report, Error> {
    one_shot(controller, package, namespace, name, false).await
}

// The controller's own one-shot pass lives here, with the pass it runs.
impl Controller {
    /// Reconciles `namespace/name` now as if its next check were due,
    /// whether it is or not: what [`Runtime::trigger`](crate::Runtime::trigger)
    /// asks of a running controller, for a controller without a runtime
    /// (tests, tools). Same locks and rules as
    /// [`reconcile`]; a resource whose infrastructure
    /// matches is observed and, its status unchanged but for its
    /// schedule, written once (a one-shot pass keeps no schedule in
    /// memory).
    ///
    /// ```no_run
    /// # async fn demo(controller: blue_kubernetes::Controller, package: blue_kubernetes::Package) {
    /// use blue_kubernetes::{resource::Phase, Report};
    /// // The infrastructure changed behind the controller's back: look now.
    /// let report = controller.reconcile_now(&package, "default", "web").await;
    /// assert!(matches!(report, Ok(Report::Reconciled(Phase::Ready, _))));
    /// # }
    /// ```
    pub async fn reconcile_now(
        &self,
        package: &Package,
        namespace: &str,
        name: &str,
    ) -> Result<Report, Error> {
        one_shot(self, package, namespace, name, true).await
    }
}

pub(crate) async fn one_shot(
    controller: &Controller,
    package: &Package,
    namespace: &str,
    name: &str,
    asked: bool,
) -> Result<Report, Error> {
    let report = read_twice(controller, package, namespace, name, asked).await;
    // The runtime's passes leave their Events to the background writer; a
    // direct call returns with its Events written.
    if let Some(events) = &controller.telemetry.events {
        events.flush().await;
    }
    report
}

/// A one-shot pass. The object is read before the identity lock is taken,
/// so it is read again under the lock, and the pass runs on the fresh
/// object only if that prepares the same pass (same object, plan and
/// identity); otherwise the next poll starts over. With no schedule kept
/// anywhere but in status, every check writes.
async fn read_twice(
    controller: &Controller,
    package: &Package,
    namespace: &str,
    name: &str,
    asked: bool,
) -> Result<Report, Error> {
    let read = || {
        let client = &controller.config.client;
        client.get_resource(package.descriptor(), namespace, name)
    };
    let Some(listed) = read().await? else {
        return Ok(Report::NotFound);
    };
    let Some(listed) = prepare(controller, package, listed, asked).await? else {
        return Ok(Report::NotDue);
    };
    let terms = Terms::leader(controller);
    let Some(_lock) = listed.lock() else {
        return Ok(Report::Busy);
    };
    let Some(fresh) = read().await? else {
        return Ok(Report::NotFound);
    };
    if uid(&fresh) != uid(&listed.snapshot) {
        return Ok(Report::Changed);
    }
    let Some(fresh) = prepare(controller, package, fresh, asked).await? else {
        return Ok(Report::NotDue);
    };
    let plans = [&fresh.given.plan, &listed.given.plan].map(std::mem::discriminant);
    if plans[0] != plans[1] {
        return Ok(Report::Changed);
    }
    if fresh.given.identity != listed.given.identity {
        if let Some((callback, failure)) = &listed.failure {
            // No status records this attempt; the next poll retries.
            let attempt = fresh.snapshot["status"]["retryCount"].as_u64().unwrap_or(0) + 1;
            let call = failure.logged(callback, attempt, "next poll");
            let subject = Subject {
                descriptor: package.descriptor(),
                object: &fresh.snapshot,
            };
            log::callback_failed(subject, &call, controller.telemetry.log_callback_errors);
        }
        return Ok(Report::Changed);
    }
    let fresh_uid = uid(&fresh.snapshot).unwrap_or_default().to_string();
    let report = driver::run(fresh, terms).await.report;
    // Without a book, the release is the one event that forgets it.
    if matches!(report, Ok(Report::Released)) {
        let subject = crate::memory::subject(package.descriptor(), namespace, name);
        controller.memory.forget(&fresh_uid, &subject);
    }
    report
}
