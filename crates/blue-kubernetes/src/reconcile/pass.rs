//! One reconcile pass: what it was given (by the preparation and its
//! caller), what it accumulates (the current snapshot first), and its
//! guarded writes (status, finalizer, external name); the driver
//! (`driver.rs`) advances it.

use super::decision::Decision;
use super::prepare::Terms;
use super::prepare::{Given, Prepared};
use super::protocol::Facts;
use super::protocol::{Halt, Report};
use super::reporting::Teller;
use super::workflow::Workflow;
use crate::domain::due;
use crate::domain::names::Names;
use crate::domain::resource;
use crate::domain::status::{self, Next, Retry, Transition};
use crate::package::callback::Failure;
use crate::package::observation::Outputs;
use crate::package::observation::{accept, Rejected};
use crate::package::options::CallbackInput;
use crate::resource::{Phase, Reason};
use crate::telemetry::log::{self, Subject};
use crate::test_hooks::{self, Point};
use blue_kubernetes_client::{ApiPath, ApiRequest, Client, Method, PatchType, ResourceDescriptor};
use serde_json::{json, Value};
use std::sync::Arc;

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
    /// The rules of the pass, and what they remember (the latest callback
    /// failure, the Warning Event's user-facing message).
    pub(super) decision: Decision<'a>,
    /// Outputs a callback reported, until a status write records them.
    pub(super) outputs: Option<Outputs>,
    /// An external name a callback reported, until it is recorded.
    pub(super) external_name: Reported,
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
            crate::package::api::Api::new(client.clone())
                .with_objects(given.controller.objects.clone()),
        );
        let options = match given.package.schema().connection {
            true => options.with_connection(crate::connection::Connection::new(
                client.clone(),
                given.package.descriptor(),
                &snapshot,
                given.controller.memory.clone(),
                given.controller.objects.clone(),
            )),
            false => options,
        };
        let schema = given.package.schema();
        let facts = Facts {
            plan: given.plan.clone(),
            identity: given.identity.as_ref().map(|id| {
                let profile = options.profile().to_string();
                (profile, blue_identity::state_identity_hash(id))
            }),
            immutable: &schema.immutable,
            names: &given.controller.config.names,
            stepped: schema.steps,
            connection: schema.connection,
            expects_effect: terms.expects_effect,
        };
        Self {
            decision: Decision::new(facts, failure),
            given,
            terms,
            client,
            snapshot,
            options,
            outputs: None,
            external_name: Reported::default(),
            workflow: None,
            steps_broken: false,
            next_check: None,
        }
    }

    /// Records a reported external name on the resource, before anything
    /// else the pass writes.
    pub(super) async fn record_external_name(&mut self) -> Result<(), Halt> {
        let (names, descriptor) = (&self.controller.config.names, self.package.descriptor());
        let snapshot = &mut self.snapshot;
        self.external_name
            .record(&*self.client, names, descriptor, snapshot)
            .await
    }

    /// What callback `name` returned; a failure is remembered for the log
    /// line of the Failed status it leads to.
    pub(super) fn noted<T>(&mut self, name: &'static str, result: Result<T, Failure>) -> Option<T> {
        result
            .map_err(|failure| self.decision.failed(name, failure))
            .ok()
    }

    /// Publishes Reconciling (Deleting) before an effect (a durable step's).
    pub(super) async fn publish(&mut self) -> Result<Report, Halt> {
        let t = self.decision.publication(&self.snapshot);
        self.write(t).await
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
        if let Some(workflow) = &self.workflow {
            workflow.put_into(&mut t, resource::is_deleting(&self.snapshot));
        }
        let config = &self.controller.config;
        let retry = Retry {
            base_ms: config.retry_base_ms,
            max_ms: config.retry_max_ms,
        };
        if let Next::After(interval_ms) = t.next {
            let uid = resource::uid(&self.snapshot).unwrap_or_default();
            t.next = Next::After(due::stretch(interval_ms, uid));
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
        self.teller().before_write(&t, &status);
        let previous = resource::status_str(&self.snapshot, "phase").map(str::to_string);
        self.snapshot = self
            .client
            .update_status(self.package.descriptor(), &self.snapshot, &status)
            .await
            .inspect_err(|e| self.teller().report_fenced(e))?;
        self.next_check = next_check;
        self.teller().after_write(previous, &t, &status);
        if let Some(workflow) = self.workflow.as_mut() {
            let uid = resource::uid(&self.snapshot).unwrap_or_default();
            let subject = Subject {
                descriptor: self.given.package.descriptor(),
                object: &self.snapshot,
            };
            let controller = self.given.controller;
            workflow.written(
                uid,
                &controller.memory,
                &controller.telemetry.metrics,
                subject,
            );
        }
        Ok(Report::Reconciled(t.phase, t.reason))
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

    /// Removes our finalizer (if `finalizer`). What the controller
    /// remembers of the resource is forgotten by the pass's caller, once it
    /// reports [`Report::Released`] (`memory`).
    pub(super) async fn release(&mut self, finalizer: bool, destroyed: bool) -> Result<(), Halt> {
        if finalizer {
            self.set_finalizer(false).await?;
        }
        let events = self.controller.telemetry.events.as_ref();
        if let Some(events) = events.filter(|_| destroyed) {
            events.released(&self.snapshot);
        }
        Ok(())
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
            .inspect_err(|e| self.teller().report_fenced(e))?;
        Ok(())
    }

    /// What the pass tells, from where it stands now.
    pub(super) fn teller(&self) -> Teller<'_> {
        Teller {
            controller: self.controller,
            package: self.package,
            snapshot: &self.snapshot,
            decision: &self.decision,
            fence: self.terms.fence.as_ref(),
        }
    }

    /// The resource a log line of this pass is about.
    pub(super) fn subject(&self) -> Subject<'_> {
        self.teller().subject()
    }

    /// A boundary a test hook may name: it may pause or kill the process
    /// here (test-only; nothing happens without hooks).
    pub(super) async fn reached(&self, point: Point<'_>) {
        let hooks = self.controller.config.test_hooks.as_ref();
        test_hooks::reached(hooks, point, &self.snapshot).await;
    }
}

