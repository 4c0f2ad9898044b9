//! One reconcile of one resource: the due check, the identity lock, the
//! snapshot (read again under the lock for a one-shot pass), then the
//! ordered rules in [`rules`] (the crate README, "One pass, in order").

mod act;
mod connection;
mod external_name;
mod import;
mod pass;
mod references;
mod reporting;
mod rules;
mod steps;

use crate::domain::resource::{self, uid};
use crate::leader::Fence;
use crate::lock::{LockGuard, LockKey};
use crate::typed::options_for;
use crate::{Controller, Error, Options, Package, Phase, Reason};
use references::Resolution;
use serde_json::Value;

/// Why a pass runs early: asked for in memory, not by the due rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Request {
    /// Not asked for: the due rules decide.
    #[default]
    None,
    /// Look now, as if the next check were due (a related object changed,
    /// a referenced resource, a trigger).
    Check,
    /// A related object was deleted: an effect is likely, so Reconciling
    /// is published while observing, as for an edit (one round trip
    /// sooner). A check that then finds everything in place writes Ready
    /// again: two status writes instead of none, for a rare event.
    Repair,
}

impl Request {
    /// Whether an early check was asked for at all.
    pub(crate) fn any(self) -> bool {
        self != Request::None
    }
}

/// What one reconcile did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Report {
    /// The resource does not exist.
    NotFound,
    /// The resource is not due; nothing was read or written.
    NotDue,
    /// Another reconcile holds the identity lock (in this process, or in
    /// the controller's own [`LockDomain`](crate::LockDomain)); nothing was done.
    Busy,
    /// Between the list and the re-read the object was replaced or its
    /// identity changed; the next poll starts over.
    Changed,
    /// A write lost an optimistic-concurrency race; no further effect ran and
    /// the next pass rereads.
    Conflict,
    /// Our finalizer was removed (or was already absent) from a deleting
    /// resource; for Destroy only after absence was observed.
    Released,
    /// Status records this phase and reason: written by this pass, or,
    /// for a quiet periodic check, already stored and left alone because
    /// only its schedule would have changed.
    Reconciled(Phase, Reason),
    /// With [`Config::sharding`](crate::Config::sharding): this replica
    /// does not hold the Lease of the resource's shard (or is giving it
    /// up), so it ran nothing past the `identity` callback; the replica
    /// holding it handles the resource.
    NotOwned {
        /// The resource's shard.
        shard: u32,
    },
}

/// How one pass ended, for the runtime.
#[derive(Debug)]
pub(crate) struct PassOutcome {
    pub(crate) report: Result<Report, Error>,
    /// The resourceVersion of the pass's last successful write, so the
    /// runtime can tell its own intermediate writes from news.
    pub(crate) written: Option<String>,
    /// The next check the pass decided, whether it wrote it to
    /// `nextReconcileTime` or (a quiet check) not.
    pub(crate) next_check: Option<u64>,
}

impl PassOutcome {
    fn unwritten(report: Result<Report, Error>) -> Self {
        Self {
            report,
            written: None,
            next_check: None,
        }
    }
}

/// Where the checks before the rules leave a pass.
// Returned once and taken apart at once, never stored: boxing the pass
// would only add an allocation.
#[allow(clippy::large_enum_variant)]
enum Checked<'a> {
    /// Due, locked, with its snapshot: the rules run while the lock is held
    /// (and, with sharding, while the pass counts as running in its shard).
    Run(LockGuard, pass::Pass<'a>, Option<crate::sharding::Permit>),
    /// Nothing for the rules to do.
    Done(Report),
}

/// Reconciles `namespace/name` of `package`'s type now, with the same locks
/// and rules as the polling runtime.
///
/// Reads the resource, then proceeds only if it is due. A write that loses
/// an optimistic-concurrency race is [`Report::Conflict`]; every other
/// transport failure (reads included) is an [`Error::Transport`].
///
/// ```no_run
/// # async fn demo(controller: blue_kubernetes::Controller, package: blue_kubernetes::Package) {
/// use blue_kubernetes::{reconcile, Report, Phase};
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
    one_shot(controller, package, namespace, name, Request::None).await
}

