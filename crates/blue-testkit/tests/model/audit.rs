//! The auditing [`Client`] of the model test: delegates every call to a
//! [`FakeCluster`], yields first (so concurrent reconciles on one
//! current-thread runtime interleave at every cluster call), and checks each
//! write against the model and the fake infrastructure at the moment it is
//! made.

use blue_kubernetes::{FINALIZER, REQUEST_ANNOTATION};
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
    /// `retry_base_ms` and `retry_max_ms` of the controller using this client.
    retry: (u64, u64),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The profile callbacks see for `spec` of object `namespace/name`.
pub fn profile_of(spec: &Value, namespace: &str, name: &str) -> String {
    match spec.pointer("/config/profile") {
        Some(Value::String(p)) => p.clone(),
        _ => format!("{namespace}--{name}"),
    }
}

/// The value the fake infrastructure converges to for `spec`.
pub fn value_of(spec: &Value) -> Value {
    spec.pointer("/config/value")
        .cloned()
        .unwrap_or(Value::Null)
}

/// The profile of an object's current spec.
pub fn object_profile(object: &Value) -> String {
    profile_of(
        object.get("spec").unwrap_or(&Value::Null),
        str_at(object, "/metadata/namespace"),
        str_at(object, "/metadata/name"),
    )
}

fn has_our_finalizer(object: &Value) -> bool {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|f| f == FINALIZER))
}

