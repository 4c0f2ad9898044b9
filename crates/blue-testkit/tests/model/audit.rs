//! The auditing [`Client`] of the model test: delegates every call to a
//! [`FakeCluster`], yields first (so concurrent reconciles on one
//! current-thread runtime interleave at every cluster call), and checks each
//! write against the model and the fake infrastructure at the moment it is
//! made.

use crate::object::{object_profile, profile_of, str_at};
use crate::oracle::{
    announced_profile, dropped_finalizers, premature_release, ready_claim, ready_claim_rules,
    ready_landing_rules, releases_a_destroy, status_rules, stored_acknowledgement_rule, Retry,
};
use blue_identity::state_identity_hash;
use blue_kubernetes_client::{AccessCheck, ApiResource, Client, Error, ResourceDescriptor};
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
        self.calls_after_failure = 0;
    }
}

/// The auditing client.
#[derive(Clone, Debug)]
pub struct Audit {
    cluster: FakeCluster,
    infra: FakeInfra,
    model: Arc<Mutex<Model>>,
    ledger: Arc<Mutex<Ledger>>,
    /// The retry settings of the controller using this client.
    retry: Retry,
}

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
            retry: Retry {
                base_ms: 1_000,
                max_ms: 60_000,
            },
        }
    }

    /// The same audit (shared model and ledger) for a controller with these
    /// retry settings.
    pub fn with_retry(&self, base_ms: u64, max_ms: u64) -> Self {
        Self {
            retry: Retry { base_ms, max_ms },
            ..self.clone()
        }
    }

    pub fn model(&self) -> MutexGuard<'_, Model> {
        lock(&self.model)
    }

    pub fn ledger(&self) -> MutexGuard<'_, Ledger> {
        lock(&self.ledger)
    }

    fn violation(&self, text: String) {
        self.ledger().violations.push(text);
    }

    /// Every call: yields first, so concurrent passes interleave here.
    async fn begin(&self, op: Operation) {
        tokio::task::yield_now().await;
        let mut ledger = self.ledger();
        if ledger.failed_at.is_some() {
            ledger.calls_after_failure += 1;
        }
        *ledger.calls.entry(op).or_default() += 1;
    }

    /// Counts a call of the runtime's cache (never a pass's call).
    async fn count(&self, op: Operation) {
        tokio::task::yield_now().await;
        *self.ledger().calls.entry(op).or_default() += 1;
    }

    fn end(&self, result: &Result<impl Sized, Error>) {
        if let Err(e) = result {
            if format!("{e} {e:?}").contains(PLANTED_SECRET) {
                self.violation("a transport error carries the planted secret".into());
            }
            let callbacks = self.infra.records().len();
            self.ledger().failed_at.get_or_insert(callbacks);
        }
    }

    /// Invariant 2 (before the write): a Ready status for generation `g`
    /// is written only while the infrastructure holds what generation `g` of
    /// this object asked for, and `g` was a valid, unsuspended generation.
    fn audit_ready_claim(&self, resource: &Value, status: &Value) -> Option<i64> {
        let claim = ready_claim(status)?;
        let name = str_at(resource, "/metadata/name");
        let namespace = str_at(resource, "/metadata/namespace");
        let uid = str_at(resource, "/metadata/uid");
        let Some(g) = claim else {
            self.violation(format!("{name}: Ready status without observedGeneration"));
            return None;
        };
        let spec = self.model().spec_at(uid, g).cloned();
        let Some(spec) = spec else {
            self.violation(format!(
                "{name}: Ready claims generation {g}, which the user never produced"
            ));
            return Some(g);
        };
        let profile = profile_of(&spec, namespace, name);
        let held = self.infra.get(&profile);
        for wrong in ready_claim_rules(g, &spec, &profile, held.as_ref(), status) {
            self.violation(format!("{name}: {wrong}"));
        }
        Some(g)
    }

    /// The status rules, judged at the moment of the write.
    fn audit_status_shape(&self, resource: &Value, status: &Value) -> Vec<String> {
        let state_identity = |profile: &str| state_identity_hash(&self.infra.identity(profile));
        let now = self.cluster.clock().now_ms();
        status_rules(resource, status, now, self.retry, state_identity)
    }
}

#[async_trait::async_trait]
impl Client for Audit {
    async fn list_resources(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
    ) -> Result<Vec<Value>, Error> {
        self.begin(Operation::List).await;
        let result = self.cluster.list_resources(d, namespace).await;
        self.end(&result);
        result
    }

