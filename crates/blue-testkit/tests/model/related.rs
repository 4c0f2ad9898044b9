//! The model with related objects and references: the started runtime
//! (watches throughout) over a server and two databases that refer to it
//! (`serverRef`), each database with a ConfigMap that names it in an
//! annotation (a related kind). Random sequences of related changes (the
//! database's infrastructure drifts and its ConfigMap is edited, or
//! deleted and created again), server changes (created, deleted, edited, made unready
//! or ready again and triggered), clock advances and watch faults: lost,
//! duplicated and held-back (then late) events, a related watch that goes
//! silent while the others deliver, every watch silent, expired streams,
//! compaction, bookmarks.
//!
//! Checked throughout:
//! - no database callback (identity included) runs unless the server is
//!   Ready for its generation and not being deleted;
//! - every related change is handled within one resync period: while the
//!   server stays Ready, the drifted infrastructure is repaired by then
//!   (counted from the change, or from the last server change, whose
//!   event may have been lost too). Database intervals are an hour, so
//!   only a related event, a reference or the resync can have done it.
//!
//! At the end (faults cleared, the server made Ready): within one resync
//! period every database is Ready for its generation and its
//! infrastructure matches.

use crate::common::NS;
use crate::drive::case_runtime;
use crate::related_world::{
    cm_path, config_maps, database_package, databases, profile, server_ready, servers, spec,
    RelatedWorld, DATABASES, SERVER,
};
use blue_kubernetes::{controller, start, Config, Runtime};
use blue_kubernetes_client::Client;
use blue_testkit::{FakeClock, FakeCluster, FakeInfra};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::json;
use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

const RESYNC_MS: u64 = 10_000;
const POLL_MS: u64 = 500;
const TICK_MS: u64 = 250;
const RETRY_MAX_MS: u64 = 4_000;
/// Reacting takes a few ticks at most once the resync list ran.
const SLACK_MS: u64 = 2 * POLL_MS;

#[derive(Clone, Copy, Debug)]
pub enum RelatedOp {
    /// Database `db`'s infrastructure drifts and its ConfigMap is edited
    /// (`Some`) or deleted and created again (`None`).
    Related(usize, Option<u8>),
    ServerCreate,
    ServerDelete,
    ServerEdit(u8),
    /// The server's infrastructure turns (un)ready, and it is triggered.
    ServerReady(bool),
    Advance(u64),
    Drop(u8),
    Duplicate(u8),
    Hold,
    Release,
    /// The ConfigMap watch goes silent for good; the others keep working.
    StallRelated,
    Stall,
    Expire,
    Compact,
    Bookmarks,
}

/// A related change not yet seen handled.
pub struct Pending {
    pub db: usize,
    pub deadline: u64,
    /// The server was Ready at every check since: only then must the
    /// database have been repaired.
    pub server_ready: bool,
}

struct Case {
    world: RelatedWorld,
    runtime: Runtime,
}

impl Case {
    fn new(server: bool) -> Self {
        let clock = FakeClock::default();
        let world = RelatedWorld {
            cluster: FakeCluster::new().with_clock(clock.clone()),
            clock,
            infra: FakeInfra::new(),
            dbs: Arc::default(),
            violations: Arc::default(),
            pending: RefCell::default(),
        };
        if server {
            world.cluster.create(&servers(), NS, SERVER, spec(1, false));
        }
        for (db, name) in DATABASES.iter().enumerate() {
            world.cluster.create(&databases(), NS, name, spec(1, true));
            world.create_cm(db, 0);
        }
        let packages = vec![world.infra.package(servers()), database_package(&world)];
        let client: Arc<dyn Client> = Arc::new(world.cluster.clone());
        let mut config = Config::new(client, packages);
        config.namespace = NS.into();
        config.now = world.clock.as_fn();
        config.watch = true;
        config.poll_ms = POLL_MS;
        config.resync_ms = RESYNC_MS;
        config.retry_base_ms = 500;
        config.retry_max_ms = RETRY_MAX_MS;
        let runtime = start(controller(config).expect("valid")).expect("in a runtime");
        Case { world, runtime }
    }

    fn fingerprint(&self) -> (usize, u64, usize, usize) {
        let stats = self.world.cluster.watch_stats();
        (
            self.world.cluster.calls().total(),
            self.world.cluster.revision(),
            stats.events + stats.bookmarks,
            self.runtime.queued(),
        )
    }