fn is_deleting(object: &Value) -> bool {
    object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

fn flag(spec: &Value, pointer: &str) -> bool {
    matches!(spec.pointer(pointer), Some(Value::Bool(true)))
}

impl Audit {
    pub fn new(cluster: FakeCluster, infra: FakeInfra) -> Self {
        Self {
            cluster,
            infra,
            model: Arc::default(),
            ledger: Arc::default(),
            retry: (1_000, 60_000),
        }
    }

    /// The same audit (shared model and ledger) for a controller with these
    /// retry settings.
    pub fn with_retry(&self, base_ms: u64, max_ms: u64) -> Self {
        Self {
            retry: (base_ms, max_ms),
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
        if status.get("phase").and_then(Value::as_str) != Some("Ready") {
            return None;
        }
        let name = str_at(resource, "/metadata/name");
        let namespace = str_at(resource, "/metadata/namespace");
        let uid = str_at(resource, "/metadata/uid");
        let Some(g) = status.get("observedGeneration").and_then(Value::as_i64) else {
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
        let want = value_of(&spec);
        let have = self.infra.get(&profile);
        if have.as_ref() != Some(&want) {
            self.violation(format!(
                "{name}: Ready for generation {g} (wants {profile} = {want}) \
                 while the infrastructure holds {have:?}"
            ));
        }
        if status.get("profile").and_then(Value::as_str) != Some(profile.as_str()) {
            self.violation(format!(
                "{name}: Ready for generation {g} records profile {} instead of {profile}",
                status["profile"]
            ));
        }
        if flag(&spec, "/config/invalid") || flag(&spec, "/suspend") {
            self.violation(format!(
                "{name}: Ready for generation {g}, which was invalid or suspended"
            ));
        }
        Some(g)
    }
}

const PHASES: [&str; 7] = [
    "Ready",
    "Reconciling",
    "Deleting",
    "Failed",
    "Invalid",
    "Blocked",
    "Suspended",
];

const REASONS: [&str; 10] = [
    "Converged",
    "Reconciling",
    "Deleting",
    "NotReady",
    "ExecutionFailed",
    "ValidationFailed",
    "InvalidConfiguration",
    "ImmutableStateIdentity",
    "DestructionProtected",
    "Suspended",
];

fn time_ms(v: &Value) -> Option<u64> {
    let t = humantime::parse_rfc3339_weak(v.as_str()?).ok()?;
    Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as u64)
}

fn interval_ms(spec: &Value) -> Option<u64> {
    let Some(text) = spec.get("reconcileInterval").and_then(Value::as_str) else {
        return Some(60_000);
    };
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let n: u64 = text[..digits].parse().ok()?;
    let unit = match &text[digits..] {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    Some(n * unit)
}

impl Audit {
    /// The status rules of SPEC section 5 that one write can be judged by,
    /// against the snapshot it was computed from: kstatus conditions and
    /// their transition times, acknowledgement, deletionObserved, immutable
    /// profile and state identity, interval and retry timing.
    fn audit_status_shape(&self, resource: &Value, status: &Value) -> Vec<String> {
        let mut wrong = Vec::new();
        let empty = Value::Null;
        let previous = resource.get("status").unwrap_or(&empty);
        let phase = status["phase"].as_str().unwrap_or_default();
        if !PHASES.contains(&phase) {
            wrong.push(format!("unknown phase {phase:?}"));
        }
        let generation = resource
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let token = resource["metadata"]["annotations"][REQUEST_ANNOTATION]
            .as_str()
            .unwrap_or_default();
        let now = time_ms(&status["lastReconcileTime"]);
        if now != Some(self.cluster.clock().now_ms()) {
            wrong.push("lastReconcileTime is not the clock's time".into());
        }

        // Conditions (kstatus).
        let wanted = [
            ("Ready", phase == "Ready"),
            (
                "Reconciling",
                matches!(phase, "Reconciling" | "Deleting" | "Failed"),
            ),
            ("Stalled", matches!(phase, "Invalid" | "Blocked")),
        ];
        let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
        if conditions.len() != wanted.len() {
            wrong.push(format!("{} conditions", conditions.len()));
        }
        let mut reason = None;
        for (kind, on) in wanted {
            let Some(c) = conditions.iter().find(|c| c["type"] == kind) else {
                wrong.push(format!("no {kind} condition"));
                continue;
            };
            if c["status"] != if on { "True" } else { "False" } {
                wrong.push(format!(
                    "{kind} condition is {} in phase {phase}",
                    c["status"]
                ));
            }
            let r = c["reason"].as_str().unwrap_or_default();
            if !REASONS.contains(&r) || reason.is_some_and(|first| first != r) {
                wrong.push(format!("{kind} condition has reason {r:?}"));
            }
            reason = Some(r);
            if c["observedGeneration"] != generation {
                wrong.push(format!(
                    "{kind} condition observedGeneration {}",
                    c["observedGeneration"]
                ));
            }
            let old = previous["conditions"]
                .as_array()
                .and_then(|l| l.iter().find(|o| o["type"] == kind));
            let same =
                old.is_some_and(|o| o["status"] == c["status"] && o["reason"] == c["reason"]);
            let since = match old {
                Some(old) if same => &old["lastTransitionTime"],
                _ => &status["lastReconcileTime"],
            };
            if time_ms(&c["lastTransitionTime"]) != time_ms(since) {
                wrong.push(format!(
                    "{kind} condition transition time {} (changed: {})",
                    c["lastTransitionTime"], !same
                ));
            }
        }

        // Acknowledgement: everything but the announcement of an effect
        // records the snapshot's generation and request token.
        if phase == "Reconciling" {
            if status.get("observedGeneration") != previous.get("observedGeneration") {
                wrong.push("Reconciling acknowledged desired state".into());
            }
        } else if phase != "Deleting"
            && (status["observedGeneration"] != generation
                || status["lastHandledRequest"].as_str().unwrap_or_default() != token)
        {
            wrong.push(format!(
                "{phase} acknowledges generation {} / request {} of generation {generation} / request {token:?}",
                status["observedGeneration"], status["lastHandledRequest"]
            ));
        }
        if status["deletionObserved"] != is_deleting(resource) {
            wrong.push("deletionObserved differs from the snapshot".into());
        }

        // Profile and state identity: immutable once recorded, and consistent.
        for key in ["profile", "stateIdentity"] {
            if previous.get(key).is_some_and(|p| !p.is_null())
                && status.get(key) != previous.get(key)
            {
                wrong.push(format!(
                    "recorded {key} changed from {} to {}",
                    previous[key], status[key]
                ));
            }
        }
        if let Some(profile) = status.get("profile").and_then(Value::as_str) {
            let hash = blue_identity::state_identity_hash(&self.infra.identity(profile));
            if status["stateIdentity"] != hash.as_str() {
                wrong.push(format!(
                    "stateIdentity is not the hash of {profile}'s identity"
                ));
            }
        }

        // Timing: the interval after Ready and Blocked, backoff after Failed.
        let next = time_ms(&status["nextReconcileTime"]);
        let retries = status["retryCount"].as_u64();
        match (phase, now) {
            (_, None) => wrong.push("no lastReconcileTime".into()),
            ("Ready" | "Blocked", Some(now)) => {
                let spec = resource.get("spec").unwrap_or(&empty);
                if next != interval_ms(spec).map(|i| now + i) || retries != Some(0) {
                    wrong.push(format!(
                        "{phase}: next check {next:?} (now {now}), retries {retries:?}"
                    ));
                }
            }
            ("Failed", Some(now)) => {
                let changed = previous.get("observedGeneration").and_then(Value::as_i64)
                    != Some(generation)
                    || previous["lastHandledRequest"].as_str().unwrap_or_default() != token;
                let before = if changed {
                    0
                } else {
                    previous["retryCount"].as_u64().unwrap_or(0)
                };
                let attempt = before + 1;
                let (base, max) = self.retry;
                let delay = base
                    .checked_mul(1u64 << (attempt - 1).min(63))
                    .map_or(max, |d| d.min(max));
                if retries != Some(attempt) || next != Some(now + delay) {
                    wrong.push(format!(
                        "Failed: attempt {retries:?}, next {next:?} (now {now}); \
                         expected attempt {attempt}, next {}",
                        now + delay
                    ));
                }
            }
            _ => {}
        }
        wrong
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
            let phase = status["phase"].as_str().unwrap_or_default();
            let profile = status["profile"].as_str();
            if let (true, Some(profile)) = (matches!(phase, "Reconciling" | "Deleting"), profile) {
                *self.ledger().announced.entry(profile.into()).or_default() += 1;
            }
            // Whatever was acknowledged is at most what is stored.
            let stored = written
                .pointer("/metadata/generation")
                .and_then(Value::as_i64);
            let observed = status["observedGeneration"].as_i64();
            if observed.is_some_and(|o| Some(o) > stored) {
                self.violation(format!(
                    "{name}: observedGeneration {observed:?} > generation {stored:?}"
                ));
            }
        }
        if let (Some(g), Ok(written)) = (claimed, &result) {
            // Invariant 2 (after the write): it landed only on generation g,
            // on a live object that carries our finalizer.
            let current = written
                .pointer("/metadata/generation")
                .and_then(Value::as_i64);
            if current != Some(g) {
                self.violation(format!(
                    "{name}: Ready for generation {g} was stored on generation {current:?}"
                ));
            }
            if is_deleting(written) {
                self.violation(format!("{name}: Ready stored on a deleting object"));
            }
            if !has_our_finalizer(written) {
                self.violation(format!("{name}: Ready stored without our finalizer"));
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
        // Only ever our finalizer changes; nobody else's is dropped.
        let dropped: Vec<String> = stored
            .iter()
            .flat_map(|o| o.pointer("/metadata/finalizers").and_then(Value::as_array))
            .flatten()
            .filter_map(Value::as_str)
            .filter(|f| *f != FINALIZER && !finalizers.iter().any(|n| n == f))
            .map(str::to_string)
            .collect();
        let danger = stored.and_then(|stored| {
            let spec = stored.get("spec").cloned().unwrap_or(Value::Null);
            let removing = has_our_finalizer(&stored) && !finalizers.iter().any(|f| f == FINALIZER);
            let destroy = spec.get("deletionPolicy").and_then(Value::as_str) == Some("Destroy");
            if !(removing && destroy && is_deleting(&stored)) {
                return None;
            }
            let profile = object_profile(&stored);
            if let Some(value) = self.infra.get(&profile) {
                return Some(format!(
                    "{name}: finalizer removed (Destroy) while {profile} still exists ({value})"
                ));
            }
            if flag(&spec, "/config/compute-prevent-destroy") {
                return Some(format!(
                    "{name}: finalizer removed (Destroy) despite compute-prevent-destroy"
                ));
            }
            None
        });
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
