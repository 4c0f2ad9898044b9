//! One reconcile pass: what it was given (by the preparation and its
//! caller), what it accumulates (the current snapshot first), and the
//! writes that advance it.

use super::plan::Plan;
use super::report::{Halt, PassOutcome, Report};
use super::workflow::Workflow;
use crate::domain::status::{self, Next, Retry, Transition};
use crate::domain::{jitter, resource};
use crate::leader::{Fence, FencingToken, Gate};
use crate::package::binding::Callbacks;
use crate::package::callback::Failure;
use crate::package::observation::Outputs;
use crate::package::options::CallbackInput;
use crate::package::outputs::{accept, Rejected};
use crate::resource::{Phase, Reason};
use crate::telemetry::log;
use crate::test_hooks::{self, Point};
use crate::{package::erased::Package, Controller, Error};
use blue_kubernetes_client::Client;
use serde_json::Value;
use std::sync::Arc;

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

/// What the preparation gives a pass (`prepare.rs`), fixed for the whole
/// pass.
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

/// A pass: what it was given (by the preparation, read through to `given`
/// so nothing can change it, and by its caller), and (every other field)
/// what it accumulates.
pub(super) struct Pass<'a> {
    given: Given<'a>,
    pub(super) terms: Terms,
    /// What the pass writes through: the controller's client, behind the
    /// fence of its terms when there is one.
    client: Arc<dyn Client>,
    /// The latest object we know of; each of our writes returns the next one,
    /// so every write carries the resourceVersion our decision was based on.
    pub(super) snapshot: Value,
    pub(super) options: CallbackInput,
    /// The latest callback failure of this pass, for the operator's log.
    pub(super) failure: LastFailure,
    /// The validation messages the package marked user-facing, joined, or
    /// the message of the rejection or immutable-field rule: the message of
    /// the Warning Event of this pass's Invalid (or Rejected) write.
    pub(super) user_facing: Option<String>,
    /// Reconciling (or Deleting) was published in this pass.
    pub(super) published: bool,
    /// Outputs a callback reported, until a status write records them.
    pub(super) outputs: Option<Outputs>,
    /// An external name a callback reported, until it is recorded.
    pub(super) external_name: Option<String>,
    /// The durable-steps run this pass works on, once it touches one;
    /// every status write of the pass records it.
    pub(super) workflow: Option<Workflow>,
    /// A durable step broke the step rules: the pass fails (`InvalidStep`).
    pub(super) steps_broken: bool,
    /// The next check of the latest status written or quietly kept.
    pub(super) next_check: Option<u64>,
}

impl<'a> std::ops::Deref for Pass<'a> {
    type Target = Given<'a>;

    fn deref(&self) -> &Given<'a> {
        &self.given
    }
}

impl<'a> Pass<'a> {
    pub(super) fn new(prepared: Prepared<'a>, terms: Terms) -> Self {
        let Prepared {
            given,
            snapshot,
            options,
            failure,
        } = prepared;
        let client = given.controller.config.client.clone();
        let client = match &terms.fence {
            Some(fence) => fence.clone().around(client),
            None => client,
        };
        let options = options.with_fencing_token(terms.token).with_api(
            crate::package::context::Api::new(client.clone())
                .with_objects(given.controller.objects.clone()),
        );
        let options = match given.package.schema().connection {
            true => options.with_connection(crate::connection::Connection::new(
                client.clone(),
                given.package.descriptor(),
                &snapshot,
                given.controller.connections.clone(),
                given.controller.objects.clone(),
            )),
            false => options,
        };
        Self {
            given,
            terms,
            client,
            snapshot,
            options,
            failure,
            user_facing: None,
            published: false,
            outputs: None,
            external_name: None,
            workflow: None,
            steps_broken: false,
            next_check: None,
        }
    }

    /// Runs the rules.
    pub(super) async fn run(mut self) -> PassOutcome {
        let started = version(&self.snapshot);
        let result = self.decide().await;
        let now = version(&self.snapshot);
        // A lost race proves the server moved past our last write: its
        // event comes before the one that beat us (and may be taken in
        // already), so waiting for it could wait for a version that never
        // comes again, leaving the edit that beat us unhandled.
        let lost = matches!(result, Err(Halt::Lost(Report::Conflict | Report::NotFound)));
        let report = match result {
            Ok(report) | Err(Halt::Lost(report)) => Ok(report),
            Err(Halt::Transport(e)) => Err(Error::Transport(e)),
        };
        PassOutcome {
            report,
            written: now.filter(|now| !lost && Some(now) != started.as_ref()),
            next_check: self.next_check,
        }
    }

