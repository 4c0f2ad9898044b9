//! A recording package over fake infrastructure, for controller and package
//! tests: an [`Infrastructure`](blue_kubernetes::Infrastructure), as users
//! write packages (`typed`), and the same callbacks in the closure form
//! (`closures`), which keeps that form's contract covered.

mod closures;
mod stepped;
mod typed;

pub use stepped::{StepRun, CONVERGE_STEPS, DELETE_STEPS};

use blue_kubernetes::package::{CallbackError, CallbackInput};
use blue_kubernetes::Observation;
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
    /// Ends with this exit code (converge and delete only): the closure
    /// form returns a workflow outcome with this `blue/exit`; a trait
    /// package, which has no exit code, fails for a non-zero code (an
    /// error holding [`PLANTED_SECRET`]) and succeeds for 0. Either way
    /// without its effect.
    Exit(i64),
}

/// One recorded callback invocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Which callback ran.
    pub callback: Callback,
    /// The profile it ran for.
    pub profile: String,
    /// The `blue/event` it saw (empty for a trait package's `identity`,
    /// which is not told the event).
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

    /// Makes `observe` of `profile` report `outputs` (an object) with its
    /// observation (`status.outputs` of its resource), until changed.
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

    fn begin(&self, callback: Callback, profile: &str, event: &str) -> Option<Misbehaviour> {
        let mut s = self.lock();
        s.records.push(Record {
            callback,
            profile: profile.into(),
            event: event.into(),
        });
        s.scripted.get_mut(&callback).and_then(VecDeque::pop_front)
    }

    fn validate(&self, call: &Call) -> Result<Vec<String>, CallbackError> {
        let scripted = self.begin(Callback::Validate, call.profile, call.event);
        misbehave(scripted)?;
        Ok(match call.invalid {
            true => vec![format!("invalid: {PLANTED_SECRET}")],
            false => vec![],
        })
    }

    fn identity_of(
        &self,
        profile: &str,
        event: &str,
    ) -> Result<Vec<Option<String>>, CallbackError> {
        let scripted = self.begin(Callback::Identity, profile, event);
        misbehave(scripted)?;
        Ok(self.identity(profile))
    }

    /// What `profile` holds, and the outputs to report with it; a stepped
    /// package sees it match only once its `verify` step verified it.
    fn observe<O>(&self, call: &Call, stepped: bool) -> Result<Seen<O>, CallbackError> {
        let scripted = self.begin(Callback::Observe, call.profile, call.event);
        misbehave(scripted)?;
        let s = self.lock();
        let current = s.items.get(call.profile);
        let verified = !stepped || s.verified.get(call.profile) == current;
        let observed = Observation::new(
            current.is_some(),
            current == Some(&call.desired) && verified,
            current.is_some() && !s.unready.get(call.profile).copied().unwrap_or(false),
        );
        Ok((observed, s.outputs.get(call.profile).cloned()))
    }

    fn effect(&self, step: Callback, call: &Call) -> Result<Ended, CallbackError> {
        let scripted = self.begin(step, call.profile, call.event);
        if let Some(Misbehaviour::Exit(code)) = scripted {
            return Ok(Ended::Exit(code));
        }
        misbehave(scripted)?;
        let mut s = self.lock();
        match step {
            Callback::Delete => s.items.remove(call.profile),
            _ => s.items.insert(call.profile.into(), call.desired.clone()),
        };
        Ok(Ended::Done)
    }

    /// Marks an effect active, waits at the gate, runs it, marks it done.
    async fn run_effect(&self, step: Callback, call: &Call<'_>) -> Result<Ended, CallbackError> {
        let done = self.activate(call.profile);
        self.wait_at_gate().await;
        let result = self.effect(step, call);
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
}

/// What a recording callback reads of its call, in either form.
struct Call<'a> {
    profile: &'a str,
    /// The intent, as `blue/event` names it.
    event: &'static str,
    uid: &'a str,
    generation: i64,
    /// `spec.config.value` (null when absent).
    desired: Value,
    /// `spec.config.invalid` is `true`.
    invalid: bool,
}

/// An observation, and the outputs its form attaches.
type Seen<O> = (Observation<O>, Option<Value>);

/// How an effect ended, before its form says so.
enum Ended {
    Done,
    /// A scripted [`Misbehaviour::Exit`].
    Exit(i64),
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
