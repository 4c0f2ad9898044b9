//! A recording package over fake infrastructure, for controller and package tests.

mod stepped;

pub use stepped::{StepRun, CONVERGE_STEPS, DELETE_STEPS};

use blue_kubernetes::{Observation, Package};

use blue_kubernetes::package::{CallbackError, CallbackInput, PackageBuilder, WorkflowOutcome};
use blue_kubernetes_client::ResourceDescriptor;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::{watch, Semaphore};

/// Text planted in every failure a [`FakeInfra`] produces: validation
/// messages, callback errors and panic payloads. Tests assert it never
/// reaches status, Events or errors, and reaches the log only when
/// `Config::log_callback_errors` allows it.
pub const PLANTED_SECRET: &str = "SECRET-planted-by-blue-testkit";

/// A callback of the recording package.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Callback {
    /// `validate`
    Validate,
    /// `identity`
    Identity,
    /// `observe`
    Observe,
    /// `converge`
    Converge,
    /// `delete`
    Delete,
}

/// How a scripted callback misbehaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misbehaviour {
    /// Returns an error whose text holds [`PLANTED_SECRET`].
    Error,
    /// Panics with [`PLANTED_SECRET`] in the payload.
    Panic,
    /// Returns a workflow outcome with this `blue/exit` (converge and delete only).
    Exit(i64),
}

/// One recorded callback invocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Which callback ran.
    pub callback: Callback,
    /// The profile it ran for.
    pub profile: String,
    /// The `blue/event` it saw.
    pub event: String,
}

#[derive(Debug, Default)]
struct State {
    /// profile -> the value converge applied.
    items: HashMap<String, Value>,
    unready: HashMap<String, bool>,
    scripted: HashMap<Callback, VecDeque<Misbehaviour>>,
    records: Vec<Record>,
    active_effects: HashMap<String, usize>,
    max_concurrent_effects: usize,
    outputs: HashMap<String, Value>,
    /// Durable steps run by the stepped packages, in order.
    step_runs: Vec<StepRun>,
    /// profile -> the value the stepped packages' `verify` step verified.
    verified: HashMap<String, Value>,
    step_scripts: HashMap<String, VecDeque<Misbehaviour>>,
    /// Effects whose wait at the gate was dropped (their pass died).
    abandoned: usize,
}

