//! The world of the sharding property (`sharding.rs`): widgets over one
//! [`FakeCluster`], several sharded [`Runtime`] replicas, each behind its
//! own [`Wire`] (a client hook that can cut it off or kill it), and the
//! [`Ledger`] of every callback run and every status or finalizer write.
//!
//! One process, not several: the identity lock is process-wide, so a
//! replica that finds a widget's identity held by another one's pass gets
//! `Busy` here where separate processes would run it twice. The ledger
//! therefore also asks for more than "never in flight twice": a callback
//! runs from start to end in the replica the shard's Lease names, which
//! separate processes need for the same guarantee. (Each replica must
//! return the same identity: the controller records its hash in status
//! and a different one is `ImmutableStateIdentity`.)
//!
//! What the ledger holds against the replicas, as each thing happens:
//! - a callback starts and ends only in the replica its shard's Lease
//!   names as holder, unless its replica was cut off meanwhile (a pass
//!   that outlives the Lease: the documented caveat);
//! - no widget has callbacks in flight in two replicas, except such a
//!   zombie and a newer owner holding a greater fencing token;
//! - a status or finalizer write lands only while the writer is named
//!   holder of the widget's shard Lease.

pub use crate::common::sharding::{lock, profile};
use crate::common::{sharding, spec, widgets, NS};
use blue_kubernetes::config::Clock;
use blue_kubernetes::package::NoOutputs;
use blue_kubernetes::replicas::{FencingToken, ShardingConfig};
use blue_kubernetes::{
    async_trait, CallbackResult, Config, Context, IdentityContext, Infrastructure, Observation,
    Outcome, Package, ResourceSchema, Runtime,
};
use blue_kubernetes_client::{Answer, Call, Client, Error, Hook, Layered};
use blue_testkit::{FakeCluster, Fault, Operation};
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;

pub const SHARDS: u32 = 4;
/// Room for four live replicas and the slots of dead ones until they expire.
pub const MAX_MEMBERS: u32 = 8;
pub const MAX_LIVE: usize = 4;
pub const LEASE_MS: u64 = 3_000;
pub const RENEW_MS: u64 = 2_000;
pub const RETRY_PERIOD_MS: u64 = 500;
pub const POLL_MS: u64 = 500;
pub const RETRY_MAX_MS: u64 = 2_000;
/// Short, so the liveness wait can include one resync (the backstop for
/// a lost watch event) without advancing minutes of paused time.
pub const RESYNC_MS: u64 = 10_000;
pub const NAMES: [&str; 5] = ["w0", "w1", "w2", "w3", "w4"];
/// Numbers each case's own identity system (see [`Ledger::system`]).
static CASES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn settings(identity: &str) -> ShardingConfig {
    let mut s = sharding::settings("shard-model", SHARDS, MAX_MEMBERS, identity);
    s.lease.lease_duration_ms = LEASE_MS;
    s.lease.renew_deadline_ms = RENEW_MS;
    s.lease.retry_period_ms = RETRY_PERIOD_MS;
    s
}

/// One callback run.
#[derive(Clone, Debug)]
pub struct Run {
    pub replica: String,
    pub profile: String,
    /// Named in the violations (their Debug output) only.
    #[allow(dead_code)]
    pub callback: &'static str,
    pub start: Instant,
    /// `None` while in flight.
    pub end: Option<Instant>,
    pub token: Option<FencingToken>,
    /// Its replica was cut off at some point while it ran: it may outlive
    /// the Lease it started under.
    pub zombie: bool,
}

impl Run {
    /// Whether it and `other` were in flight at once on the paused clock.
    pub fn overlaps(&self, other: &Run) -> bool {
        let (a_end, b_end) = (
            self.end.unwrap_or(Instant::now()),
            other.end.unwrap_or(Instant::now()),
        );
        self.start < b_end && other.start < a_end
    }
}

