//! Preparing a pass, the same way for every caller: the due check, the
//! options, the plan (what happens before any package code runs) and the
//! identity. What comes next is the caller's: with sharding, whether this
//! replica runs the identity's shard; the lease the writes are fenced by
//! ([`Terms`], with how its checks may go); the identity lock; for a
//! one-shot pass, a second look.

use super::plan::Plan;
use crate::domain::due::is_due;
use crate::domain::resource;
use crate::leader::{Fence, FencingToken, Gate};
use crate::lock::{LockGuard, LockKey};
use crate::package::callback::Failure;
use crate::package::callback::{self, Pick};
use crate::package::erased::Callbacks;
use crate::package::options::CallbackInput;
use crate::{package::erased::Package, Controller, Error};
use serde_json::Value;
use std::sync::Arc;

/// What the preparation gives a pass, fixed for the whole pass.
pub(super) struct Given<'a> {
    pub(super) controller: &'a Controller,
    pub(super) package: &'a Package,
    /// The package bound to the snapshot's config, decoded once.
    pub(super) callbacks: Arc<dyn Callbacks>,
    /// What the pass does before any package code runs.
    pub(super) plan: Plan,
    /// What `identity` returned (`None`: not called, or it failed).
    pub(super) identity: Option<Vec<Option<String>>>,
}

/// A pass prepared from one snapshot, not yet locked or under a lease.
pub(crate) struct Prepared<'a> {
    pub(super) given: Given<'a>,
    pub(super) snapshot: Value,
    /// With the referenced resources' outputs (the lease's token comes
    /// with the caller's terms).
    pub(super) options: CallbackInput,
    /// The failure of `identity`, if it failed.
    pub(super) failure: LastFailure,
}

/// The latest failure of a pass: the callback's name and what happened.
pub(super) type LastFailure = Option<(&'static str, Failure)>;

/// Prepares a pass over `snapshot`; `None`: it is not due. `due`: whether
/// it is due is known, so the due rule is not applied again: an early
/// check was asked for (a related object changed, a trigger), or the
/// runtime's book judged this very version due. Only a snapshot read
/// since is judged here.
pub(crate) async fn prepare<'a>(
    controller: &'a Controller,
    package: &'a Package,
    snapshot: Value,
    due: bool,
) -> Result<Option<Prepared<'a>>, Error> {
    let config = &controller.config;
    if !due
        && !is_due(
            &snapshot,
            controller.now(),
            &config.names,
            config.retry_max_ms,
        )
    {
        return Ok(None);
    }
    let options =
        CallbackInput::from_resource(&snapshot).with_env(config.now.clone(), config.names.clone());
    // Decoded here, once for the pass; why not (redacted) if it does not.
    let (callbacks, config_error) = package.bind(&options);
    let (plan, referenced) = Plan::of(controller, package, &snapshot, config_error).await?;
    // Before the references' outputs join the options: an identity must
    // not depend on them (they are gone while a referenced resource is
    // deleted, and a changed identity would hold this one's deletion).
    let identify: Pick<Vec<Option<String>>> = |c, o| c.identity(o);
    let (identity, failure) = match plan.runs_package_code() {
        false => (None, None),
        true => match callback::run(
            controller,
            package,
            &*callbacks,
            "identity",
            identify,
            &options,
        )
        .await
        {
            Ok(identity) => (Some(identity), None),
            Err(failure) => (None, Some(("identity", failure))),
        },
    };
    let options = match referenced {
        Some(outputs) => options.with_referenced(outputs),
        None => options,
    };
    let given = Given {
        controller,
        package,
        callbacks,
        plan,
        identity,
    };
    Ok(Some(Prepared {
        given,
        snapshot,
        options,
        failure,
    }))
}

impl Prepared<'_> {
    /// What `identity` returned, if it ran and succeeded.
    pub(crate) fn identity(&self) -> Option<&[Option<String>]> {
        self.given.identity.as_deref()
    }

    /// Takes the identity lock (the object's, without an identity: no
    /// effect runs then, but status writes must not race another pass);
    /// `None`: another pass holds it.
    pub(crate) fn lock(&self) -> Option<LockGuard> {
        let given = &self.given;
        let key = match &given.identity {
            Some(id) => LockKey::Identity(id.clone()),
            None => LockKey::Object(format!(
                "{}/{}/{}/{}",
                given.package.descriptor().qualified_plural(),
                resource::namespace(&self.snapshot),
                resource::name(&self.snapshot),
                resource::uid(&self.snapshot).unwrap_or_default()
            )),
        };
        given.controller.config.lock_domain.try_acquire(key)
    }
}

/// What the caller of a pass decides: the lease its writes are fenced by,
/// taken when it chose it, and how its checks may go.
pub(crate) struct Terms {
    /// The fence of that lease (`None`: no lease, no fence).
    pub(crate) fence: Option<Fence>,
    /// That lease's fencing token, handed to the callbacks.
    pub(crate) token: Option<FencingToken>,
    /// The caller keeps the next check in memory, so a check that would
    /// change only the schedule may write nothing; a caller with only
    /// status to remember it by has every check write.
    pub(crate) may_be_quiet: bool,
    /// An effect is likely whatever the desired state says (a related
    /// object was deleted): Reconciling is published while observing.
    pub(crate) expects_effect: bool,
}

impl Terms {
    /// Under the lease `gate` guards (none: no fence), taken now with its
    /// `token`; every check writes.
    pub(crate) fn under(
        c: &Controller,
        gate: Option<&Arc<Gate>>,
        token: Option<FencingToken>,
    ) -> Self {
        Self {
            fence: gate.map(|g| Fence::pass(g.clone(), c.config.now.clone())),
            token,
            may_be_quiet: false,
            expects_effect: false,
        }
    }

    /// Under the leader's lease with leader election (else none).
    pub(crate) fn leader(c: &Controller) -> Self {
        let gate = c.gate.as_ref();
        Self::under(c, gate, gate.and_then(|g| g.token(c.now())))
    }
}
