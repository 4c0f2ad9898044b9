//! The Lease elector on a FakeCluster and a FakeClock: acquire, renew, lose
//! on conflict, expire while partitioned, release, and several candidates
//! never both entitled to act at the same fake instant.

use async_trait::async_trait;
use blue_kubernetes::replicas::LeaderElectionConfig;
use blue_kubernetes::{ElectionStep, LeaseElector};
use blue_kubernetes_client::{Call, Error, ErrorKind, Hook, Layered};
use blue_testkit::{FakeClock, FakeCluster, Fault, Operation};
use proptest::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const NS: &str = "ops";
const LEASE: &str = "op";
const LD: u64 = 15_000;
const RD: u64 = 10_000;
const RP: u64 = 2_000;

/// Partitions one candidate from the API while set. A stream opened
/// before the cut keeps running: the cut only refuses new calls.
#[derive(Default)]
struct Cut(AtomicBool);

#[async_trait]
impl Hook for Cut {
    async fn before(&self, _: &Call<'_>) -> Result<(), Error> {
        match self.0.load(Ordering::SeqCst) {
            true => Err(Error::kubectl("get", ErrorKind::Unavailable)),
            false => Ok(()),
        }
    }
}

/// One candidate's view of the cluster.
type Link = Layered<Arc<Cut>>;

struct Candidate {
    elector: LeaseElector,
    link: Link,
    cut: Arc<Cut>,
}

fn candidate(cluster: &FakeCluster, name: &str) -> Candidate {
    let mut settings = LeaderElectionConfig::new(LEASE, NS);
    settings.identity = name.into();
    let cut = Arc::new(Cut::default());
    Candidate {
        elector: LeaseElector::new(settings).unwrap(),
        link: Layered::new(Arc::new(cluster.clone()), cut.clone()),
        cut,
    }
}

impl Candidate {
    async fn step(&mut self, clock: &FakeClock) -> ElectionStep {
        self.elector.step(&self.link, &clock.as_fn()).await
    }
    fn partition(&self, cut: bool) {
        self.cut.0.store(cut, Ordering::SeqCst);
    }
}

fn holder(cluster: &FakeCluster) -> Option<String> {
    cluster
        .lease(NS, LEASE)
        .and_then(|l| l.spec.holder().map(str::to_owned))
}

fn setup() -> (FakeCluster, FakeClock) {
    let clock = FakeClock::default();
    (FakeCluster::new().with_clock(clock.clone()), clock)
}

#[tokio::test]
async fn the_first_candidate_creates_the_lease_and_leads() {
    let (cluster, clock) = setup();
    let mut a = candidate(&cluster, "a");
    assert!(!a.elector.may_dispatch(clock.now_ms()));
    assert_eq!(a.step(&clock).await, ElectionStep::Leading);
    let lease = cluster.lease(NS, LEASE).unwrap();
    assert_eq!(lease.spec.holder(), Some("a"));
    assert_eq!(lease.spec.lease_duration_seconds, Some(15));
    assert_eq!(lease.spec.lease_transitions, Some(0));
    assert_eq!(lease.spec.acquire_time, lease.spec.renew_time);
    assert!(lease.spec.renew_time.unwrap().ends_with(".000000Z"));
    let now = clock.now_ms();
    assert!(a.elector.may_dispatch(now) && a.elector.may_write(now));
}

#[tokio::test]
async fn renewing_moves_the_deadlines_and_keeps_the_acquire_time() {
    let (cluster, clock) = setup();
    let mut a = candidate(&cluster, "a");
    let t0 = clock.now_ms();
    a.step(&clock).await;
    let first = cluster.lease(NS, LEASE).unwrap();
    clock.advance(RP);
    assert_eq!(a.step(&clock).await, ElectionStep::Leading);
    let renewed = cluster.lease(NS, LEASE).unwrap();
    assert_ne!(renewed.resource_version, first.resource_version);
    assert_ne!(renewed.spec.renew_time, first.spec.renew_time);
    assert_eq!(renewed.spec.acquire_time, first.spec.acquire_time);
    assert!(a.elector.may_dispatch(t0 + RD) && !a.elector.may_dispatch(t0 + RP + RD));
    assert!(a.elector.may_write(t0 + RP + LD - 1) && !a.elector.may_write(t0 + RP + LD));
}