/// Whether `later` may be in flight in another replica next to `earlier`:
/// only a zombie may be overtaken, and only under a greater token.
pub fn may_overlap(earlier: &Run, later: &Run) -> bool {
    earlier.zombie && later.token > earlier.token
}

#[derive(Default)]
struct State {
    runs: Vec<Run>,
    violations: Vec<String>,
    /// The infrastructure: profile -> value converged.
    items: HashMap<String, Value>,
    /// Converges still to come that hold this long, per profile.
    holds: HashMap<String, VecDeque<u64>>,
    cut: BTreeSet<String>,
    dead: BTreeSet<String>,
    /// (replica, profile): a pass there outlived its replica's cut.
    zombies: BTreeSet<(String, String)>,
    /// (replica, widget) -> the holder named as its write went out.
    writing: HashMap<(String, String), Option<String>>,
    writes_landed: usize,
}

/// The shared record of the case, and the widgets' infrastructure.
pub struct Ledger {
    pub cluster: FakeCluster,
    /// The first element of every identity of this case: no other case's
    /// or test's, since the identity lock is process-wide and the tests of
    /// this binary run in parallel (a shared one made a replica here find
    /// a widget `Busy` while another test's pass held it).
    system: String,
    state: Mutex<State>,
    /// Wakes held converges when a replica dies.
    died: tokio::sync::Notify,
}

