//! The runtime with sharding: several replicas on one fake cluster split
//! the shards between them; each resource runs only in the replica holding
//! its shard's Lease; a replica cut off loses its shards to the others only
//! after they expire; a graceful handover waits for the running callback.
//! Every callback is audited (replica, identity, start, end, and who held
//! its shard's Lease at start and end). Paused tokio time drives the
//! pollers, the sharding tasks and the controller clocks; a wall-clock
//! watchdog fails a test whose runtime spins (paused time would stand still).

mod common;

use blue_kubernetes::package::NoOutputs;
use blue_kubernetes::{
    async_trait, start, CallbackResult, Config, Context, IdentityContext, Infrastructure,
    Observation, Outcome, Package, ResourceSchema, Runtime,
};

use blue_kubernetes::replicas::{FencingToken, ShardingConfig};
use blue_kubernetes_client::{Call, Client, Error, ErrorKind, Hook, Layered};
use blue_testkit::{FakeCluster, Fault, Operation};
use common::sharding::{self, lock, profile};
use common::watchdog::paused_test;
use common::*;
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;

const POLL_MS: u64 = 500;
const LD: u64 = 15_000;
const RD: u64 = 10_000;
const RP: u64 = 2_000;
const SHARDS: u32 = 8;

/// Numbers each test's own identity system (see [`Audit::system`]).
static SYSTEMS: AtomicUsize = AtomicUsize::new(0);

fn settings(replica: &str) -> ShardingConfig {
    let mut s = sharding::settings("widgets-operator", SHARDS, 4, replica);
    s.lease.retry_period_ms = RP;
    assert_eq!(
        (s.lease.lease_duration_ms, s.lease.renew_deadline_ms),
        (LD, RD)
    );
    s
}

/// One converge: who ran it, for which identity, when, with which token,
/// and who held its shard's Lease as it started and as it ended.
#[derive(Clone, Debug)]
struct Run {
    replica: String,
    profile: String,
    start: Instant,
    end: Instant,
    token: Option<FencingToken>,
    holder_at_start: Option<String>,
    holder_at_end: Option<String>,
}

/// The infrastructure every replica manages, and the audit of its runs.
struct Audit {
    cluster: FakeCluster,
    /// The first element of every identity of this test: no other test's,
    /// since the identity lock is process-wide and tests run in parallel.
    system: String,
    runs: Mutex<Vec<Run>>,
    items: Mutex<HashMap<String, Value>>,
    /// While set, converges wait for a permit.
    gate: Mutex<Option<Arc<Semaphore>>>,
    started: AtomicUsize,
}

impl Audit {
    fn new(cluster: &FakeCluster) -> Arc<Self> {
        let system = SYSTEMS.fetch_add(1, Ordering::Relaxed);
        Arc::new(Self {
            cluster: cluster.clone(),
            system: format!("audit-{system}"),
            runs: Mutex::default(),
            items: Mutex::default(),
            gate: Mutex::default(),
            started: AtomicUsize::new(0),
        })
    }

    fn holder(&self, profile: &str) -> Option<String> {
        let lease = settings("any").shard_lease_name(self.shard_of(profile));
        self.cluster
            .lease(NS, &lease)
            .and_then(|l| l.spec.holder().map(str::to_owned))
    }

    /// The shard `profile`'s widget lands in.
    fn shard_of(&self, profile: &str) -> u32 {
        sharding::shard_of(&settings("any"), &self.system, profile)
    }

    fn hold(&self) {
        *lock(&self.gate) = Some(Arc::new(Semaphore::new(0)));
    }

    fn release_all(&self) {
        if let Some(gate) = lock(&self.gate).take() {
            gate.add_permits(1_000);
        }
    }

    async fn converge(
        &self,
        replica: &str,
        cx: &Context<WidgetConfig>,
    ) -> CallbackResult<Outcome<NoOutputs>> {
        let profile = cx.profile().to_owned();
        let (start, holder_at_start) = (Instant::now(), self.holder(&profile));
        self.started.fetch_add(1, Ordering::SeqCst);
        let gate = lock(&self.gate).clone();
        if let Some(gate) = gate {
            gate.acquire().await.expect("never closed").forget();
        }
        let value = cx.config().get("value").cloned().unwrap_or(Value::Null);
        lock(&self.items).insert(profile.clone(), value);
        lock(&self.runs).push(Run {
            replica: replica.into(),
            holder_at_end: self.holder(&profile),
            profile,
            start,
            end: Instant::now(),
            token: cx.fencing_token(),
            holder_at_start,
        });
        Ok(Outcome::done())
    }

