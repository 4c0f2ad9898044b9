//! Fencing tokens across successive owners of a Lease: the leader-election
//! Lease, and a shard's Lease. Owners a, b and c take the Lease one after
//! another (each a fresh runtime that stops gracefully, so it releases the
//! Lease); between two owners the record is damaged as another elector, a
//! human or a restore could leave it. Each owner converges the one widget
//! once, and the token its callback got must be greater than the one
//! before, whatever the record said. Paused tokio time drives the
//! runtimes; a wall-clock watchdog fails a test whose runtime spins.

mod common;

use blue_kubernetes::{start, CallbackResult, Config, Observation, Package, Runtime};

use blue_kubernetes::config::Clock;

use blue_kubernetes::package::{CallbackInput, WorkflowOutcome};

use blue_kubernetes::replicas::{FencingToken, LeaderElectionConfig};
use blue_kubernetes_client::{Client, Lease};
use blue_testkit::FakeCluster;
use common::sharding::{self, lock};
use common::watchdog::paused_test;
use common::*;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

const LEASE: &str = "widgets-operator";
const POLL_MS: u64 = 500;
/// Long enough for a takeover that waits out a whole lease duration.
const OWNER_LIMIT_MS: u64 = 60_000;

/// Numbers each test's own identity system: the identity lock is
/// process-wide and tests run in parallel.
static SYSTEMS: AtomicUsize = AtomicUsize::new(0);

#[derive(Clone, Copy, Debug)]
enum Mode {
    /// The leader-election Lease.
    Leader,
    /// The Lease of the one shard.
    Shard,
}

impl Mode {
    fn lease_name(self) -> String {
        match self {
            Mode::Leader => LEASE.into(),
            Mode::Shard => shard_settings("any").shard_lease_name(0),
        }
    }
}

fn shard_settings(owner: &str) -> blue_kubernetes::replicas::ShardingConfig {
    sharding::settings(LEASE, 1, 2, owner)
}

/// What happens to the released record before the next owner (named)
/// comes.
type Damage = fn(&FakeCluster, &str, &str);

/// The record as a user-side write leaves it (another elector, `kubectl
/// edit`): a new resourceVersion, the rest as `edit` says.
fn edit_lease(cluster: &FakeCluster, lease: &str, edit: impl FnOnce(&mut Lease)) {
    let mut record = cluster.lease(NS, lease).expect("the lease exists");
    edit(&mut record);
    cluster.put_lease(&record);
}

fn top_of_range(cluster: &FakeCluster, lease: &str, _: &str) {
    edit_lease(cluster, lease, |l| {
        l.spec.lease_transitions = Some(i32::MAX)
    });
}

fn missing(cluster: &FakeCluster, lease: &str, _: &str) {
    edit_lease(cluster, lease, |l| l.spec.lease_transitions = None);
}

fn negative(cluster: &FakeCluster, lease: &str, _: &str) {
    edit_lease(cluster, lease, |l| l.spec.lease_transitions = Some(-5));
}

fn zero(cluster: &FakeCluster, lease: &str, _: &str) {
    edit_lease(cluster, lease, |l| l.spec.lease_transitions = Some(0));
}

/// The record names the next owner, which never won it (a forged write,
/// or an earlier process that ran under the same identity).
fn names_the_next_owner(cluster: &FakeCluster, lease: &str, next: &str) {
    edit_lease(cluster, lease, |l| {
        l.spec.holder_identity = Some(next.into());
        l.spec.lease_duration_seconds = Some(15);
    });
}

/// A holder identity no elector would write; it must be waited out.
fn junk_holder(cluster: &FakeCluster, lease: &str, _: &str) {
    edit_lease(cluster, lease, |l| {
        l.spec.holder_identity = Some(format!("\u{1} not an identity {}", "x".repeat(300)));
        l.spec.lease_duration_seconds = Some(15);
    });
}

fn deleted(cluster: &FakeCluster, lease: &str, _: &str) {
    assert!(cluster.delete_lease(NS, lease).is_some());
}

/// The items the widgets converge, and the token of each converge.
struct Infra<T> {
    system: String,
    items: Mutex<HashMap<String, Value>>,
    tokens: Mutex<Vec<T>>,
}

fn package<T: Send + 'static>(infra: &Arc<Infra<T>>, read: fn(&CallbackInput) -> T) -> Package {
    let (identity, observer, converger) = (infra.clone(), infra.clone(), infra.clone());
    Package::builder(widgets())
        .validate(|_o| Ok(Vec::<String>::new()))
        .identity(move |o| Ok(sharding::identity(&identity.system, o.profile())))
        .observe(move |o| {
            let items = lock(&observer.items);
            let current = items.get(o.profile());
            Ok(Observation::new(
                current.is_some(),
                current == o.get("value"),
                current.is_some(),
            ))
        })
        .converge(move |o| -> CallbackResult<WorkflowOutcome> {
            let value = o.get("value").cloned().unwrap_or(Value::Null);
            lock(&converger.items).insert(o.profile().to_owned(), value);
            lock(&converger.tokens).push(read(o));
            Ok(WorkflowOutcome::new())
        })
        .delete(|_o| Ok(WorkflowOutcome::new()))
        .build()
        .expect("all callbacks are set")
}