/// The longest external name recorded; a longer one is logged and dropped
/// (an ID, not a document).
pub(crate) const MAX_EXTERNAL_NAME_BYTES: usize = 1024;

/// An external name a callback of this pass reported, until it is
/// recorded.
///
/// The external name: the infrastructure's own ID, reported by a callback
/// and recorded on the resource as the `<domain>/external-name`
/// annotation, so every later pass (and a restarted controller) finds the
/// infrastructure by it.
///
/// It is recorded as soon as it is reported, before anything else the
/// pass writes: infrastructure made but not recorded would be made again
/// by the next pass. The write is guarded by the pass's fence and by the
/// object's uid, not by its resourceVersion: the name is a fact about the
/// infrastructure, not an acknowledgement of desired state, and losing it
/// to a concurrent spec edit would orphan what was made. A spec edit that
/// came in between does stop the pass right after the write (the edit is
/// the next pass's business), so no later write of this pass acknowledges
/// desired state it did not act on.
#[derive(Default)]
pub(super) struct Reported(Option<String>);

impl Reported {
    /// A callback reported `name`: later callbacks of the pass see it at
    /// once (in `options`), and the next write records it. One too long,
    /// or a connection value, is logged and dropped.
    pub(super) fn note(
        &mut self,
        name: Option<String>,
        options: &mut CallbackInput,
        subject: Subject<'_>,
    ) {
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return;
        };
        if options.external_name() == Some(name.as_str()) && self.0.is_none() {
            return;
        }
        let value = Value::from(name.as_str());
        let secret = options
            .connection()
            .is_some_and(|c| c.holds_generated(&value));
        if name.len() > MAX_EXTERNAL_NAME_BYTES || secret {
            log::warn_about!(
                subject,
                "external name not recorded: too long, or a connection value"
            );
            return;
        }
        *options = options.clone().with_external_name(&name);
        self.0 = Some(name);
    }

    /// Writes a reported external name to the annotation of `snapshot`
    /// (of type `d`), if it is not there already, through `client`.
    pub(super) async fn record(
        &mut self,
        client: &dyn Client,
        names: &Names,
        d: &ResourceDescriptor,
        snapshot: &mut Value,
    ) -> Result<(), Halt> {
        let Some(name) = self.0.take() else {
            return Ok(());
        };
        let key = names.external_name_annotation();
        let recorded = resource::at(snapshot, &["metadata", "annotations", key.as_str()]);
        if recorded.and_then(Value::as_str) == Some(name.as_str()) {
            return Ok(());
        }
        let (namespace, object) = (resource::namespace(snapshot), resource::name(snapshot));
        let path = match namespace {
            "" => ApiPath::cluster(&d.group, &d.version, &d.plural, Some(object), None),
            ns => ApiPath::namespaced(&d.group, &d.version, ns, &d.plural, Some(object), None),
        }
        .map_err(Halt::Transport)?;
        let uid = resource::uid(snapshot).unwrap_or_default();
        let patch = json!({"metadata": {"uid": uid, "annotations": {key: name}}});
        let request = ApiRequest::new(Method::Patch(PatchType::Merge), path).with_body(patch);
        let response = client.send_raw(request).await?;
        let Some(written) = response.body.filter(Value::is_object) else {
            return Err(Halt::Lost(Report::Conflict));
        };
        let same_desire = |o: &Value| {
            (
                resource::generation(o),
                resource::request_token(o, &names.request_annotation).to_string(),
            )
        };
        let moved = same_desire(&written) != same_desire(snapshot);
        *snapshot = written;
        match moved {
            // Recorded; the new desired state is the next pass's.
            true => Err(Halt::Lost(Report::Conflict)),
            false => Ok(()),
        }
    }
}
