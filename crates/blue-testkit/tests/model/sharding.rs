//! The sharding property: two to four [`Runtime`] replicas with
//! [`Config::sharding`](blue_kubernetes::Config::sharding) (4 shards,
//! 3 s leases) over one fake cluster, under random sequences of replica
//! starts, graceful stops (`Runtime::stop`, as on SIGTERM, running while
//! the case goes on), crashes (the process dies: its calls and callbacks
//! never come back, nothing is released), partitions and heals (every
//! call of one replica fails `Unavailable`), time advances, widget
//! creates and edits, and slow converges (one that holds for a drawn
//! time). The world is `sharding_world.rs`.
//!
//! Safety, after every step (the ledger judges each callback and write
//! as it happens; see `sharding_world.rs`):
//! - no widget is in flight in two replicas at once on the paused clock,
//!   but for a pass that outlived its Lease while its replica was cut off
//!   (the documented caveat) and a newer owner with a greater fencing
//!   token;
//! - a callback starts only in the replica its shard's Lease names;
//! - no fenced write lands: every status and finalizer write that reaches
//!   the cluster is made while the writer is named in the shard Lease;
//! - the running replicas dispatch disjoint shards, and per shard the
//!   fencing token never falls and grows whenever the replica changes.
//!
//! Liveness, at the end: everything healed, a replica running, and time
//! for dead members to expire and membership to settle: every shard is
//! dispatched by exactly one running replica, every widget is Ready for
//! its latest generation with its value converged, and every graceful
//! stop (those begun in the case, then every replica's) has finished.
//!
//! Paused tokio time moves when every task waits (the driver sleeps
//! through advances); a runtime that spins would stop it, so each case
//! runs under the wall-clock watchdog of `common/watchdog.rs`.

use crate::common::watchdog;
use crate::common::{widgets, NS};
use crate::liveness::ready_for_its_generation;
use crate::sharding_world::{
    profile, start_replica, write_widget, Ledger, Run, LEASE_MS, MAX_LIVE, NAMES, POLL_MS,
    RESYNC_MS, RETRY_MAX_MS, RETRY_PERIOD_MS, SHARDS,
};
use blue_kubernetes::config::Clock;
use blue_kubernetes::Runtime;
use blue_testkit::FakeCluster;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// The longest a slow converge holds: past a lease, so a cut-off
/// replica's pass outlives its Lease.
const MAX_HOLD_MS: u64 = 2 * LEASE_MS;
/// Wall time per case: a case takes well under a second.
const WALL_LIMIT: Duration = Duration::from_secs(30);

/// Cases by default: each starts real runtimes, so fewer than the other
/// properties run; `PROPTEST_CASES` sets it as for them.
const DEFAULT_CASES: u32 = 16;

pub fn cases() -> u32 {
    std::env::var_os("PROPTEST_CASES").map_or(DEFAULT_CASES, |_| crate::cases())
}

#[derive(Clone, Copy, Debug)]
pub enum ShardOp {
    /// A new replica (a new identity) starts, if fewer than four run.
    Start,
    /// The `n`-th running replica is stopped gracefully.
    Stop(u8),
    /// The `n`-th live (running or stopping) replica dies.
    Crash(u8),
    /// The `n`-th live replica is cut off from the API server.
    Partition(u8),
    /// The `n`-th cut-off replica is reachable again.
    Heal(u8),
    Advance(u64),
    /// Widget `n` is created with a value, or its value set.
    Write(u8, u8),
    /// Widget `n`'s next converge holds this long.
    Slow(u8, u64),
}

enum State {
    Running(Runtime),
    /// `Runtime::stop` runs in a task of its own.
    Stopping(JoinHandle<()>),
    Stopped,
    /// Kept, never dropped: a dead process does nothing, not even leave.
    Dead(#[allow(dead_code)] Option<Runtime>),
}

struct Replica {
    name: String,
    state: State,
}

struct Case {
    cluster: FakeCluster,
    ledger: Arc<Ledger>,
    clock: Clock,
    replicas: Vec<Replica>,
}

impl Case {
    fn new(replicas: usize) -> Self {
        let cluster = FakeCluster::new();
        let mut case = Self {
            ledger: Ledger::new(&cluster),
            cluster,
            clock: crate::common::tokio_clock(),
            replicas: Vec::new(),
        };
        for _ in 0..replicas {
            case.start();
        }
        case
    }