fn runtime(
    mode: Mode,
    cluster: &FakeCluster,
    now: &Clock,
    package: Package,
    owner: &str,
) -> Runtime {
    let client: Arc<dyn Client> = Arc::new(cluster.clone());
    let mut config = Config::new(client, vec![package]);
    config.namespace = NS.into();
    config.now = now.clone();
    config.poll_ms = POLL_MS;
    match mode {
        Mode::Leader => {
            config.leader_election =
                Some(LeaderElectionConfig::new(LEASE, NS).with_identity(owner.into()))
        }
        Mode::Shard => config.sharding = Some(shard_settings(owner)),
    }
    start(blue_kubernetes::controller(config).unwrap()).unwrap()
}

/// Owners a, b and c take the Lease in turn, `damage[i]` hitting the
/// record before the owner after the `i`-th; the tokens their converges
/// got, in order.
fn tokens_across_owners<T: Clone + Send + 'static>(
    mode: Mode,
    damage: [Damage; 2],
    read: fn(&CallbackInput) -> T,
) -> Vec<T> {
    let infra = Arc::new(Infra {
        system: format!("fencing-{}", SYSTEMS.fetch_add(1, Ordering::Relaxed)),
        items: Mutex::default(),
        tokens: Mutex::default(),
    });
    let shared = infra.clone();
    paused_test(move || async move {
        let infra = shared;
        let cluster = FakeCluster::new();
        // One clock for every owner: the replicas' clocks agree.
        let now = tokio_clock();
        cluster.create(&widgets(), NS, "w", spec(json!(0)));
        for (i, owner) in ["a", "b", "c"].into_iter().enumerate() {
            if i > 0 {
                damage[i - 1](&cluster, &mode.lease_name(), owner);
                cluster.edit_spec(&widgets(), NS, "w", |s| s["config"]["value"] = json!(i));
            }
            let r = runtime(mode, &cluster, &now, package(&infra, read), owner);
            let deadline = Instant::now() + Duration::from_millis(OWNER_LIMIT_MS);
            while lock(&infra.tokens).len() <= i {
                assert!(Instant::now() < deadline, "{owner} never converged");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            r.stop().await;
        }
    });
    let tokens = lock(&infra.tokens).clone();
    tokens
}

fn assert_strictly_increasing(tokens: &[Option<FencingToken>]) -> Vec<FencingToken> {
    assert_eq!(tokens.len(), 3, "one converge per owner: {tokens:?}");
    let tokens: Vec<FencingToken> = tokens.iter().map(|t| t.expect("a token")).collect();
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "each owner's token is greater than the last: {tokens:?}"
    );
    tokens
}

/// The damage left the token's own record alone: one epoch, counted on.
fn assert_one_epoch(mode: Mode, damage: [Damage; 2]) {
    let tokens = tokens_across_owners(mode, damage, CallbackInput::fencing_token);
    let tokens = assert_strictly_increasing(&tokens);
    assert!(
        tokens.iter().all(|t| t.epoch() == tokens[0].epoch()),
        "{tokens:?}"
    );
    let counters: Vec<u64> = tokens.iter().map(FencingToken::counter).collect();
    assert_eq!(counters, [1, 2, 3]);
}

#[test]
fn leader_tokens_grow_past_the_top_of_the_counter_s_range() {
    assert_one_epoch(Mode::Leader, [top_of_range, top_of_range]);
}

#[test]
fn shard_tokens_grow_past_the_top_of_the_counter_s_range() {
    assert_one_epoch(Mode::Shard, [top_of_range, top_of_range]);
}

#[test]
fn leader_tokens_grow_when_the_counter_goes_missing() {
    assert_one_epoch(Mode::Leader, [missing, missing]);
}

#[test]
fn shard_tokens_grow_when_the_counter_goes_missing() {
    assert_one_epoch(Mode::Shard, [missing, missing]);
}

#[test]
fn leader_tokens_grow_when_the_counter_turns_negative() {
    assert_one_epoch(Mode::Leader, [negative, negative]);
}

#[test]
fn shard_tokens_grow_when_the_counter_turns_negative() {
    assert_one_epoch(Mode::Shard, [negative, negative]);
}

#[test]
fn leader_tokens_grow_when_the_counter_is_reset_to_zero() {
    assert_one_epoch(Mode::Leader, [zero, zero]);
}

#[test]
fn shard_tokens_grow_when_the_counter_is_reset_to_zero() {
    assert_one_epoch(Mode::Shard, [zero, zero]);
}

#[test]
fn leader_tokens_grow_whatever_holder_the_record_names() {
    assert_one_epoch(Mode::Leader, [names_the_next_owner, junk_holder]);
}

#[test]
fn shard_tokens_grow_whatever_holder_the_record_names() {
    assert_one_epoch(Mode::Shard, [names_the_next_owner, junk_holder]);
}

/// Each recreation begins a new epoch, greater than the one before.
fn assert_new_epochs(mode: Mode) {
    let tokens = tokens_across_owners(mode, [deleted, deleted], CallbackInput::fencing_token);
    let tokens = assert_strictly_increasing(&tokens);
    assert!(
        tokens.windows(2).all(|w| w[0].epoch() < w[1].epoch()),
        "{tokens:?}"
    );
    assert!(tokens.iter().all(|t| t.counter() == 1), "{tokens:?}");
}

#[test]
fn a_recreated_leader_lease_gives_a_token_of_a_new_epoch() {
    assert_new_epochs(Mode::Leader);
}

#[test]
fn a_recreated_shard_lease_gives_a_token_of_a_new_epoch() {
    assert_new_epochs(Mode::Shard);
}
