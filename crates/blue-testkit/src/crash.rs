//! Simulated crashes: the operator's process dying at a chosen point of a
//! pass, for testing a package's durable steps.
//!
//! A [`Crash`] sits in front of the controller's client. Armed with a
//! [`CrashAt`], it stops the pass at that point: the chosen status write
//! lands (or not) and its answer never comes back, so nothing after it
//! runs. [`Crash::run`] drives a pass and returns `None` when it crashed;
//! the pass's future is dropped there, which is what a dead process does
//! to it (no later write, no later step, the identity lock gone with it).
//! Restart by building a new controller over the same client: nothing of
//! the old one's memory survives, exactly what the record in
//! `status.workflow` must make up for. Drive async callbacks this way: a
//! sync one runs on a blocking thread that cannot be dropped.

use blue_kubernetes_client::{Call, Client, Error, Hook, Layered};
use serde_json::Value;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::watch;

/// Where an armed [`Crash`] stops a pass. Status writes are counted from
/// the moment it is armed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CrashAt {
    /// Just after the status write that records step `name` `Running`
    /// has landed: the step's closure never starts.
    StepStarted(String),
    /// Just before the status write that would record step `name` `Done`:
    /// the step ran (its effect happened), its record never lands.
    StepEnded(String),
    /// Just after the `n`-th status write (from 1) has landed.
    AfterStatusWrite(usize),
    /// Just before the `n`-th status write (from 1): it never lands.
    BeforeStatusWrite(usize),
}

/// A crash switch in front of a client. Cheap to clone; clones share it.
///
/// ```
/// use blue_testkit::{Crash, CrashAt, FakeCluster};
/// use std::sync::Arc;
/// let crash = Crash::new();
/// let client = crash.client(Arc::new(FakeCluster::new()));
/// crash.arm(CrashAt::StepEnded("role".into()));
/// assert!(!crash.crashed());
/// # drop(client);
/// ```
#[derive(Clone, Debug)]
pub struct Crash {
    state: Arc<Mutex<State>>,
    tripped: Arc<watch::Sender<bool>>,
}

#[derive(Debug, Default)]
struct State {
    armed: Option<CrashAt>,
    writes: usize,
}

impl Default for Crash {
    fn default() -> Self {
        Self::new()
    }
}

impl Crash {
    /// An unarmed switch.
    pub fn new() -> Self {
        Self {
            state: Arc::default(),
            tripped: Arc::new(watch::channel(false).0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `client` with this switch in front: give it to the controller (and
    /// to the restarted one).
    pub fn client(&self, client: Arc<dyn Client>) -> Arc<dyn Client> {
        let hook = CrashHook {
            crash: self.clone(),
            inner: client.clone(),
        };
        Arc::new(Layered::new(client, hook))
    }

    /// Arms the switch: the next pass to reach `at` dies there. Counting
    /// status writes starts now; a crash that happened is forgotten.
    pub fn arm(&self, at: CrashAt) {
        let mut state = self.lock();
        state.armed = Some(at);
        state.writes = 0;
        self.tripped.send_replace(false);
    }

    /// Disarms the switch without a crash.
    pub fn disarm(&self) {
        self.lock().armed = None;
    }

    /// Disarms the switch and forgets a crash that happened, as a
    /// restarted process starts: [`run`](Self::run) then drives a pass to
    /// its end again.
    pub fn reset(&self) {
        *self.lock() = State::default();
        self.tripped.send_replace(false);
    }

    /// Whether the armed crash happened.
    pub fn crashed(&self) -> bool {
        *self.tripped.borrow()
    }

    /// Drives `pass` (say, a `reconcile` future) until it finishes
    /// (`Some`) or the process "dies" (`None`): then `pass` is dropped
    /// where it stood.
    pub async fn run<T>(&self, pass: impl Future<Output = T>) -> Option<T> {
        let mut tripped = self.tripped.subscribe();
        tokio::select! {
            done = pass => Some(done),
            _ = tripped.wait_for(|t| *t) => None,
        }
    }

    /// Dies here, inside a step (or anywhere in a callback): call it from
    /// your fake infrastructure where the process should die, e.g. after
    /// the effect and before the step returns. Never returns.
    pub async fn here(&self) -> std::convert::Infallible {
        self.now();
        std::future::pending().await
    }

    /// Dies now: the pass [`run`](Self::run) drives is dropped where it
    /// stands (at its next yield), whatever is armed. For a test that
    /// decides from outside the pass, e.g. while a step is held.
    pub fn now(&self) {
        self.lock().armed = None;
        self.tripped.send_replace(true);
    }

    /// Whether the status write from `resource` to `status` is where the
    /// armed crash strikes, and if so whether the write lands first.
    fn strikes(&self, resource: &Value, status: &Value) -> Option<Lands> {
        let mut state = self.lock();
        let armed = state.armed.clone()?;
        state.writes += 1;
        let before = resource.get("status").unwrap_or(&Value::Null);
        match armed {
            CrashAt::StepStarted(name) => {
                let now = step(status, &name);
                let running = now.is_some_and(|s| s["state"] == "Running");
                (running && now != step(before, &name)).then_some(Lands::Yes)
            }
            CrashAt::StepEnded(name) => {
                let done = |s: &Value| step(s, &name).is_some_and(|s| s["state"] == "Done");
                (done(status) && !done(before)).then_some(Lands::No)
            }
            CrashAt::AfterStatusWrite(n) => (state.writes == n).then_some(Lands::Yes),
            CrashAt::BeforeStatusWrite(n) => (state.writes == n).then_some(Lands::No),
        }
    }
}

/// Whether the write a crash strikes at lands.
enum Lands {
    Yes,
    No,
}

/// Step `name`'s entry in a status's durable-steps record.
fn step<'a>(status: &'a Value, name: &str) -> Option<&'a Value> {
    status
        .pointer("/workflow/steps")?
        .as_array()?
        .iter()
        .find(|s| s["name"] == name)
}

struct CrashHook {
    crash: Crash,
    inner: Arc<dyn Client>,
}

#[async_trait::async_trait]
impl Hook for CrashHook {
    async fn before(&self, call: &Call<'_>) -> Result<(), Error> {
        let Call::UpdateStatus {
            descriptor,
            resource,
            status,
        } = *call
        else {
            return Ok(());
        };
        let Some(lands) = self.crash.strikes(resource, status) else {
            return Ok(());
        };
        if let Lands::Yes = lands {
            // The write reaches the server; its answer dies with the process.
            let _ = self.inner.update_status(descriptor, resource, status).await;
        }
        match self.crash.here().await {}
    }
}