    // The cache's calls are counted, not audited as a pass's calls: a
    // failed page or watch is no reconcile's failure.
    async fn list_page(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        page: &blue_kubernetes_client::PageRequest,
    ) -> Result<blue_kubernetes_client::ListPage, Error> {
        self.count(Operation::ListPage).await;
        self.cluster.list_page(d, namespace, page).await
    }

    async fn watch(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        request: &blue_kubernetes_client::WatchRequest,
    ) -> Result<blue_kubernetes_client::WatchStream, Error> {
        self.count(Operation::Watch).await;
        self.cluster.watch(d, namespace, request).await
    }

    async fn get_resource(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        self.begin(Operation::Get).await;
        let result = self.cluster.get_resource(d, namespace, name).await;
        self.end(&result);
        result
    }

    async fn update_status(
        &self,
        d: &ResourceDescriptor,
        resource: &Value,
        status: &Value,
    ) -> Result<Value, Error> {
        self.begin(Operation::UpdateStatus).await;
        let name = str_at(resource, "/metadata/name").to_string();
        // Invariant 4: status never carries the planted secret.
        if status.to_string().contains(PLANTED_SECRET) {
            self.violation(format!("{name}: status carries the planted secret"));
        }
        for wrong in self.audit_status_shape(resource, status) {
            self.violation(format!("{name}: status {status}: {wrong}"));
        }
        let claimed = self.audit_ready_claim(resource, status);
        let result = self.cluster.update_status(d, resource, status).await;
        self.end(&result);
        if let Ok(written) = &result {
            if let Some(profile) = announced_profile(status) {
                *self.ledger().announced.entry(profile.into()).or_default() += 1;
            }
            if let Some(wrong) = stored_acknowledgement_rule(status, written) {
                self.violation(format!("{name}: {wrong}"));
            }
        }
        if let (Some(g), Ok(written)) = (claimed, &result) {
            for wrong in ready_landing_rules(g, written) {
                self.violation(format!("{name}: {wrong}"));
            }
        }
        result
    }

    async fn update_finalizers(
        &self,
        d: &ResourceDescriptor,
        resource: &Value,
        finalizers: &[String],
    ) -> Result<Value, Error> {
        self.begin(Operation::UpdateFinalizers).await;
        let name = str_at(resource, "/metadata/name");
        let namespace = str_at(resource, "/metadata/namespace");
        // Invariant 3: judged on the stored object at the moment of the
        // write; only a write that succeeds counts.
        let stored = self.cluster.get(d, namespace, name);
        let dropped = dropped_finalizers(stored.as_ref(), finalizers);
        let danger = stored
            .filter(|stored| releases_a_destroy(stored, finalizers))
            .and_then(|stored| {
                let held = self.infra.get(&object_profile(&stored));
                premature_release(&stored, held.as_ref())
            })
            .map(|wrong| format!("{name}: {wrong}"));
        let result = self
            .cluster
            .update_finalizers(d, resource, finalizers)
            .await;
        self.end(&result);
        if let (Some(danger), Ok(_)) = (danger, &result) {
            self.violation(danger);
        }
        if let (false, Ok(_)) = (dropped.is_empty(), &result) {
            self.violation(format!("{name}: removed others' finalizers {dropped:?}"));
        }
        result
    }

    async fn server_resources(
        &self,
        group: &str,
        version: &str,
    ) -> Result<Option<Vec<ApiResource>>, Error> {
        self.cluster.server_resources(group, version).await
    }

    async fn can_i(&self, check: &AccessCheck) -> Result<bool, Error> {
        self.cluster.can_i(check).await
    }

    async fn create_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        // Events are as public as status: never the planted secret.
        if event.to_string().contains(PLANTED_SECRET) {
            self.violation("an Event carries the planted secret".to_string());
        }
        self.cluster.create_event(namespace, event).await
    }

    async fn update_event(&self, namespace: &str, event: &Value) -> Result<Value, Error> {
        if event.to_string().contains(PLANTED_SECRET) {
            self.violation("an Event carries the planted secret".to_string());
        }
        self.cluster.update_event(namespace, event).await
    }

    // The model runs without leader election; Lease calls pass through
    // unaudited.
    async fn get_lease(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<blue_kubernetes_client::Lease>, Error> {
        self.cluster.get_lease(namespace, name).await
    }

    async fn create_lease(
        &self,
        lease: &blue_kubernetes_client::Lease,
    ) -> Result<blue_kubernetes_client::Lease, Error> {
        self.cluster.create_lease(lease).await
    }

    async fn update_lease(
        &self,
        lease: &blue_kubernetes_client::Lease,
    ) -> Result<blue_kubernetes_client::Lease, Error> {
        self.cluster.update_lease(lease).await
    }
}
