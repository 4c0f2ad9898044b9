//! The audit of the model test: what the user asked for (the model), what
//! the controller's cluster calls did (the ledger), and the checks made
//! around each call (`client.rs` wraps a [`FakeCluster`] in them). Each
//! check looks up the facts it needs (the clock, the recorded specs, the
//! infrastructure) at the moment of the call and leaves the judgement to
//! `oracle.rs`.

use crate::object::{object_profile, profile_of, str_at};
use crate::oracle::{
    announced_profile, dropped_finalizers, premature_release, ready_claim, ready_claim_rules,
    ready_landing_rules, releases_a_destroy, status_rules, stored_acknowledgement_rule, Retry,
};
use crate::steps::StepLedger;
use blue_identity::state_identity_hash;
use blue_kubernetes_client::{Error, ResourceDescriptor};
use blue_testkit::{FakeCluster, FakeInfra, Operation, PLANTED_SECRET};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// What the user asked for: every spec each object (by uid) ever had, by
/// generation. Updated by the test after every user edit.
#[derive(Debug, Default)]
pub struct Model {
    specs: HashMap<String, BTreeMap<i64, Value>>,
}

impl Model {
    /// Records the spec `object` has at its current generation.
    pub fn record(&mut self, object: &Value) {
        let uid = str_at(object, "/metadata/uid").to_string();
        let generation = object
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let spec = object.get("spec").cloned().unwrap_or(Value::Null);
        let previous = self
            .specs
            .entry(uid)
            .or_default()
            .insert(generation, spec.clone());
        // The same generation always means the same desired state.
        if let Some(previous) = previous {
            assert_eq!(previous, spec, "generation {generation} changed its spec");
        }
    }

    fn spec_at(&self, uid: &str, generation: i64) -> Option<&Value> {
        self.specs.get(uid)?.get(&generation)
    }
}

/// What the audit saw: broken invariants (with enough context to debug) and
/// write counts.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Invariant violations, in order.
    pub violations: Vec<String>,
    /// Calls made, faulted ones included.
    pub calls: BTreeMap<Operation, usize>,
    /// How many callbacks had run when a call first failed (since the last
    /// [`Ledger::reset_failure`]), and how many calls were made after it.
    pub failed_at: Option<usize>,
    /// Calls made after `failed_at` was set.
    pub calls_after_failure: usize,
    /// How many durable steps had run when a call first failed.
    pub steps_at_failure: Option<usize>,
    /// Successful Reconciling/Deleting status writes, by recorded profile:
    /// each effect must be announced by one of its own.
    pub announced: BTreeMap<String, usize>,
}

impl Ledger {
    pub fn calls(&self, op: Operation) -> usize {
        self.calls.get(&op).copied().unwrap_or(0)
    }

    /// List requests: whole lists and pages alike.
    pub fn lists(&self) -> usize {
        self.calls(Operation::List) + self.calls(Operation::ListPage)
    }

    pub fn reset_failure(&mut self) {
        self.failed_at = None;
        self.steps_at_failure = None;
        self.calls_after_failure = 0;
    }
}

/// The auditing client.
#[derive(Clone, Debug)]
pub struct Audit {
    pub cluster: FakeCluster,
    infra: FakeInfra,
    model: Arc<Mutex<Model>>,
    ledger: Arc<Mutex<Ledger>>,
    /// The retry settings of the controller using this client.
    retry: Retry,
    /// Finalizer verdicts found before a write, by (object name, the
    /// resourceVersion written from), until the write's answer arrives.
    pending: Arc<Mutex<Vec<(PendingKey, Pending)>>>,
    /// What the durable-steps audit has seen (`steps.rs`).
    steps: Arc<Mutex<StepLedger>>,
}