    async fn settle(&self) -> Result<(), TestCaseError> {
        let mut last = self.fingerprint();
        let (mut quiet, mut spins) = (0u32, 0u32);
        while quiet < 32 {
            tokio::task::yield_now().await;
            spins += 1;
            prop_assert!(spins < 20_000, "the runtime never settles");
            let now = self.fingerprint();
            if now == last {
                quiet += 1;
            } else {
                (last, quiet) = (now, 0);
            }
        }
        // Only the counts' movement matters: keep the log short.
        self.world.cluster.reset_calls();
        Ok(())
    }

    async fn advance(&self, ms: u64) -> Result<(), TestCaseError> {
        let mut left = ms;
        while left > 0 {
            let step = left.min(TICK_MS);
            self.world.clock.advance(step);
            tokio::time::advance(Duration::from_millis(step)).await;
            self.settle().await?;
            self.check_pending()?;
            left -= step;
        }
        Ok(())
    }

    fn now(&self) -> u64 {
        self.world.clock.now_ms()
    }

    /// Every related change counts from now again: a server change may
    /// have lost its event too, and only the resync finds it.
    fn server_changed(&self) {
        let deadline = self.now() + RESYNC_MS + SLACK_MS;
        for p in self.world.pending.borrow_mut().iter_mut() {
            p.deadline = p.deadline.max(deadline);
        }
    }

    fn apply(&self, op: RelatedOp) {
        let w = &self.world;
        let cluster = &w.cluster;
        match op {
            RelatedOp::Related(db, edit) => {
                w.dbs.lock().unwrap().remove(&profile(DATABASES[db]));
                // The ConfigMap always exists afterwards, at a version the
                // controller has not seen: a change whose events are all
                // lost stays visible to the resync list (one created and
                // deleted between two lists, both events lost, would not be).
                match edit {
                    Some(v) => {
                        cluster
                            .edit_object(&cm_path(db), |cm| cm["data"]["v"] = json!(v.to_string()));
                    }
                    None => {
                        cluster.delete_object(&cm_path(db));
                        w.create_cm(db, 0);
                    }
                }
                w.pending.borrow_mut().push(Pending {
                    db,
                    deadline: self.now() + RESYNC_MS + SLACK_MS,
                    server_ready: server_ready(cluster),
                });
            }
            RelatedOp::ServerCreate => {
                if cluster.get(&servers(), NS, SERVER).is_none() {
                    cluster.create(&servers(), NS, SERVER, spec(1, false));
                }
                self.server_changed();
            }
            RelatedOp::ServerDelete => {
                cluster.delete(&servers(), NS, SERVER);
                self.server_changed();
            }
            RelatedOp::ServerEdit(v) => {
                if cluster
                    .get(&servers(), NS, SERVER)
                    .is_some_and(|o| o["metadata"]["deletionTimestamp"].is_null())
                {
                    cluster.edit_spec(&servers(), NS, SERVER, |s| s["config"]["value"] = json!(v));
                }
                self.server_changed();
            }
            RelatedOp::ServerReady(ready) => {
                w.infra.set_ready(&profile(SERVER), ready);
                self.runtime.trigger(&servers(), NS, SERVER);
                self.server_changed();
            }
            RelatedOp::Advance(_) => {}
            RelatedOp::Drop(n) => cluster.drop_watch_events(n.into()),
            RelatedOp::Duplicate(n) => cluster.duplicate_watch_events(n.into()),
            RelatedOp::Hold => cluster.hold_watch_events(),
            RelatedOp::Release => cluster.release_watch_events(),
            RelatedOp::StallRelated => cluster.stall_watches_of(&config_maps()),
            RelatedOp::Stall => cluster.stall_watches(),
            RelatedOp::Expire => cluster.expire_watches(),
            RelatedOp::Compact => cluster.compact_history(cluster.revision()),
            RelatedOp::Bookmarks => cluster.send_bookmarks(),
        }
    }

    fn check_violations(&self, context: &str) -> Result<(), TestCaseError> {
        let violations = self.world.violations.lock().unwrap().clone();
        prop_assert!(violations.is_empty(), "{}: {:?}", context, violations);
        Ok(())
    }