    /// Writes a status computed from the current snapshot, unless it is a
    /// quiet periodic check (see [`status::is_quiet`]).
    pub(super) async fn write(&mut self, mut t: Transition) -> Result<Report, Halt> {
        self.record_external_name().await?;
        if let Some(outputs) = self.outputs.take() {
            let accepted = accept(self.package.schema().outputs.as_ref(), outputs);
            match accepted.and_then(|v| self.not_holding_secrets(v)) {
                Ok(value) => t.outputs = Some(value),
                Err(rejected) => t = self.outputs_rejected(t, rejected),
            }
        }
        self.record_workflow(&mut t);
        let config = &self.controller.config;
        let retry = Retry {
            base_ms: config.retry_base_ms,
            max_ms: config.retry_max_ms,
        };
        if let Next::After(interval_ms) = t.next {
            let uid = resource::uid(&self.snapshot).unwrap_or_default();
            t.next = Next::After(jitter::stretch(interval_ms, uid));
        }
        let now = self.controller.now();
        let status = status::render_named(
            &self.snapshot,
            &t,
            now,
            retry,
            &config.names.request_annotation,
        );
        let next_check = status::next_check(&status);
        let heartbeat_ms = config.status_heartbeat_ms;
        if self.terms.may_be_quiet
            && status::is_quiet(&self.snapshot, &t, &status, now, heartbeat_ms)
        {
            self.next_check = next_check;
            return Ok(Report::Reconciled(t.phase, t.reason));
        }
        self.before_write(&t, &status);
        let previous = resource::status_str(&self.snapshot, "phase").map(str::to_string);
        self.snapshot = self
            .client
            .update_status(self.package.descriptor(), &self.snapshot, &status)
            .await
            .inspect_err(|e| self.report_fenced(e))?;
        self.next_check = next_check;
        self.after_write(previous, &t, &status);
        self.workflow_written();
        Ok(Report::Reconciled(t.phase, t.reason))
    }

    /// The pass's client: the controller's, behind the pass's fence.
    pub(super) fn client(&self) -> &Arc<dyn Client> {
        &self.client
    }

    /// `text` with the connection values this pass handed out redacted.
    pub(super) fn redacted(&self, text: &str) -> String {
        match self.options.connection() {
            Some(connection) => connection.redact(text),
            None => text.to_string(),
        }
    }

    /// Whether `value` holds a connection value generated in this pass.
    pub(super) fn holds_generated(&self, value: &Value) -> bool {
        let connection = self.options.connection();
        connection.is_some_and(|c| c.holds_generated(value))
    }

    fn not_holding_secrets(&self, outputs: Value) -> Result<Value, Rejected> {
        match self.holds_generated(&outputs) {
            true => Err(Rejected::HoldsSecret),
            false => Ok(outputs),
        }
    }

    /// Outputs that cannot be recorded fail the pass instead of the
    /// transition it was about to write: nothing partial is recorded.
    fn outputs_rejected(&self, t: Transition, rejected: Rejected) -> Transition {
        // Why, for the people running the operator; the outputs themselves
        // are not logged (they are the package's, and may be large).
        log::warn_about!(self.subject(), why = %rejected, "outputs not recorded; the pass fails");
        let mut failed = Transition::new(Phase::Failed, Reason::InvalidOutputs, Next::Backoff);
        failed.identity = t.identity;
        failed.immutable_digest = t.immutable_digest;
        failed.acknowledge = t.acknowledge;
        failed
    }

    /// A failed attempt: retried with backoff, stored identity kept;
    /// unless the callback behind it rejected the input (`rejection.rs`).
    pub(super) async fn fail(&mut self, reason: Reason) -> Result<Report, Halt> {
        if reason == Reason::ExecutionFailed {
            if let Some(message) = self.rejection() {
                return self.reject(message).await;
            }
        }
        self.write(Transition::new(Phase::Failed, reason, Next::Backoff))
            .await
    }

    /// Sets our finalizer present or absent, keeping everyone else's.
    pub(super) async fn set_finalizer(&mut self, present: bool) -> Result<(), Halt> {
        if !present {
            self.reached(Point::BeforeFinalizerRelease).await;
        }
        let ours = &self.controller.config.names.finalizer;
        let mut finalizers: Vec<String> = resource::finalizers(&self.snapshot)
            .into_iter()
            .filter(|f| f != ours)
            .collect();
        if present {
            finalizers.push(ours.clone());
        }
        self.snapshot = self
            .client
            .update_finalizers(self.package.descriptor(), &self.snapshot, &finalizers)
            .await
            .inspect_err(|e| self.report_fenced(e))?;
        Ok(())
    }

    /// The resource is released: the controller forgets what it kept of it.
    pub(super) fn forget(&self) {
        let uid = resource::uid(&self.snapshot).unwrap_or_default();
        self.controller.forget(uid);
    }

    /// Whether the fence the pass started under still holds (always, with
    /// none): an Event is recorded only then, as a write would be.
    pub(super) fn fence_holds(&self) -> bool {
        self.terms.fence.as_ref().is_none_or(Fence::holds)
    }

    /// A boundary a test hook may name: it may pause or kill the process
    /// here (test-only; nothing happens without hooks).
    pub(super) async fn reached(&self, point: Point<'_>) {
        let hooks = self.controller.config.test_hooks.as_ref();
        test_hooks::reached(hooks, point, &self.snapshot).await;
    }

    /// Our finalizer is on the current snapshot.
    pub(super) fn has_finalizer(&self) -> bool {
        resource::has_finalizer(&self.snapshot, &self.controller.config.names.finalizer)
    }

    pub(super) fn identity_record(&self) -> Option<(String, String)> {
        self.identity.as_ref().map(|id| {
            (
                self.options.profile().to_string(),
                blue_identity::state_identity_hash(id),
            )
        })
    }
}

fn version(object: &Value) -> Option<String> {
    object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_string)
}