#[tokio::test]
async fn a_follower_waits_a_full_lease_duration_after_the_last_change_it_saw() {
    let (cluster, clock) = setup();
    let (mut a, mut b) = (candidate(&cluster, "a"), candidate(&cluster, "b"));
    a.step(&clock).await;
    assert_eq!(b.step(&clock).await, ElectionStep::Following);
    let seen = clock.now_ms();
    assert_eq!(b.elector.next_attempt_in_ms(seen), RP);
    assert_eq!(
        a.elector.next_attempt_in_ms(seen),
        RP,
        "the leader renews every retry period"
    );
    clock.advance(LD - 1);
    assert_eq!(b.step(&clock).await, ElectionStep::Following);
    assert_eq!(
        b.elector.next_attempt_in_ms(clock.now_ms()),
        1,
        "attempt again right at expiry"
    );
    assert!(
        a.elector.may_write(clock.now_ms()),
        "a's lease has not expired"
    );
    clock.set(seen + LD);
    assert!(!a.elector.may_write(clock.now_ms()));
    assert_eq!(b.step(&clock).await, ElectionStep::Leading);
    let lease = cluster.lease(NS, LEASE).unwrap();
    assert_eq!(lease.spec.holder(), Some("b"));
    assert_eq!(lease.spec.lease_transitions, Some(1));
    assert_eq!(a.step(&clock).await, ElectionStep::Lost);
    assert_eq!(a.step(&clock).await, ElectionStep::Following);
}

#[tokio::test]
async fn a_renewal_that_loses_a_conflict_stops_dispatch_and_writes_at_once() {
    let (cluster, clock) = setup();
    let mut a = candidate(&cluster, "a");
    a.step(&clock).await;
    cluster.inject(Operation::UpdateLease, Fault::Conflict);
    clock.advance(RP);
    assert_eq!(a.step(&clock).await, ElectionStep::Lost);
    let now = clock.now_ms();
    assert!(!a.elector.may_dispatch(now) && !a.elector.may_write(now));
    // The record is still ours, so the next attempt renews it.
    assert_eq!(a.step(&clock).await, ElectionStep::Leading);
}

#[tokio::test]
async fn a_leader_that_sees_another_holder_has_lost() {
    let (cluster, clock) = setup();
    let mut a = candidate(&cluster, "a");
    a.step(&clock).await;
    let mut taken = cluster.lease(NS, LEASE).unwrap();
    taken.spec.holder_identity = Some("intruder".into());
    cluster.put_lease(&taken);
    assert_eq!(a.step(&clock).await, ElectionStep::Lost);
    assert!(!a.elector.may_write(clock.now_ms()));
    assert_eq!(holder(&cluster).as_deref(), Some("intruder"));
}

#[tokio::test]
async fn a_partitioned_leader_stops_dispatching_at_the_renew_deadline_and_writing_at_expiry() {
    let (cluster, clock) = setup();
    let (mut a, mut b) = (candidate(&cluster, "a"), candidate(&cluster, "b"));
    let renewed = clock.now_ms();
    a.step(&clock).await;
    b.step(&clock).await;
    a.partition(true);
    while clock.now_ms() < renewed + LD {
        clock.advance(RP / 2);
        let now = clock.now_ms();
        assert_eq!(a.step(&clock).await, ElectionStep::Failed);
        assert_eq!(
            a.elector.may_dispatch(now),
            now < renewed + RD,
            "at +{}",
            now - renewed
        );
        assert_eq!(
            a.elector.may_write(now),
            now < renewed + LD,
            "at +{}",
            now - renewed
        );
        let b_step = b.step(&clock).await;
        assert_eq!(b_step == ElectionStep::Leading, now >= renewed + LD);
        assert!(!(a.elector.may_write(now) && b.elector.may_write(now)));
    }
    assert_eq!(holder(&cluster).as_deref(), Some("b"));
    a.partition(false);
    assert_eq!(a.step(&clock).await, ElectionStep::Lost);
}

#[tokio::test]
async fn release_hands_over_at_the_followers_next_attempt() {
    let (cluster, clock) = setup();
    let (mut a, mut b) = (candidate(&cluster, "a"), candidate(&cluster, "b"));
    a.step(&clock).await;
    assert_eq!(b.step(&clock).await, ElectionStep::Following);
    assert!(a.elector.release(&a.link).await.unwrap());
    assert!(!a.elector.may_write(clock.now_ms()));
    assert_eq!(holder(&cluster), None);
    assert_eq!(b.step(&clock).await, ElectionStep::Leading);
    assert!(!a.elector.release(&a.link).await.unwrap(), "nothing held");
    assert_eq!(holder(&cluster).as_deref(), Some("b"));
}