    fn runs(&self) -> Vec<Run> {
        lock(&self.runs).clone()
    }

    fn runs_of(&self, profile: &str) -> Vec<Run> {
        self.runs()
            .into_iter()
            .filter(|r| r.profile == profile)
            .collect()
    }

    /// The audit's verdict: every run started and ended in the replica
    /// holding its shard's Lease, and no identity ran twice at once.
    fn assert_clean(&self) {
        let runs = self.runs();
        for run in &runs {
            assert_eq!(run.holder_at_start.as_ref(), Some(&run.replica), "{run:?}");
            assert_eq!(run.holder_at_end.as_ref(), Some(&run.replica), "{run:?}");
            assert!(
                run.token.is_some(),
                "callbacks get a fencing token: {run:?}"
            );
        }
        for (i, a) in runs.iter().enumerate() {
            for b in &runs[i + 1..] {
                let overlap = a.profile == b.profile && a.start < b.end && b.start < a.end;
                assert!(!overlap, "one identity ran twice at once: {a:?} {b:?}");
            }
        }
    }
}

fn package(audit: &Arc<Audit>, replica: &str) -> Package {
    let audited = Audited {
        audit: audit.clone(),
        replica: replica.to_owned(),
    };
    Package::new(audited).expect("a structural package")
}

/// A widget's config: any JSON object.
type WidgetConfig = serde_json::Map<String, Value>;

/// The package as one replica runs it, audited.
struct Audited {
    audit: Arc<Audit>,
    replica: String,
}

#[async_trait]
impl Infrastructure for Audited {
    type Config = WidgetConfig;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(widgets())
    }

    async fn identity(
        &self,
        cx: &IdentityContext<WidgetConfig>,
    ) -> CallbackResult<Vec<Option<String>>> {
        Ok(sharding::identity(&self.audit.system, cx.profile()))
    }

    async fn observe(&self, cx: &Context<WidgetConfig>) -> CallbackResult<Observation<NoOutputs>> {
        let items = lock(&self.audit.items);
        let current = items.get(cx.profile());
        Ok(Observation::new(
            current.is_some(),
            current == cx.config().get("value"),
            current.is_some(),
        ))
    }

    async fn converge(&self, cx: &Context<WidgetConfig>) -> CallbackResult<Outcome<NoOutputs>> {
        self.audit.converge(&self.replica, cx).await
    }

    async fn delete(&self, cx: &Context<WidgetConfig>) -> CallbackResult<Outcome<NoOutputs>> {
        lock(&self.audit.items).remove(cx.profile());
        Ok(Outcome::done())
    }
}