/// Reconciles `namespace/name` now as if its next check were due: what
/// [`Runtime::trigger`](crate::Runtime::trigger) asks of a running
/// controller, for a controller without a runtime (tests, tools). Same
/// locks and rules as [`reconcile`]; a resource whose infrastructure
/// matches is observed and, its status unchanged but for its schedule,
/// written once (a one-shot pass keeps no schedule in memory).
///
/// ```no_run
/// # async fn demo(controller: blue_kubernetes::Controller, package: blue_kubernetes::Package) {
/// use blue_kubernetes::{trigger, Phase, Report};
/// // The infrastructure changed behind the controller's back: look now.
/// let report = trigger(&controller, &package, "default", "web").await;
/// assert!(matches!(report, Ok(Report::Reconciled(Phase::Ready, _))));
/// # }
/// ```
pub async fn trigger(
    controller: &Controller,
    package: &Package,
    namespace: &str,
    name: &str,
) -> Result<Report, Error> {
    one_shot(controller, package, namespace, name, Request::Check).await
}

async fn one_shot(
    controller: &Controller,
    package: &Package,
    namespace: &str,
    name: &str,
    requested: Request,
) -> Result<Report, Error> {
    let client = &controller.config.client;
    match client
        .get_resource(package.descriptor(), namespace, name)
        .await?
    {
        None => Ok(Report::NotFound),
        Some(snapshot) => {
            let origin = Origin::OneShot;
            let outcome =
                reconcile_snapshot(controller, package, snapshot, origin, requested).await;
            // The runtime's passes leave their Events to the background
            // writer; a direct call returns with its Events written.
            if let Some(events) = &controller.telemetry.events {
                events.flush().await;
            }
            outcome.report
        }
    }
}

/// Who runs a pass, which decides how fresh its object is and whether a
/// check may be quiet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The one-shot [`reconcile`]: the object was read before the lock was
    /// taken and is re-read under it, and, with no schedule kept anywhere
    /// but in status, every check writes (the reference behaviour).
    OneShot,
    /// The runtime: the object is the freshest at hand, delivered by the
    /// watch event that queued the pass or read by the worker just before.
    /// Acting on it is as safe as a re-read: every write carries its
    /// resourceVersion, so against a newer version the first write fails
    /// with Conflict and no effect runs, and `observe` is read-only. The
    /// runtime keeps each next check in memory, so a check may be quiet.
    Runtime,
}

/// Reconciles from a snapshot already read (listed, read or delivered by a
/// watch), so an idle resource costs no request of its own. `requested`:
/// an early check was asked for (a related object changed, a trigger), so
/// the resource is due whatever its status says.
pub(crate) async fn reconcile_snapshot(
    controller: &Controller,
    package: &Package,
    listed: Value,
    origin: Origin,
    requested: Request,
) -> PassOutcome {
    match check(controller, package, listed, origin, requested).await {
        Ok(Checked::Run(lock, pass, permit)) => {
            let outcome = pass.run().await;
            drop(lock);
            // Released after the lock: a drain that sees the shard idle
            // sees the identity free as well.
            drop(permit);
            outcome
        }
        Ok(Checked::Done(report)) => PassOutcome::unwritten(Ok(report)),
        Err(e) => PassOutcome::unwritten(Err(e)),
    }
}