    /// Starts a replica unless four are live (running, or still stopping).
    fn start(&mut self) {
        let live = (self.replicas.iter())
            .filter(|r| match &r.state {
                State::Running(_) => true,
                State::Stopping(handle) => !handle.is_finished(),
                _ => false,
            })
            .count();
        if live < MAX_LIVE {
            self.launch();
        }
    }

    fn launch(&mut self) {
        let name = format!("r{}", self.replicas.len());
        let runtime = start_replica(&self.cluster, &self.ledger, &self.clock, &name);
        let state = State::Running(runtime);
        self.replicas.push(Replica { name, state });
    }

    /// The `n`-th (modulo) replica matching `pick`.
    fn nth(&mut self, n: u8, pick: impl Fn(&Replica, &Ledger) -> bool) -> Option<&mut Replica> {
        let ledger = self.ledger.clone();
        let mut matching: Vec<&mut Replica> = self
            .replicas
            .iter_mut()
            .filter(|r| pick(r, &ledger))
            .collect();
        let count = matching.len();
        (count > 0).then(|| matching.swap_remove(n as usize % count))
    }

    fn stop(replica: &mut Replica) {
        if let State::Running(runtime) = std::mem::replace(&mut replica.state, State::Stopped) {
            replica.state = State::Stopping(tokio::spawn(runtime.stop()));
        }
    }

    async fn step(&mut self, op: ShardOp) {
        let live =
            |r: &Replica, _: &Ledger| matches!(r.state, State::Running(_) | State::Stopping(_));
        let running = |r: &Replica, _: &Ledger| matches!(r.state, State::Running(_));
        match op {
            ShardOp::Start => self.start(),
            ShardOp::Stop(n) => {
                if let Some(replica) = self.nth(n, running) {
                    Self::stop(replica);
                }
            }
            ShardOp::Crash(n) => {
                let ledger = self.ledger.clone();
                if let Some(replica) = self.nth(n, live) {
                    ledger.kill(&replica.name);
                    let runtime = match std::mem::replace(&mut replica.state, State::Stopped) {
                        State::Running(runtime) => Some(runtime),
                        _ => None,
                    };
                    replica.state = State::Dead(runtime);
                }
            }
            ShardOp::Partition(n) => {
                let ledger = self.ledger.clone();
                if let Some(replica) = self.nth(n, |r, l| live(r, l) && !l.is_cut(&r.name)) {
                    ledger.set_cut(&replica.name, true);
                }
            }
            ShardOp::Heal(n) => {
                let ledger = self.ledger.clone();
                if let Some(replica) = self.nth(n, |r, l| l.is_cut(&r.name)) {
                    ledger.set_cut(&replica.name, false);
                }
            }
            ShardOp::Advance(ms) => advance(ms).await,
            ShardOp::Write(n, value) => {
                write_widget(&self.cluster, NAMES[n as usize % NAMES.len()], value)
            }
            ShardOp::Slow(n, ms) => {
                let name = NAMES[n as usize % NAMES.len()];
                self.ledger.hold_next(&profile(name), ms);
            }
        }
        // What the step set going at this instant happens before the check.
        for _ in 0..16 {
            tokio::task::yield_now().await;
        }
    }

    fn running(&self) -> impl Iterator<Item = (&str, &Runtime)> {
        self.replicas.iter().filter_map(|r| match &r.state {
            State::Running(runtime) => Some((r.name.as_str(), runtime)),
            _ => None,
        })
    }

    /// The running replicas' shards: each shard owned by at most one.
    fn owners(&self) -> Result<BTreeMap<u32, String>, TestCaseError> {
        let mut owners = BTreeMap::new();
        for (name, runtime) in self.running() {
            for shard in runtime.shards_owned() {
                if let Some(other) = owners.insert(shard, name.to_owned()) {
                    prop_assert!(
                        false,
                        "shard {} dispatched by {} and {}",
                        shard,
                        other,
                        name
                    );
                }
            }
        }
        Ok(owners)
    }

    fn check(&self, context: &str) -> Result<(), TestCaseError> {
        let violations = self.ledger.violations();
        prop_assert!(violations.is_empty(), "{}: {:#?}", context, violations);
        self.owners()?;
        check_runs(context, &self.ledger)
    }