    /// Drops the related changes seen handled; fails on one that should
    /// have been and was not.
    fn check_pending(&self) -> Result<(), TestCaseError> {
        let ready = server_ready(&self.world.cluster);
        let now = self.now();
        let repaired = |db: usize| {
            let dbs = self.world.dbs.lock().unwrap();
            let object = self.world.cluster.get(&databases(), NS, DATABASES[db]);
            let want = object.map(|o| o["spec"]["config"]["value"].clone());
            dbs.get(&profile(DATABASES[db])) == want.as_ref()
        };
        let mut late = None;
        self.world.pending.borrow_mut().retain_mut(|p| {
            p.server_ready &= ready;
            if repaired(p.db) || !p.server_ready {
                return false;
            }
            if now >= p.deadline {
                late = Some(p.db);
            }
            true
        });
        if let Some(db) = late {
            let object = self.world.cluster.get(&databases(), NS, DATABASES[db]);
            return Err(TestCaseError::fail(format!(
                "the related change of {} was not handled within a resync period: {:?}",
                DATABASES[db], object
            )));
        }
        Ok(())
    }

    async fn step(&self, index: usize, op: RelatedOp) -> Result<(), TestCaseError> {
        self.apply(op);
        self.settle().await?;
        if let RelatedOp::Advance(ms) = op {
            self.advance(ms).await?;
        }
        let context = format!("step {index} ({op:?})");
        self.check_violations(&context)?;
        self.check_pending()
    }

    async fn liveness(&self) -> Result<(), TestCaseError> {
        let w = &self.world;
        w.cluster.clear_watch_faults();
        w.infra.set_ready(&profile(SERVER), true);
        self.runtime.trigger(&servers(), NS, SERVER);
        // A deletion whose event was lost finishes by the resync; the
        // server is created again once it is gone.
        let mut left = 2 * RESYNC_MS + RETRY_MAX_MS + SLACK_MS;
        while left > 0 {
            self.apply(RelatedOp::ServerCreate);
            self.advance(TICK_MS).await?;
            left -= TICK_MS;
        }
        self.check_violations("liveness")?;
        prop_assert!(
            server_ready(&w.cluster),
            "the server never became Ready: {:?}",
            w.cluster.get(&servers(), NS, SERVER)
        );
        for (db, name) in DATABASES.iter().enumerate() {
            let o = w
                .cluster
                .get(&databases(), NS, name)
                .expect("databases stay");
            prop_assert_eq!(&o["status"]["phase"], "Ready", "{}: {}", name, o);
            prop_assert_eq!(
                &o["status"]["observedGeneration"],
                &o["metadata"]["generation"]
            );
            let dbs = w.dbs.lock().unwrap();
            prop_assert_eq!(
                dbs.get(&profile(name)),
                Some(&json!(1)),
                "{}: infrastructure",
                db
            );
        }
        Ok(())
    }
}

pub fn run_related_case(server: bool, ops: &[RelatedOp]) -> Result<(), TestCaseError> {
    case_runtime(true).block_on(async {
        let case = Case::new(server);
        let result = async {
            case.settle().await?;
            for (index, op) in ops.iter().enumerate() {
                case.step(index, *op).await?;
            }
            case.liveness().await
        }
        .await;
        case.runtime.stop().await;
        result
    })
}

pub fn arb_related_op() -> impl Strategy<Value = RelatedOp> {
    prop_oneof![
        10 => (0..DATABASES.len(), proptest::option::of(0u8..3)).prop_map(|(d, e)| RelatedOp::Related(d, e)),
        2 => Just(RelatedOp::ServerCreate),
        1 => Just(RelatedOp::ServerDelete),
        2 => (0u8..3).prop_map(RelatedOp::ServerEdit),
        2 => any::<bool>().prop_map(RelatedOp::ServerReady),
        6 => prop_oneof![Just(0u64), Just(TICK_MS), Just(POLL_MS), Just(RESYNC_MS / 2), Just(RESYNC_MS)]
            .prop_map(RelatedOp::Advance),
        3 => (1u8..4).prop_map(RelatedOp::Drop),
        1 => (1u8..3).prop_map(RelatedOp::Duplicate),
        1 => Just(RelatedOp::Hold),
        1 => Just(RelatedOp::Release),
        2 => Just(RelatedOp::StallRelated),
        1 => Just(RelatedOp::Stall),
        1 => Just(RelatedOp::Expire),
        1 => Just(RelatedOp::Compact),
        1 => Just(RelatedOp::Bookmarks),
    ]
}

/// Found by this property: with watch events held back, a server deleted
/// and then triggered stayed requested after its read found it gone, and
/// the worker read it again and again without end.
#[test]
fn a_request_for_a_resource_found_gone_is_dropped() {
    let ops = [
        RelatedOp::Hold,
        RelatedOp::ServerDelete,
        RelatedOp::ServerReady(false),
    ];
    run_related_case(true, &ops).expect("settles");
}