/// One replica's connection: cut off (every call refused, as a killed
/// replica looks to the others), a membership renewal held up once, and
/// Lease lists refused as by a client without that capability (or by
/// RBAC made for leader election, without `list`).
#[derive(Clone, Default)]
struct Wire {
    cut: Arc<AtomicBool>,
    /// The next renewal of a membership slot waits this long (ms) first.
    slow_renewal: Arc<AtomicU64>,
    /// When the held-up renewal returned.
    renewal_returned: Arc<Mutex<Option<Instant>>>,
    no_list: Arc<AtomicBool>,
    list_forbidden: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl Hook for Wire {
    async fn before(&self, call: &Call<'_>) -> Result<(), Error> {
        if self.cut.load(Ordering::SeqCst) {
            return Err(Error::Timeout {
                operation: "partitioned".into(),
                timeout_ms: 0,
            });
        }
        match call {
            Call::ListLeases { .. } if self.no_list.load(Ordering::SeqCst) => {
                Err(Error::Unsupported {
                    operation: "list_leases",
                })
            }
            Call::ListLeases { .. } if self.list_forbidden.load(Ordering::SeqCst) => {
                Err(Fault::Kind(ErrorKind::Forbidden).error(Operation::ListLeases))
            }
            Call::UpdateLease { lease } if lease.name.contains("-member-") => {
                let ms = self.slow_renewal.swap(0, Ordering::SeqCst);
                if ms > 0 {
                    sleep_ms(ms).await;
                    *lock(&self.renewal_returned) = Some(Instant::now());
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

struct Replica {
    runtime: Runtime,
    cut: Arc<AtomicBool>,
    wire: Wire,
}

fn replica(cluster: &FakeCluster, audit: &Arc<Audit>, name: &str) -> Replica {
    replica_on(Wire::default(), cluster, audit, name)
}

fn replica_on(wire: Wire, cluster: &FakeCluster, audit: &Arc<Audit>, name: &str) -> Replica {
    let inner: Arc<dyn Client> = Arc::new(cluster.clone());
    let client: Arc<dyn Client> = Arc::new(Layered::new(inner, wire.clone()));
    let mut config = Config::new(client, vec![package(audit, name)]);
    config.namespace = NS.into();
    config.now = tokio_clock();
    config.poll_ms = POLL_MS;
    config.workers = 16;
    config.sharding = Some(settings(name));
    let runtime = start(blue_kubernetes::controller(config).unwrap()).unwrap();
    let cut = wire.cut.clone();
    Replica { runtime, cut, wire }
}

async fn sleep_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// Advances time until `done` holds, or fails after `limit_ms`.
async fn eventually(limit_ms: u64, what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_millis(limit_ms);
    while !done() {
        assert!(
            Instant::now() < deadline,
            "not within {limit_ms} ms: {what}"
        );
        sleep_ms(50).await;
    }
}

fn phase(cluster: &FakeCluster, name: &str) -> Value {
    cluster.get(&widgets(), NS, name).unwrap()["status"]["phase"].clone()
}

/// Replicas a and b, each on a `wire()`, once they share the shards.
async fn sharing_pair(
    wire: impl Fn() -> Wire,
    cluster: &FakeCluster,
    audit: &Arc<Audit>,
) -> (Replica, Replica) {
    let a = replica_on(wire(), cluster, audit, "a");
    let b = replica_on(wire(), cluster, audit, "b");
    eventually(8 * RP, "two members share the shards", || {
        a.runtime.shards_owned().len() == 4 && b.runtime.shards_owned().len() == 4
    })
    .await;
    assert_partition(&[&a, &b]);
    (a, b)
}

/// No shard is dispatched by two replicas; returns those dispatched.
fn assert_disjoint(replicas: &[&Replica]) -> BTreeSet<u32> {
    let mut seen = BTreeSet::new();
    for r in replicas {
        for shard in r.runtime.shards_owned() {
            assert!(seen.insert(shard), "shard {shard} owned twice");
        }
    }
    seen
}

/// The shards each replica dispatches form a partition of all shards.
fn assert_partition(replicas: &[&Replica]) {
    let seen = assert_disjoint(replicas);
    assert_eq!(seen, (0..SHARDS).collect(), "every shard owned once");
}

#[test]
fn each_resource_is_dispatched_by_exactly_one_replica_holding_its_shard() {
    paused_test(|| async {
        let cluster = FakeCluster::new();
        let audit = Audit::new(&cluster);
        let a = replica(&cluster, &audit, "a");
        let b = replica(&cluster, &audit, "b");
        let c = replica(&cluster, &audit, "c");
        eventually(6 * RP, "three members share the shards", || {
            [&a, &b, &c]
                .iter()
                .all(|r| (2..=3).contains(&r.runtime.shards_owned().len()))
        })
        .await;
        assert_partition(&[&a, &b, &c]);
        let names: Vec<String> = (0..24).map(|i| format!("w{i}")).collect();
        for name in &names {
            cluster.create(&widgets(), NS, name, spec(json!(name)));
        }
        eventually(10 * POLL_MS, "every widget is Ready", || {
            names.iter().all(|n| phase(&cluster, n) == "Ready")
        })
        .await;
        for name in &names {
            let runs = audit.runs_of(&profile(name));
            assert_eq!(runs.len(), 1, "{name} converged once: {runs:?}");
            let owner = [("a", &a), ("b", &b), ("c", &c)]
                .into_iter()
                .find(|(_, r)| {
                    r.runtime
                        .shards_owned()
                        .contains(&audit.shard_of(&profile(name)))
                })
                .map(|(n, _)| n);
            assert_eq!(Some(runs[0].replica.as_str()), owner, "{name}");
        }
        let replicas: BTreeSet<String> = audit.runs().into_iter().map(|r| r.replica).collect();
        assert_eq!(replicas.len(), 3, "the work is shared: {replicas:?}");
        audit.assert_clean();
        let refused: u64 = [&a, &b, &c]
            .iter()
            .map(|r| metric(&r.runtime, "blue_shard_dispatch_refused_total"))
            .sum();
        assert!(refused >= 24, "the other replicas refused every widget");
        for r in [a, b, c] {
            r.runtime.stop().await;
        }
        for shard in 0..SHARDS {
            let lease = cluster.lease(NS, &settings("any").shard_lease_name(shard));
            assert_eq!(
                lease
                    .and_then(|l| l.spec.holder_identity)
                    .as_deref()
                    .unwrap_or(""),
                "",
                "released on stop"
            );
        }
    });
}

fn metric(runtime: &Runtime, name: &str) -> u64 {
    let text = runtime.controller().metrics().encode();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

#[test]
fn a_replica_that_stops_renewing_loses_its_shards_only_after_they_expire() {
    paused_test(|| async {
        let cluster = FakeCluster::new();
        let audit = Audit::new(&cluster);
        let (a, b) = sharing_pair(Wire::default, &cluster, &audit).await;
        let lost = b.runtime.shards_owned();
        let name = (0..100)
            .map(|i| format!("late{i}"))
            .find(|n| lost.contains(&audit.shard_of(&profile(n))))
            .expect("some name lands in b's shards");

        b.cut.store(true, Ordering::SeqCst);
        let cut = Instant::now();
        sleep_ms(RD + RP).await;
        assert!(
            b.runtime.shards_owned().is_empty(),
            "no renewal, no dispatch"
        );
        cluster.create(&widgets(), NS, &name, spec(json!(1)));
        sleep_ms(3 * POLL_MS).await;
        assert!(
            cut.elapsed() < Duration::from_millis(LD),
            "still within the lease"
        );
        assert_eq!(a.runtime.shards_owned().len(), 4, "a waits for expiry");
        assert!(audit.runs_of(&profile(&name)).is_empty());

        eventually(LD + 3 * RP, "a takes every shard over", || {
            a.runtime.shards_owned().len() == SHARDS as usize
        })
        .await;
        assert!(cut.elapsed() >= Duration::from_millis(LD));
        eventually(4 * POLL_MS, "the late widget is handled by a", || {
            phase(&cluster, &name) == "Ready"
        })
        .await;
        let runs = audit.runs_of(&profile(&name));
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].replica, "a");
        audit.assert_clean();
        assert!(metric(&a.runtime, "blue_shards_gained_total") >= 8);
        assert!(metric(&b.runtime, "blue_shards_lost_total") >= 4);
        b.cut.store(false, Ordering::SeqCst);
        b.runtime.stop().await;
        a.runtime.stop().await;
    });
}

#[test]
fn a_graceful_handover_drains_the_running_callback_before_the_new_owner_starts() {
    paused_test(|| async {
        let cluster = FakeCluster::new();
        let audit = Audit::new(&cluster);
        let a = replica(&cluster, &audit, "a");
        eventually(2 * RP, "a alone owns every shard", || {
            a.runtime.shards_owned().len() == SHARDS as usize
        })
        .await;
        audit.hold();
        let names: Vec<String> = (0..8).map(|i| format!("slow{i}")).collect();
        for name in &names {
            cluster.create(&widgets(), NS, name, spec(json!(1)));
        }
        eventually(4 * POLL_MS, "every converge runs in a", || {
            audit.started.load(Ordering::SeqCst) == names.len()
        })
        .await;

        let b = replica(&cluster, &audit, "b");
        sleep_ms(5 * RP).await;
        let moving: Vec<&String> = names
            .iter()
            .filter(|n| {
                !a.runtime
                    .shards_owned()
                    .contains(&audit.shard_of(&profile(n)))
            })
            .collect();
        assert!(!moving.is_empty(), "b's arrival moves some running work");
        for name in &moving {
            assert_eq!(
                audit.holder(&profile(name)).as_deref(),
                Some("a"),
                "{name}'s shard is kept while its callback runs"
            );
            assert!(!b
                .runtime
                .shards_owned()
                .contains(&audit.shard_of(&profile(name))));
        }

        audit.release_all();
        eventually(3 * RP, "the drained shards reach b", || {
            a.runtime.shards_owned().len() == 4 && b.runtime.shards_owned().len() == 4
        })
        .await;
        assert_partition(&[&a, &b]);
        assert!(names.iter().all(|n| phase(&cluster, n) == "Ready"));
        assert!(metric(&a.runtime, "blue_shard_drain_seconds_count") >= 1);

        // New desired state for the moved ones: b runs them now.
        for name in &moving {
            cluster.edit_spec(&widgets(), NS, name, |s| s["config"]["value"] = json!(2));
        }
        eventually(4 * POLL_MS, "b converges the moved widgets", || {
            moving.iter().all(|n| audit.runs_of(&profile(n)).len() == 2)
        })
        .await;
        for name in &moving {
            let runs = audit.runs_of(&profile(name));
            assert_eq!(
                (runs[0].replica.as_str(), runs[1].replica.as_str()),
                ("a", "b")
            );
            assert!(runs[1].start >= runs[0].end);
            assert!(
                runs[1].token > runs[0].token,
                "the fencing token grew with the new owner: {runs:?}"
            );
        }
        audit.assert_clean();
        a.runtime.stop().await;
        b.runtime.stop().await;
    });
}

#[test]
fn without_a_lease_list_the_replicas_read_the_leases_one_by_one_and_still_share_the_work() {
    paused_test(|| async {
        let cluster = FakeCluster::new();
        let audit = Audit::new(&cluster);
        // a's client cannot list; b's RBAC does not allow it.
        let made = AtomicUsize::new(0);
        let no_list = || {
            let wire = Wire::default();
            let refusal = match made.fetch_add(1, Ordering::SeqCst) {
                0 => &wire.no_list,
                _ => &wire.list_forbidden,
            };
            refusal.store(true, Ordering::SeqCst);
            wire
        };
        let (a, b) = sharing_pair(no_list, &cluster, &audit).await;
        let names: Vec<String> = (0..8).map(|i| format!("n{i}")).collect();
        for name in &names {
            cluster.create(&widgets(), NS, name, spec(json!(1)));
        }
        eventually(10 * POLL_MS, "every widget is Ready", || {
            names.iter().all(|n| phase(&cluster, n) == "Ready")
        })
        .await;
        audit.assert_clean();
        let log = cluster.call_log();
        let listed = log.iter().filter(|c| c.operation == Operation::ListLeases);
        assert_eq!(listed.count(), 0, "refused by the wire, never sent");
        a.runtime.stop().await;
        eventually(3 * RP, "b takes a's shards after a leaves", || {
            b.runtime.shards_owned().len() == SHARDS as usize
        })
        .await;
        b.runtime.stop().await;
    });
}

/// b renews its slot at `s`, is cut off for three rounds, and its next
/// renewal (sent at `s` + 4 RP) answers only at `s` + LD + RP + RP/4:
/// after a has seen b's slot expire and taken every shard, but before
/// that renewal's own renew deadline (`s` + 4 RP + RD). Counting it would
/// let b dispatch the shards a holds; it counts for nothing.
#[test]
fn a_membership_renewal_answered_after_the_lease_ran_out_extends_no_shard() {
    paused_test(|| async {
        let cluster = FakeCluster::new();
        let audit = Audit::new(&cluster);
        let (a, b) = sharing_pair(Wire::default, &cluster, &audit).await;
        let slot_of_b = || {
            (0..4)
                .map(|k| format!("widgets-operator-member-{k}"))
                .filter_map(|name| cluster.lease(NS, &name))
                .find(|l| l.spec.holder() == Some("b"))
                .expect("b holds a slot")
        };
        let seen = slot_of_b().resource_version;
        while slot_of_b().resource_version == seen {
            sleep_ms(1).await;
        }
        let renewed = Instant::now();
        b.cut.store(true, Ordering::SeqCst);
        sleep_ms(3 * RP + RP / 4).await;
        let late = LD + RP + RP / 4 - 4 * RP;
        b.wire.slow_renewal.store(late, Ordering::SeqCst);
        b.cut.store(false, Ordering::SeqCst);
        tokio::time::sleep_until(renewed + Duration::from_millis(LD + RP)).await;
        assert_eq!(
            a.runtime.shards_owned().len(),
            SHARDS as usize,
            "a took b's"
        );
        assert!(
            lock(&b.wire.renewal_returned).is_none(),
            "b's renewal pending"
        );
        sleep_ms(RP / 4).await;
        assert!(
            lock(&b.wire.renewal_returned).is_some(),
            "b's renewal answered"
        );
        // From the late answer on, at every instant of the next rounds.
        for _ in 0..(3 * RP / 50) {
            assert_disjoint(&[&a, &b]);
            sleep_ms(50).await;
        }
        eventually(
            4 * RP,
            "b is a member again and gets its share back",
            || b.runtime.shards_owned().len() == 4,
        )
        .await;
        assert_partition(&[&a, &b]);
        audit.assert_clean();
        a.runtime.stop().await;
        b.runtime.stop().await;
    });
}

#[test]
fn sharding_and_leader_election_together_are_refused_naming_both() {
    let client: Arc<dyn Client> = Arc::new(FakeCluster::new());
    let audit = Audit::new(&FakeCluster::new());
    let config = Config::new(client, vec![package(&audit, "a")])
        .with_sharding(settings("a"))
        .with_leader_election(blue_kubernetes::replicas::LeaderElectionConfig::new(
            "op", NS,
        ));
    let err = blue_kubernetes::controller(config).unwrap_err();
    assert!(
        err.to_string().contains("sharding, leader_election"),
        "{err}"
    );
}