    /// Heals every replica, makes sure one runs, lets membership settle;
    /// then every shard has one owner, every widget is converged, and
    /// every graceful stop has finished, the final ones too.
    async fn liveness(&mut self) -> Result<(), TestCaseError> {
        for replica in &self.replicas {
            self.ledger.set_cut(&replica.name, false);
        }
        if self.running().next().is_none() {
            // Stopping ones may fill the four: one more fits the slots.
            self.launch();
        }
        // Dead members and their shards expire, zombie passes end, the
        // last failed passes retry, a reassignment drains; and the resync
        // (see `RESYNC_MS`).
        advance(4 * LEASE_MS + MAX_HOLD_MS + RETRY_MAX_MS + RESYNC_MS + 4 * POLL_MS).await;
        self.check("liveness")?;
        let owners = self.owners()?;
        prop_assert_eq!(
            owners.len(),
            SHARDS as usize,
            "shards without an owner: {:?}",
            owners
        );
        for name in NAMES {
            let Some(o) = self.cluster.get(&widgets(), NS, name) else {
                continue;
            };
            ready_for_its_generation(&format!("liveness: {name}"), &o)?;
            let item = self.ledger.item(&profile(name));
            prop_assert_eq!(
                item.as_ref(),
                Some(&o["spec"]["config"]["value"]),
                "{}",
                name
            );
        }
        let written = NAMES
            .iter()
            .any(|n| self.cluster.get(&widgets(), NS, n).is_some());
        prop_assert!(
            !written || self.ledger.writes_landed() > 0,
            "the fence check saw no write"
        );
        for replica in self.replicas.iter_mut() {
            Self::stop(replica);
        }
        advance(MAX_HOLD_MS + LEASE_MS).await;
        for replica in &self.replicas {
            if let State::Stopping(handle) = &replica.state {
                prop_assert!(
                    handle.is_finished(),
                    "{} never finished stopping",
                    replica.name
                );
            }
        }
        self.check("after the final stops")
    }
}

async fn advance(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// Per shard, in the order they started: the fencing token never falls,
/// and grows when the replica changes; no two runs of one widget in two
/// replicas overlap on the paused clock, but for an overtaken zombie.
fn check_runs(context: &str, ledger: &Ledger) -> Result<(), TestCaseError> {
    let runs = &ledger.runs();
    let mut last: BTreeMap<u32, &Run> = BTreeMap::new();
    // A zombie's token is its Lease's old one: it is overtaken, not next.
    for run in runs.iter().filter(|r| !r.zombie) {
        let shard = ledger.shard_of(&run.profile);
        if let Some(prev) = last.insert(shard, run) {
            let grows = match prev.replica == run.replica {
                true => run.token >= prev.token,
                false => run.token > prev.token,
            };
            prop_assert!(
                grows,
                "{}: shard {} token fell: {:?} then {:?}",
                context,
                shard,
                prev,
                run
            );
        }
    }
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            let apart = a.profile != b.profile || a.replica == b.replica || !a.overlaps(b);
            prop_assert!(
                apart || crate::sharding_world::may_overlap(a, b),
                "{}: in flight in two replicas at once: {:?} and {:?}",
                context,
                a,
                b
            );
        }
    }
    Ok(())
}

pub fn run_shard_case(replicas: usize, ops: Vec<ShardOp>) -> Result<(), TestCaseError> {
    let body = move || async move {
        let mut case = Case::new(replicas);
        advance(LEASE_MS).await;
        case.check("start")?;
        for (index, op) in ops.iter().enumerate() {
            case.step(*op).await;
            case.check(&format!("step {index} ({op:?})"))?;
        }
        case.liveness().await
    };
    watchdog::within(WALL_LIMIT, true, body)
        .map_err(|hung| TestCaseError::fail(format!("the case {hung}")))?
}

pub fn arb_shard_op() -> impl Strategy<Value = ShardOp> {
    let widget = 0u8..NAMES.len() as u8;
    let advance = prop_oneof![
        Just(0u64),
        Just(100),
        Just(crate::sharding_world::RETRY_PERIOD_MS),
        Just(crate::sharding_world::RENEW_MS),
        Just(LEASE_MS),
        Just(2 * LEASE_MS),
        0u64..=3 * LEASE_MS,
    ];
    prop_oneof![
        2 => Just(ShardOp::Start),
        1 => any::<u8>().prop_map(ShardOp::Stop),
        1 => any::<u8>().prop_map(ShardOp::Crash),
        2 => any::<u8>().prop_map(ShardOp::Partition),
        2 => any::<u8>().prop_map(ShardOp::Heal),
        6 => advance.prop_map(ShardOp::Advance),
        5 => (widget.clone(), 0u8..3).prop_map(|(w, v)| ShardOp::Write(w, v)),
        3 => (widget, 100u64..=MAX_HOLD_MS).prop_map(|(w, ms)| ShardOp::Slow(w, ms)),
    ]
}