/// Fake infrastructure shared by one or more recording packages: a map from
/// profile to the value last converged (the resource's `spec.config.value`).
///
/// Packages built over one `FakeInfra` share identities (and so the
/// controller's lock) for equal profiles, even across resource types; two
/// `FakeInfra`s never share identities, so parallel tests do not contend.
///
/// ```
/// use blue_testkit::{FakeInfra, Callback};
/// let infra = FakeInfra::new();
/// infra.set("dev--web", serde_json::json!(1));
/// assert_eq!(infra.get("dev--web"), Some(serde_json::json!(1)));
/// assert_eq!(infra.count(Callback::Converge), 0);
/// ```
#[derive(Clone, Debug)]
pub struct FakeInfra {
    id: u64,
    state: Arc<Mutex<State>>,
    gate: Arc<Mutex<Option<Arc<Semaphore>>>>,
    entered: Arc<watch::Sender<usize>>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Default for FakeInfra {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeInfra {
    /// Empty infrastructure with a process-unique identity namespace.
    pub fn new() -> Self {
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            state: Arc::default(),
            gate: Arc::default(),
            entered: Arc::new(watch::channel(0).0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The identity the packages compute for `profile`.
    pub fn identity(&self, profile: &str) -> Vec<Option<String>> {
        vec![
            Some("blue-testkit".into()),
            Some(self.id.to_string()),
            Some(profile.into()),
        ]
    }

    /// The value for `profile`, if it exists.
    pub fn get(&self, profile: &str) -> Option<Value> {
        self.lock().items.get(profile).cloned()
    }

    /// Sets `profile` behind the controller's back (drift).
    pub fn set(&self, profile: &str, value: Value) {
        self.lock().items.insert(profile.into(), value);
    }

    /// Removes `profile` behind the controller's back.
    pub fn remove(&self, profile: &str) {
        self.lock().items.remove(profile);
    }

    /// Makes `observe` of `profile` report `outputs` with its observation
    /// (`status.outputs` of its resource), until changed.
    pub fn set_outputs(&self, profile: &str, outputs: Value) {
        self.lock().outputs.insert(profile.into(), outputs);
    }

    /// Makes `profile` report not ready (or ready again).
    pub fn set_ready(&self, profile: &str, ready: bool) {
        self.lock().unready.insert(profile.into(), !ready);
    }

    /// Scripts the next call of `callback` to misbehave; queued in order.
    pub fn script(&self, callback: Callback, misbehaviour: Misbehaviour) {
        self.lock()
            .scripted
            .entry(callback)
            .or_default()
            .push_back(misbehaviour);
    }

    /// How many scripted misbehaviours of `callback` are still queued.
    pub fn scripts_left(&self, callback: Callback) -> usize {
        self.lock().scripted.get(&callback).map_or(0, VecDeque::len)
    }

    /// All recorded invocations, in order. The `converge` and `delete` of a
    /// stepped package are not among them: their steps are
    /// ([`step_runs`](Self::step_runs)).
    pub fn records(&self) -> Vec<Record> {
        self.lock().records.clone()
    }

    /// How many times `callback` ran.
    pub fn count(&self, callback: Callback) -> usize {
        self.lock()
            .records
            .iter()
            .filter(|r| r.callback == callback)
            .count()
    }

    /// The most effects (converge/delete) ever running at once for one profile.
    pub fn max_concurrent_effects(&self) -> usize {
        self.lock().max_concurrent_effects
    }

    /// From now on, effects wait at a gate until [`FakeInfra::release`].
    pub fn hold_effects(&self) {
        *self.gate.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(Arc::new(Semaphore::new(0)));
    }

    /// Lets `n` held effects through.
    pub fn release(&self, n: usize) {
        if let Some(gate) = &*self.gate.lock().unwrap_or_else(PoisonError::into_inner) {
            gate.add_permits(n);
        }
    }

    /// How many effects have started so far (held or not).
    pub fn effects_started_count(&self) -> usize {
        *self.entered.borrow()
    }

    /// How many effects stopped waiting at the gate because their pass
    /// was dropped (a simulated crash, see [`Crash`](crate::Crash)).
    pub fn effects_abandoned(&self) -> usize {
        self.lock().abandoned
    }

    /// Waits until at least `n` effects have started (held or not).
    pub async fn effects_started(&self, n: usize) {
        let mut rx = self.entered.subscribe();
        let _ = rx.wait_for(|started| *started >= n).await;
    }

    /// A package for `descriptor` over this infrastructure, with async callbacks.
    pub fn package(&self, descriptor: ResourceDescriptor) -> Package {
        self.build(descriptor, false)
    }

    /// The same package with synchronous callbacks (run on blocking threads).
    pub fn sync_package(&self, descriptor: ResourceDescriptor) -> Package {
        self.build(descriptor, true)
    }

    /// The async package, with `declare` applied to its builder before the
    /// callbacks are set: related kinds, references, outputs.
    ///
    /// ```
    /// use blue_kubernetes::related::Related;
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// let infra = blue_testkit::FakeInfra::new();
    /// let config_maps = ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap");
    /// let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// let package = infra.package_with(widgets, |b| b.related(Related::owned(config_maps)));
    /// # let _ = package;
    /// ```
    pub fn package_with(
        &self,
        descriptor: ResourceDescriptor,
        declare: impl FnOnce(PackageBuilder) -> PackageBuilder,
    ) -> Package {
        self.build_declared(declare(Package::builder(descriptor)), false, false)
    }

    fn begin(&self, callback: Callback, options: &CallbackInput) -> Option<Misbehaviour> {
        let mut s = self.lock();
        s.records.push(Record {
            callback,
            profile: options.profile().into(),
            event: options.intent().as_str().into(),
        });
        s.scripted.get_mut(&callback).and_then(VecDeque::pop_front)
    }

    fn validate(&self, o: &CallbackInput) -> Result<Vec<String>, CallbackError> {
        let scripted = self.begin(Callback::Validate, o);
        misbehave(scripted)?;
        Ok(match o.get("invalid") {
            Some(Value::Bool(true)) => vec![format!("invalid: {PLANTED_SECRET}")],
            _ => vec![],
        })
    }

    fn identity_of(&self, o: &CallbackInput) -> Result<Vec<Option<String>>, CallbackError> {
        let scripted = self.begin(Callback::Identity, o);
        misbehave(scripted)?;
        Ok(self.identity(o.profile()))
    }

    /// What `profile` holds; a stepped package sees it match only once
    /// its `verify` step verified it.
    fn observe(&self, o: &CallbackInput, stepped: bool) -> Result<Observation, CallbackError> {
        let scripted = self.begin(Callback::Observe, o);
        misbehave(scripted)?;
        let s = self.lock();
        let current = s.items.get(o.profile());
        let verified = !stepped || s.verified.get(o.profile()) == current;
        let observed = Observation::new(
            current.is_some(),
            current == Some(&desired(o)) && verified,
            current.is_some() && !s.unready.get(o.profile()).copied().unwrap_or(false),
        );
        Ok(match s.outputs.get(o.profile()) {
            Some(outputs) => observed.with_outputs(outputs),
            None => observed,
        })
    }

    fn effect(&self, step: Callback, o: &CallbackInput) -> Result<WorkflowOutcome, CallbackError> {
        let scripted = self.begin(step, o);
        if let Some(Misbehaviour::Exit(code)) = scripted {
            let mut outcome = WorkflowOutcome::new();
            outcome.insert("blue/exit".into(), code.into());
            outcome.insert("log".into(), PLANTED_SECRET.into());
            return Ok(outcome);
        }
        misbehave(scripted)?;
        let mut s = self.lock();
        match step {
            Callback::Delete => s.items.remove(o.profile()),
            _ => s.items.insert(o.profile().into(), desired(o)),
        };
        Ok(WorkflowOutcome::new())
    }

    /// Marks an effect active, waits at the gate, runs it, marks it done.
    async fn run_effect(
        &self,
        step: Callback,
        o: CallbackInput,
    ) -> Result<WorkflowOutcome, CallbackError> {
        let done = self.activate(o.profile());
        self.wait_at_gate().await;
        let result = self.effect(step, &o);
        drop(done);
        result
    }

    /// Counts an effect active for `profile` until the guard drops (also
    /// when it panics or its pass is dropped).
    fn activate(&self, profile: &str) -> ActiveGuard<'_> {
        let mut s = self.lock();
        let active = s.active_effects.entry(profile.to_string()).or_default();
        *active += 1;
        let now = *active;
        s.max_concurrent_effects = s.max_concurrent_effects.max(now);
        ActiveGuard(self, profile.to_string())
    }

    /// Counts an effect started and waits at the gate, if effects are held.
    async fn wait_at_gate(&self) {
        self.entered.send_modify(|n| *n += 1);
        let gate = self
            .gate
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(gate) = gate {
            let mut waiting = Abandoned(self, true);
            if let Ok(permit) = gate.acquire().await {
                permit.forget();
            }
            waiting.1 = false;
        }
    }

    fn build(&self, descriptor: ResourceDescriptor, sync: bool) -> Package {
        self.build_with(descriptor, sync, false)
    }

    fn build_with(&self, descriptor: ResourceDescriptor, sync: bool, stepped: bool) -> Package {
        self.build_declared(Package::builder(descriptor), sync, stepped)
    }

    fn build_declared(&self, builder: PackageBuilder, sync: bool, stepped: bool) -> Package {
        let builder = if stepped { builder.steps() } else { builder };
        let (a, b, c) = (self.clone(), self.clone(), self.clone());
        let (d, e) = (self.clone(), self.clone());
        let builder = if sync {
            builder
                .validate(move |o| a.validate(o))
                .identity(move |o| b.identity_of(o))
                .observe(move |o| c.observe(o, stepped))
                .converge(move |o| match stepped {
                    true => d.converge_steps_blocking(o),
                    false => block_on(d.run_effect(Callback::Converge, o.clone())),
                })
                .delete(move |o| match stepped {
                    true => e.delete_steps_blocking(o),
                    false => block_on(e.run_effect(Callback::Delete, o.clone())),
                })
        } else {
            builder
                .validate_async(move |o| {
                    let a = a.clone();
                    async move { a.validate(&o) }
                })
                .identity_async(move |o| {
                    let b = b.clone();
                    async move { b.identity_of(&o) }
                })
                .observe_async(move |o| {
                    let c = c.clone();
                    async move { c.observe(&o, stepped) }
                })
                .converge_async(move |o| {
                    let d = d.clone();
                    async move {
                        match stepped {
                            true => d.converge_steps(o).await,
                            false => d.run_effect(Callback::Converge, o).await,
                        }
                    }
                })
                .delete_async(move |o| {
                    let e = e.clone();
                    async move {
                        match stepped {
                            true => e.delete_steps(o).await,
                            false => e.run_effect(Callback::Delete, o).await,
                        }
                    }
                })
        };
        builder.build().expect("all callbacks are set")
    }
}

/// Runs `f` to completion from a synchronous callback's blocking thread.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Handle::current().block_on(f)
}

/// Counts an effect abandoned at the gate when its wait is dropped.
struct Abandoned<'a>(&'a FakeInfra, bool);

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if self.1 {
            self.0.lock().abandoned += 1;
        }
    }
}

/// Decrements the active-effect count even when the effect panics.
struct ActiveGuard<'a>(&'a FakeInfra, String);

impl Drop for ActiveGuard<'_> {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        if let Some(n) = s.active_effects.get_mut(&self.1) {
            *n -= 1;
        }
    }
}

/// The value a resource asks for: `spec.config.value` (null when absent).
pub fn desired(options: &CallbackInput) -> Value {
    options.get("value").cloned().unwrap_or(Value::Null)
}

fn misbehave(scripted: Option<Misbehaviour>) -> Result<(), CallbackError> {
    match scripted {
        Some(Misbehaviour::Error) => Err(format!("callback failed: {PLANTED_SECRET}").into()),
        Some(Misbehaviour::Panic) => panic!("callback panicked: {PLANTED_SECRET}"),
        _ => Ok(()),
    }
}