impl Ledger {
    pub fn new(cluster: &FakeCluster) -> Arc<Self> {
        let case = CASES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Arc::new(Self {
            cluster: cluster.clone(),
            system: format!("shard-model-{case}"),
            state: Mutex::default(),
            died: tokio::sync::Notify::new(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The shard `profile`'s widget lands in.
    pub fn shard_of(&self, profile: &str) -> u32 {
        sharding::shard_of(&settings("any"), &self.system, profile)
    }

    /// The holder the Lease of `profile`'s shard names now.
    pub fn holder(&self, profile: &str) -> Option<String> {
        let lease = settings("any").shard_lease_name(self.shard_of(profile));
        let lease = self.cluster.lease(NS, &lease)?;
        lease.spec.holder().map(str::to_owned)
    }

    pub fn violations(&self) -> Vec<String> {
        self.state().violations.clone()
    }

    pub fn runs(&self) -> Vec<Run> {
        self.state().runs.clone()
    }

    pub fn writes_landed(&self) -> usize {
        self.state().writes_landed
    }

    pub fn item(&self, profile: &str) -> Option<Value> {
        self.state().items.get(profile).cloned()
    }

    pub fn is_dead(&self, replica: &str) -> bool {
        self.state().dead.contains(replica)
    }

    pub fn is_cut(&self, replica: &str) -> bool {
        self.state().cut.contains(replica)
    }

    pub fn hold_next(&self, profile: &str, ms: u64) {
        let mut state = self.state();
        state.holds.entry(profile.into()).or_default().push_back(ms);
    }

    /// Cuts `replica` off (every call fails) or heals it. Its passes in
    /// flight may outlive their Leases from now on.
    pub fn set_cut(&self, replica: &str, cut: bool) {
        let mut state = self.state();
        if !cut {
            state.cut.remove(replica);
            return;
        }
        state.cut.insert(replica.into());
        let State { runs, zombies, .. } = &mut *state;
        for run in runs
            .iter_mut()
            .filter(|r| r.replica == replica && r.end.is_none())
        {
            run.zombie = true;
            zombies.insert((run.replica.clone(), run.profile.clone()));
        }
    }

    /// `replica`'s process died: its callbacks end with it, and nothing it
    /// sends arrives any more.
    pub fn kill(&self, replica: &str) {
        let mut state = self.state();
        state.dead.insert(replica.into());
        let now = Instant::now();
        for run in state.runs.iter_mut().filter(|r| r.replica == replica) {
            run.end.get_or_insert(now);
        }
        drop(state);
        self.died.notify_waiters();
    }

    /// A callback starts: judged against the Lease and the runs in flight.
    fn begin(
        &self,
        replica: &str,
        profile: &str,
        callback: &'static str,
        token: Option<FencingToken>,
    ) -> usize {
        let holder = self.holder(profile);
        let mut state = self.state();
        let key = (replica.to_owned(), profile.to_owned());
        let held = holder.as_deref() == Some(replica);
        if held {
            state.zombies.remove(&key);
        }
        if state.cut.contains(replica) {
            state.zombies.insert(key.clone());
        }
        let run = Run {
            replica: replica.into(),
            profile: profile.into(),
            callback,
            start: Instant::now(),
            end: None,
            token,
            zombie: state.zombies.contains(&key),
        };
        if !held && !run.zombie {
            let v = format!("{run:?} started while the shard Lease names {holder:?}");
            state.violations.push(v);
        }
        if token.is_none() {
            state
                .violations
                .push(format!("{run:?} has no fencing token"));
        }
        let clashes: Vec<String> = (state.runs.iter())
            .filter(|r| r.end.is_none() && r.profile == profile && r.replica != replica)
            .filter(|r| !may_overlap(r, &run))
            .map(|r| format!("{profile} in flight in two replicas: {r:?} and {run:?}"))
            .collect();
        state.violations.extend(clashes);
        state.runs.push(run);
        state.runs.len() - 1
    }

    fn end(&self, index: usize) {
        let mut state = self.state();
        let run = &mut state.runs[index];
        run.end.get_or_insert(Instant::now());
        let holder = self.holder(&run.profile);
        if !run.zombie && holder.as_deref() != Some(run.replica.as_str()) {
            let v = format!("{run:?} ended while the shard Lease names {holder:?}");
            state.violations.push(v);
        }
    }

    fn next_hold(&self, profile: &str) -> u64 {
        let mut state = self.state();
        let holds = state.holds.get_mut(profile);
        holds.and_then(VecDeque::pop_front).unwrap_or(0)
    }

    /// A write of `replica`'s reaches the cluster.
    fn write_begins(&self, replica: &str, name: &str) {
        let holder = self.holder(&profile(name));
        let key = (replica.to_owned(), name.to_owned());
        self.state().writing.insert(key, holder);
    }

    fn write_ends(&self, replica: &str, name: &str, landed: bool) {
        let mut state = self.state();
        let key = (replica.to_owned(), name.to_owned());
        let holder = state.writing.remove(&key).flatten();
        if !landed {
            return;
        }
        state.writes_landed += 1;
        if holder.as_deref() != Some(replica) {
            let v = format!("a fenced write landed: {replica} wrote {name} while its shard Lease named {holder:?}");
            state.violations.push(v);
        }
    }
}

/// One replica's connection to the API server: cut off or dead (every
/// call fails `Unavailable`), or through, with its writes audited.
struct Wire {
    replica: String,
    ledger: Arc<Ledger>,
}

fn written_name(call: &Call<'_>) -> Option<String> {
    match *call {
        Call::UpdateStatus { resource, .. } | Call::UpdateFinalizers { resource, .. } => {
            resource["metadata"]["name"].as_str().map(str::to_owned)
        }
        _ => None,
    }
}

#[async_trait::async_trait]
impl Hook for Wire {
    async fn before(&self, call: &Call<'_>) -> Result<(), Error> {
        if self.ledger.is_dead(&self.replica) || self.ledger.is_cut(&self.replica) {
            return Err(Fault::Unavailable.error(Operation::Get));
        }
        if let Some(name) = written_name(call) {
            self.ledger.write_begins(&self.replica, &name);
        }
        Ok(())
    }

    fn after(&self, call: &Call<'_>, result: Result<Answer<'_>, &Error>, _: Duration) {
        if let Some(name) = written_name(call) {
            self.ledger.write_ends(&self.replica, &name, result.is_ok());
        }
    }
}

/// A dead process runs nothing: its callbacks fail at once, and one in
/// flight when it dies ends then. (Failing, not hanging: the pass must end
/// to drop the process-wide identity lock, which a real death frees.)
fn dead() -> CallbackResult<()> {
    Err("the process is dead".into())
}

async fn observe(ledger: &Ledger, replica: &str, o: &Cx) -> CallbackResult<Observation<NoOutputs>> {
    if ledger.is_dead(replica) {
        dead()?;
    }
    let run = ledger.begin(replica, o.profile(), "observe", o.fencing_token());
    // In flight across a yield, so runs that interleave are seen.
    tokio::task::yield_now().await;
    if ledger.is_dead(replica) {
        dead()?;
    }
    let current = ledger.item(o.profile());
    ledger.end(run);
    let (exists, matches) = (
        current.is_some(),
        current.as_ref() == o.config().get("value"),
    );
    Ok(Observation::new(exists, matches, exists))
}

async fn converge(ledger: &Ledger, replica: &str, o: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
    let died = ledger.died.notified();
    tokio::pin!(died);
    died.as_mut().enable();
    if ledger.is_dead(replica) {
        dead()?;
    }
    let profile = o.profile().to_owned();
    let run = ledger.begin(replica, &profile, "converge", o.fencing_token());
    let hold = Duration::from_millis(ledger.next_hold(&profile));
    tokio::select! {
        _ = tokio::time::sleep(hold) => {}
        _ = died => {}
    }
    tokio::task::yield_now().await;
    if ledger.is_dead(replica) {
        dead()?;
    }
    let value = o.config().get("value").cloned().unwrap_or(Value::Null);
    ledger.state().items.insert(profile, value);
    ledger.end(run);
    Ok(Outcome::done())
}

fn package(ledger: &Arc<Ledger>, replica: &str) -> Package {
    let replica = Replica {
        ledger: ledger.clone(),
        name: replica.to_owned(),
    };
    Package::new(replica).expect("a structural package")
}

type Fields = Map<String, Value>;
type Cx = Context<Fields>;

/// The widgets' package as one replica runs it.
struct Replica {
    ledger: Arc<Ledger>,
    name: String,
}

#[async_trait]
impl Infrastructure for Replica {
    type Config = Fields;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(widgets())
    }

    async fn identity(&self, cx: &IdentityContext<Fields>) -> CallbackResult<Vec<Option<String>>> {
        Ok(sharding::identity(&self.ledger.system, cx.profile()))
    }

    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<NoOutputs>> {
        observe(&self.ledger, &self.name, cx).await
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        converge(&self.ledger, &self.name, cx).await
    }

    async fn delete(&self, _: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }
}

/// Starts replica `name` (a fresh identity: a restarted pod is a new
/// holder) behind its own wire, on the case's clock.
pub fn start_replica(
    cluster: &FakeCluster,
    ledger: &Arc<Ledger>,
    clock: &Clock,
    name: &str,
) -> Runtime {
    let inner: Arc<dyn Client> = Arc::new(cluster.clone());
    let wire = Wire {
        replica: name.into(),
        ledger: ledger.clone(),
    };
    let client: Arc<dyn Client> = Arc::new(Layered::new(inner, wire));
    let mut config = Config::new(client, vec![package(ledger, name)]);
    config.namespace = NS.into();
    config.now = clock.clone();
    config.poll_ms = POLL_MS;
    config.retry_base_ms = 250;
    config.retry_max_ms = RETRY_MAX_MS;
    config.resync_ms = RESYNC_MS;
    config.sharding = Some(settings(name));
    blue_kubernetes::start(blue_kubernetes::controller(config).expect("valid config"))
        .expect("inside a runtime")
}

/// Creates widget `name` with `value`, or sets its value if it exists.
pub fn write_widget(cluster: &FakeCluster, name: &str, value: u8) {
    match cluster.get(&widgets(), NS, name) {
        None => {
            cluster.create(&widgets(), NS, name, spec(json!(value)));
        }
        Some(_) => {
            cluster.edit_spec(&widgets(), NS, name, |s| {
                s["config"]["value"] = json!(value)
            });
        }
    }
}