#[tokio::test]
async fn missing_lease_permissions_fail_with_their_kind_and_never_lead() {
    let (cluster, clock) = setup();
    let mut a = candidate(&cluster, "a");
    let forbidden = Some(Fault::Kind(ErrorKind::Forbidden));
    cluster.fail_always(Operation::CreateLease, forbidden);
    assert_eq!(a.step(&clock).await, ElectionStep::Failed);
    assert_eq!(a.elector.last_failure(), Some(ErrorKind::Forbidden));
    assert!(!a.elector.may_dispatch(clock.now_ms()));
    cluster.fail_always(Operation::CreateLease, None);
    assert_eq!(a.step(&clock).await, ElectionStep::Leading);
    assert_eq!(a.elector.last_failure(), None);
}

#[tokio::test(start_paused = true)]
async fn candidates_racing_on_the_same_reads_elect_exactly_one() {
    let (cluster, clock) = setup();
    cluster.set_latency(Duration::from_millis(5));
    let (mut a, mut b) = (candidate(&cluster, "a"), candidate(&cluster, "b"));
    // Both read "no lease", both create: one create fails.
    let (sa, sb) = tokio::join!(a.step(&clock), b.step(&clock));
    let mut steps = [sa, sb].map(|s| s == ElectionStep::Leading);
    steps.sort();
    assert_eq!(steps, [false, true]);
    // Released, then both read it free and update from the same version.
    let (winner, loser) = if sa == ElectionStep::Leading {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    winner.elector.release(&winner.link).await.unwrap();
    let (sw, sl) = tokio::join!(winner.step(&clock), loser.step(&clock));
    assert_ne!(sw == ElectionStep::Leading, sl == ElectionStep::Leading);
    let now = clock.now_ms();
    assert_ne!(a.elector.may_write(now), b.elector.may_write(now));
}

#[derive(Clone, Debug)]
enum Action {
    Step(usize),
    Advance(u64),
    Partition(usize, bool),
    /// Two candidates step concurrently (their reads and writes interleave).
    Race(usize, usize),
}

fn action(candidates: usize) -> impl Strategy<Value = Action> {
    prop_oneof![
        4 => (0..candidates).prop_map(Action::Step),
        3 => (1..=8_000u64).prop_map(Action::Advance),
        1 => (0..candidates, any::<bool>()).prop_map(|(i, cut)| Action::Partition(i, cut)),
        2 => (0..candidates, 1..candidates).prop_map(move |(i, d)| Action::Race(i, (i + d) % candidates)),
    ]
}

fn scenario() -> impl Strategy<Value = (usize, Vec<Action>)> {
    (2..=3usize).prop_flat_map(|n| (Just(n), proptest::collection::vec(action(n), 1..80)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever the interleaving, partitions and clock jumps, at no fake
    /// instant may two candidates dispatch or write.
    #[test]
    fn no_two_candidates_may_write_at_the_same_instant((n, actions) in scenario()) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(async {
            let (cluster, clock) = setup();
            cluster.set_latency(Duration::from_millis(1));
            let mut all: Vec<Candidate> =
                (0..n).map(|i| candidate(&cluster, &format!("c{i}"))).collect();
            let mut ever_led = false;
            for action in actions {
                match action {
                    Action::Step(i) => {
                        ever_led |= all[i].step(&clock).await == ElectionStep::Leading;
                    }
                    Action::Advance(ms) => clock.advance(ms),
                    Action::Partition(i, cut) => all[i].partition(cut),
                    Action::Race(i, j) => {
                        let (lo, hi) = (i.min(j), i.max(j));
                        let (left, right) = all.split_at_mut(hi);
                        let (x, y) = tokio::join!(left[lo].step(&clock), right[0].step(&clock));
                        ever_led |= x == ElectionStep::Leading || y == ElectionStep::Leading;
                    }
                }
                let now = clock.now_ms();
                let writers = all.iter().filter(|c| c.elector.may_write(now)).count();
                let leaders = all.iter().filter(|c| c.elector.may_dispatch(now)).count();
                prop_assert!(writers <= 1, "{writers} candidates may write at {now}");
                prop_assert!(leaders <= writers);
            }
            let _ = ever_led;
            Ok(())
        })?;
    }
}

#[tokio::test]
async fn renewals_keep_the_token_and_a_new_owner_gets_a_greater_one() {
    let (cluster, clock) = setup();
    let (mut a, mut b) = (candidate(&cluster, "a"), candidate(&cluster, "b"));
    a.step(&clock).await;
    let first = a.elector.fencing_token(clock.now_ms()).expect("leading");
    assert_eq!(first.counter(), 1);
    clock.advance(RP);
    a.step(&clock).await;
    assert_eq!(a.elector.fencing_token(clock.now_ms()), Some(first));
    a.elector.release(&a.link).await.unwrap();
    assert_eq!(a.elector.fencing_token(clock.now_ms()), None);
    b.step(&clock).await;
    let second = b.elector.fencing_token(clock.now_ms()).expect("leading");
    assert_eq!((second.epoch(), second.counter()), (first.epoch(), 2));
    let recorded = &cluster.lease(NS, LEASE).unwrap().annotations;
    assert!(recorded["blue.kubernetes/fencing-token"].starts_with(&second.to_string()));
}

#[tokio::test]
async fn a_leader_that_lost_the_lease_and_takes_it_back_is_a_new_owner() {
    let (cluster, clock) = setup();
    let mut a = candidate(&cluster, "a");
    a.step(&clock).await;
    let first = a.elector.fencing_token(clock.now_ms()).unwrap();
    cluster.inject(Operation::UpdateLease, Fault::Conflict);
    clock.advance(RP);
    assert_eq!(a.step(&clock).await, ElectionStep::Lost);
    // The record still names a; its passes before the loss are deposed.
    assert_eq!(a.step(&clock).await, ElectionStep::Leading);
    let again = a.elector.fencing_token(clock.now_ms()).unwrap();
    assert!(again > first, "{first} then {again}");
}

#[tokio::test]
async fn a_lease_deleted_under_its_holder_is_recreated_in_a_new_epoch() {
    let (cluster, clock) = setup();
    let mut a = candidate(&cluster, "a");
    a.step(&clock).await;
    let first = a.elector.fencing_token(clock.now_ms()).unwrap();
    let old = cluster.delete_lease(NS, LEASE).unwrap();
    // At the same instant: the epoch a saw is the floor, not the clock.
    assert_eq!(a.step(&clock).await, ElectionStep::Leading);
    let recreated = cluster.lease(NS, LEASE).unwrap();
    assert_ne!(recreated.uid, old.uid);
    let again = a.elector.fencing_token(clock.now_ms()).unwrap();
    assert!(again.epoch() > first.epoch(), "{first} then {again}");
    assert_eq!(again.counter(), 1);
}

#[tokio::test]
async fn a_follower_whose_clock_is_behind_still_begins_a_greater_epoch_than_it_saw() {
    let (cluster, clock) = setup();
    let (mut a, mut b) = (candidate(&cluster, "a"), candidate(&cluster, "b"));
    clock.advance(3_600_000);
    a.step(&clock).await;
    let first = a.elector.fencing_token(clock.now_ms()).unwrap();
    assert_eq!(b.step(&clock).await, ElectionStep::Following);
    a.elector.release(&a.link).await.unwrap();
    cluster.delete_lease(NS, LEASE).unwrap();
    // b's clock is an hour behind a's.
    let behind = FakeClock::default();
    assert_eq!(b.step(&behind).await, ElectionStep::Leading);
    let second = b.elector.fencing_token(behind.now_ms()).unwrap();
    assert!(second > first, "{first} then {second}");
    assert_eq!(second.epoch(), first.epoch() + 1);
}

#[tokio::test]
async fn a_restored_record_is_not_continued() {
    let (cluster, clock) = setup();
    let (mut a, mut b) = (candidate(&cluster, "a"), candidate(&cluster, "b"));
    a.step(&clock).await;
    clock.advance(RP);
    a.step(&clock).await;
    let backup = cluster.lease(NS, LEASE).unwrap();
    a.elector.release(&a.link).await.unwrap();
    b.step(&clock).await;
    let deposed = b.elector.fencing_token(clock.now_ms()).unwrap();
    b.elector.release(&b.link).await.unwrap();
    // Deleted and restored from the backup taken under a: the old token
    // comes back on a new object, which a new process reads first.
    cluster.delete_lease(NS, LEASE).unwrap();
    let mut restored = backup.clone();
    restored.spec.holder_identity = None;
    cluster.put_lease(&restored);
    assert_ne!(cluster.lease(NS, LEASE).unwrap().uid, backup.uid);
    clock.advance(1);
    let mut c = candidate(&cluster, "c");
    assert_eq!(c.step(&clock).await, ElectionStep::Leading);
    let token = c.elector.fencing_token(clock.now_ms()).unwrap();
    assert!(token > deposed, "{deposed} then {token}");
    assert_ne!(token.epoch(), deposed.epoch());
}