/// (object name, resourceVersion) of a finalizer write in flight.
type PendingKey = (String, String);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Audit {
    pub fn new(cluster: FakeCluster, infra: FakeInfra) -> Self {
        Self {
            cluster,
            infra,
            model: Arc::default(),
            ledger: Arc::default(),
            pending: Arc::default(),
            steps: Arc::default(),
            retry: Retry {
                base_ms: 1_000,
                max_ms: 60_000,
            },
        }
    }

    /// The same audit (shared model and ledger) for a controller with these
    /// retry settings.
    pub fn with_retry(&self, retry: Retry) -> Self {
        Self {
            retry,
            ..self.clone()
        }
    }

    pub fn model(&self) -> MutexGuard<'_, Model> {
        lock(&self.model)
    }

    pub fn ledger(&self) -> MutexGuard<'_, Ledger> {
        lock(&self.ledger)
    }

    pub fn steps(&self) -> MutexGuard<'_, StepLedger> {
        lock(&self.steps)
    }

    fn violation(&self, text: String) {
        self.ledger().violations.push(text);
    }

    /// Every call: yields first, so concurrent passes interleave here.
    pub async fn begin(&self, op: Operation) {
        tokio::task::yield_now().await;
        let mut ledger = self.ledger();
        if ledger.failed_at.is_some() {
            ledger.calls_after_failure += 1;
        }
        *ledger.calls.entry(op).or_default() += 1;
    }

    /// Counts a call of the runtime's cache (never a pass's call).
    pub async fn count(&self, op: Operation) {
        tokio::task::yield_now().await;
        *self.ledger().calls.entry(op).or_default() += 1;
    }

    /// Every audited call's result: a failure marks where the pass must
    /// stop, and carries no secret.
    pub fn end(&self, result: Option<&Error>) {
        if let Some(e) = result {
            if format!("{e} {e:?}").contains(PLANTED_SECRET) {
                self.violation("a transport error carries the planted secret".into());
            }
            let callbacks = self.infra.records().len();
            let steps = self.infra.step_runs().len();
            let mut ledger = self.ledger();
            ledger.failed_at.get_or_insert(callbacks);
            ledger.steps_at_failure.get_or_insert(steps);
        }
    }

    /// Invariant 2 (before the write): a Ready status for generation `g`
    /// is written only while the infrastructure holds what generation `g` of
    /// this object asked for, and `g` was a valid, unsuspended generation.
    fn audit_ready_claim(&self, name: &str, resource: &Value, status: &Value) {
        let Some(claim) = ready_claim(status) else {
            return;
        };
        let Some(g) = claim else {
            self.violation(format!("{name}: Ready status without observedGeneration"));
            return;
        };
        let spec = self
            .model()
            .spec_at(str_at(resource, "/metadata/uid"), g)
            .cloned();
        let Some(spec) = spec else {
            self.violation(format!(
                "{name}: Ready claims generation {g}, which the user never produced"
            ));
            return;
        };
        let profile = profile_of(&spec, str_at(resource, "/metadata/namespace"), name);
        let held = self.infra.get(&profile);
        for wrong in ready_claim_rules(g, &spec, &profile, held.as_ref(), status) {
            self.violation(format!("{name}: {wrong}"));
        }
    }

    /// Before a status write: invariant 4, the status rules (judged at the
    /// moment of the write) and the Ready claim.
    pub fn audit_status_write(&self, resource: &Value, status: &Value) {
        let name = str_at(resource, "/metadata/name");
        if status.to_string().contains(PLANTED_SECRET) {
            self.violation(format!("{name}: status carries the planted secret"));
        }
        let state_identity = |profile: &str| state_identity_hash(&self.infra.identity(profile));
        let now = self.cluster.clock().now_ms();
        for wrong in status_rules(resource, status, now, self.retry, state_identity) {
            self.violation(format!("{name}: status {status}: {wrong}"));
        }
        self.audit_ready_claim(name, resource, status);
    }

    /// After a status write that succeeded: the announcement it makes, what
    /// it acknowledges, and where a Ready claim landed (invariant 2).
    pub fn audit_status_written(&self, resource: &Value, status: &Value, written: Option<&Value>) {
        let Some(written) = written else {
            return;
        };
        let name = str_at(resource, "/metadata/name");
        if let Some(profile) = announced_profile(status) {
            *self.ledger().announced.entry(profile.into()).or_default() += 1;
        }
        let mut wrong: Vec<String> = stored_acknowledgement_rule(status, written)
            .into_iter()
            .collect();
        if let Some(Some(g)) = ready_claim(status) {
            wrong.extend(ready_landing_rules(g, written));
        }
        self.audit_workflow_written(written, &self.infra.step_runs());
        for wrong in wrong {
            self.violation(format!("{name}: {wrong}"));
        }
    }

    /// Before a finalizer write, judged on the object stored at that moment
    /// (invariant 3): what would be wrong if the write succeeds.
    pub fn audit_finalizers_write(
        &self,
        d: &ResourceDescriptor,
        resource: &Value,
        finalizers: &[String],
    ) {
        let name = str_at(resource, "/metadata/name");
        let namespace = str_at(resource, "/metadata/namespace");
        let stored = self.cluster.get(d, namespace, name);
        let dropped = dropped_finalizers(stored.as_ref(), finalizers);
        let premature = stored
            .filter(|stored| releases_a_destroy(stored, finalizers))
            .and_then(|stored| {
                let held = self.infra.get(&object_profile(&stored));
                premature_release(&stored, held.as_ref())
            });
        let mut wrong: Vec<String> = premature
            .into_iter()
            .map(|wrong| format!("{name}: {wrong}"))
            .collect();
        if !dropped.is_empty() {
            wrong.push(format!("{name}: removed others' finalizers {dropped:?}"));
        }
        lock(&self.pending).push((pending_key(resource), Pending(wrong)));
    }

    /// After a finalizer write: what was found before it counts if it
    /// succeeded. Concurrent writes from one snapshot take their verdicts
    /// in the order they were made.
    pub fn audit_finalizers_written(&self, resource: &Value, succeeded: bool) {
        let key = pending_key(resource);
        let pending = {
            let mut all = lock(&self.pending);
            let at = all.iter().position(|(k, _)| *k == key);
            at.map(|at| all.remove(at).1)
        };
        if let (Some(pending), true) = (pending, succeeded) {
            self.ledger().violations.extend(pending.0);
        }
    }

    /// Events are as public as status: never the planted secret.
    pub fn audit_event(&self, event: &Value) {
        if event.to_string().contains(PLANTED_SECRET) {
            self.violation("an Event carries the planted secret".to_string());
        }
    }
}

/// Violations found before a write that only count if the write succeeds.
#[derive(Debug)]
pub struct Pending(Vec<String>);

fn pending_key(resource: &Value) -> PendingKey {
    (
        str_at(resource, "/metadata/name").to_string(),
        str_at(resource, "/metadata/resourceVersion").to_string(),
    )
}