/// The due check, the identity lock and, for a one-shot pass, the
/// re-read.
async fn check<'a>(
    controller: &'a Controller,
    package: &'a Package,
    listed: Value,
    origin: Origin,
    requested: Request,
) -> Result<Checked<'a>, Error> {
    let names = &controller.config.names;
    if !requested.any() && !controller.is_due(&listed) {
        return Ok(Checked::Done(Report::NotDue));
    }
    // Releasing a Retain finalizer runs no package code at all, not even
    // identity; the object lock keeps other workers off the object.
    let releasing = rules::releases_without_callbacks(&listed, names);
    // References are resolved before any callback (identity included).
    let resolution = resolve_references(controller, package, &listed, releasing).await?;
    let waits = resolution.as_ref().is_some_and(|r| r.blocks(&listed));
    let (listed_options, listed_config_error) = options_for(package, &listed, &controller.config);
    let (identity, listed_failure) = match releasing || waits {
        true => (None, None),
        false => match identify(controller, package, &listed_options).await {
            Ok(id) => (Some(id), None),
            Err(failure) => (None, Some(failure)),
        },
    };
    // With sharding, only the holder of the identity's shard goes on;
    // `identity` is side-effect free, so having called it costs nothing.
    let permit = match (&controller.shards, origin) {
        (Some(table), Origin::Runtime) => {
            let shard = crate::sharding::shard_of(identity.as_deref(), table.shards());
            match table.admit(shard, controller.now()) {
                Some(permit) => Some(permit),
                None => return Ok(Checked::Done(Report::NotOwned { shard })),
            }
        }
        _ => None,
    };
    let token = match &permit {
        Some(permit) => permit.token,
        None => controller
            .gate
            .as_ref()
            .and_then(|g| g.token(controller.now())),
    };
    let listed_options = listed_options.with_fencing_token(token);
    // The fence that holds now, carried by every write the pass makes or
    // hands out (its connection's included), from any task or thread.
    let gate = permit
        .as_ref()
        .map(|p| &p.gate)
        .or(controller.gate.as_ref());
    let fence = gate.map(|gate| Fence::pass(gate.clone(), controller.config.now.clone()));
    let key = match &identity {
        Some(id) => LockKey::Identity(id.clone()),
        None => LockKey::Object(object_key(package, &listed)),
    };
    let Some(lock) = controller.config.lock_domain.try_acquire(key) else {
        return Ok(Checked::Done(Report::Busy));
    };
    if origin == Origin::Runtime {
        let options = with_referenced(listed_options, &resolution);
        let mut pass = pass::Pass::new(controller, package, listed, options, identity, fence);
        pass.failure = listed_failure.map(|f| ("identity", f));
        pass.config_error = listed_config_error;
        pass.references = resolution;
        pass.may_be_quiet = true;
        pass.expects_effect = requested == Request::Repair;
        return Ok(Checked::Run(lock, pass, permit));
    }
    let descriptor = package.descriptor();
    let fresh = controller
        .config
        .client
        .get_resource(
            descriptor,
            resource::namespace(&listed),
            resource::name(&listed),
        )
        .await?;
    let Some(fresh) = fresh else {
        return Ok(Checked::Done(Report::NotFound));
    };
    if uid(&fresh) != uid(&listed) || rules::releases_without_callbacks(&fresh, names) != releasing
    {
        return Ok(Checked::Done(Report::Changed));
    }
    if !requested.any() && !controller.is_due(&fresh) {
        return Ok(Checked::Done(Report::NotDue));
    }
    let resolution = resolve_references(controller, package, &fresh, releasing).await?;
    if resolution.as_ref().is_some_and(|r| r.blocks(&fresh)) != waits {
        return Ok(Checked::Done(Report::Changed));
    }
    let (options, config_error) = options_for(package, &fresh, &controller.config);
    let options = with_referenced(options, &resolution).with_fencing_token(token);
    let mut failure = None;
    if !releasing && !waits {
        let now = match identify(controller, package, &options).await {
            Ok(id) => Some(id),
            Err(f) => {
                failure = Some(("identity", f));
                None
            }
        };
        if now != identity {
            if let Some(failure) = &listed_failure {
                // No status records this attempt; the next poll retries.
                reporting::log_unrecorded(controller, package, &fresh, "identity", failure);
            }
            return Ok(Checked::Done(Report::Changed));
        }
    }
    let mut pass = pass::Pass::new(controller, package, fresh, options, identity, fence);
    pass.failure = failure;
    pass.config_error = config_error;
    pass.references = resolution;
    Ok(Checked::Run(lock, pass, permit))
}

/// The references of `resource`, resolved, for a package that declares
/// any and a pass that will run callbacks.
async fn resolve_references(
    controller: &Controller,
    package: &Package,
    resource: &Value,
    releasing: bool,
) -> Result<Option<Resolution>, Error> {
    if releasing || package.schema().references.is_empty() {
        return Ok(None);
    }
    references::resolve(controller, package, resource)
        .await
        .map(Some)
}

/// The options with the outputs of the referenced resources that are Ready.
fn with_referenced(options: Options, resolution: &Option<Resolution>) -> Options {
    match resolution {
        Some(Resolution::Resolved(outputs) | Resolution::Waiting(outputs)) => {
            options.with_referenced(outputs.clone())
        }
        _ => options,
    }
}

async fn identify(
    controller: &Controller,
    package: &Package,
    options: &Options,
) -> Result<Vec<Option<String>>, crate::callback::Failure> {
    reporting::call(
        controller,
        package,
        "identity",
        |c, o| c.identity(o),
        options,
    )
    .await
}

fn object_key(package: &Package, r: &Value) -> String {
    format!(
        "{}/{}/{}/{}",
        package.descriptor().qualified_plural(),
        resource::namespace(r),
        resource::name(r),
        uid(r).unwrap_or_default()
    )
}