/// Not sharding's: one replica (sharding or not) whose converge of a
/// watched widget holds while the user edits it. The pass's Ready write
/// conflicts; the edit, whose event arrived during the pass, is looked at
/// again at once, not at the next resync. (It used to wait for the
/// resync: the pass awaited the event of its own Reconciling publish,
/// which had arrived already, before the edit.)
#[test]
fn an_edit_during_a_slow_converge_is_handled_before_the_next_resync() {
    let body = || async {
        let mut case = Case::new(1);
        advance(LEASE_MS).await;
        case.ledger.hold_next(&profile("w1"), 3_000);
        write_widget(&case.cluster, "w1", 0);
        advance(1_000).await;
        write_widget(&case.cluster, "w1", 1);
        advance(RESYNC_MS / 2).await;
        let o = case.cluster.get(&widgets(), NS, "w1").expect("created");
        let ready = ready_for_its_generation("w1", &o);
        for replica in case.replicas.iter_mut() {
            Case::stop(replica);
        }
        advance(LEASE_MS).await;
        ready
    };
    watchdog::within(WALL_LIMIT, true, body)
        .expect("no hang")
        .expect("handled before the next resync");
}

/// The "no fenced write lands" check can fail: a replica cut off past its
/// Lease while its slow converge runs, and reachable again just before the
/// converge ends, sends the pass's Ready write after another replica took
/// the shard (by then it is still the other's, or just released to it:
/// never its own again). The fence refuses it; without the fence it lands, and the
/// ledger reports it.
#[test]
fn a_write_of_a_pass_that_outlived_its_shard_lease_is_fenced() {
    const HOLD_MS: u64 = 3 * LEASE_MS;
    let body = || async {
        let mut case = Case::new(2);
        advance(LEASE_MS).await;
        let owned: Vec<(String, Vec<u32>)> = (case.running())
            .map(|(n, r)| (n.to_owned(), r.shards_owned()))
            .collect();
        let (victim, name) = (owned.iter())
            .find_map(|(n, shards)| {
                let name = NAMES
                    .iter()
                    .find(|w| shards.contains(&case.ledger.shard_of(&profile(w))))?;
                Some((n.clone(), *name))
            })
            .expect("some widget lands in a shard a replica owns");
        case.ledger.hold_next(&profile(name), HOLD_MS);
        write_widget(&case.cluster, name, 1);
        advance(2 * POLL_MS).await;
        let slow = |l: &Ledger| {
            let runs = l.runs();
            let run = runs
                .iter()
                .find(|r| r.profile == profile(name) && r.callback == "converge");
            run.map(|r| (r.start, r.end.is_none()))
        };
        let (start, running) = slow(&case.ledger).expect("the slow converge started");
        assert!(running, "the slow converge runs in {victim}");
        case.ledger.set_cut(&victim, true);
        advance(LEASE_MS + 2 * RETRY_PERIOD_MS).await;
        let holder = case.ledger.holder(&profile(name));
        assert!(
            holder.is_some() && holder != Some(victim.clone()),
            "taken over: {holder:?}"
        );
        let ends = start + Duration::from_millis(HOLD_MS);
        tokio::time::sleep_until(ends - Duration::from_millis(1)).await;
        case.ledger.set_cut(&victim, false);
        advance(POLL_MS).await;
        assert_eq!(
            slow(&case.ledger).map(|s| s.1),
            Some(false),
            "the slow converge ended"
        );
        let violations = case.ledger.violations();
        let metrics = (case.running())
            .find(|(n, _)| *n == victim)
            .expect("the victim runs")
            .1
            .controller()
            .metrics()
            .encode();
        let fenced = (metrics.lines()).find_map(|l| {
            l.strip_prefix("blue_shard_fenced_writes_total")?
                .trim()
                .parse::<f64>()
                .ok()
        });
        for replica in case.replicas.iter_mut() {
            Case::stop(replica);
        }
        advance(MAX_HOLD_MS + LEASE_MS).await;
        assert!(violations.is_empty(), "{violations:#?}");
        assert!(
            fenced >= Some(1.0),
            "the pass's write was refused by the fence"
        );
    };
    watchdog::within(WALL_LIMIT, true, body).expect("no hang");
}
