//! When Reconciling (Deleting) is published: while observing when an effect
//! is expected, after observing for a periodic check. Either way before
//! the first effect, and a lost publish stops the pass.

mod common;

use blue_kubernetes::package::NoOutputs;
use blue_kubernetes::{
    async_trait, CallbackResult, Context, IdentityContext, Infrastructure, Observation, Outcome,
    Package, Report, ResourceSchema,
};

use blue_kubernetes::resource::{Phase, Reason};
use blue_testkit::{FakeClock, FakeCluster, Fault, Operation};
use common::*;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// How long (paused tokio time) observe waits for a concurrent publish
/// before the test lets it go: far longer than any publish takes.
const PATIENCE_MS: u64 = 10_000;

/// Observes wait while this is shut.
#[derive(Default)]
struct Gate {
    open: AtomicBool,
    opened: Notify,
}

impl Gate {
    async fn pass(&self) {
        loop {
            // Registered before the check, so an open in between wakes it.
            let opened = self.opened.notified();
            if self.open.load(Ordering::SeqCst) {
                return;
            }
            opened.await;
        }
    }

    fn set(&self, open: bool) {
        self.open.store(open, Ordering::SeqCst);
        self.opened.notify_waiters();
    }
}

/// A package whose `observe` waits at `gate` and whose converge counts.
/// What the observation reports is `matching`.
#[derive(Clone)]
struct Probe {
    gate: Arc<Gate>,
    converges: Arc<AtomicUsize>,
    matching: Arc<AtomicBool>,
}

impl Probe {
    fn new() -> Self {
        Self {
            gate: Arc::default(),
            converges: Arc::default(),
            matching: Arc::default(),
        }
    }

    fn package(&self) -> Package {
        Package::new(self.clone()).unwrap()
    }
}

#[async_trait]
impl Infrastructure for Probe {
    type Config = Map<String, Value>;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(widgets())
    }

    async fn identity(
        &self,
        cx: &IdentityContext<Self::Config>,
    ) -> CallbackResult<Vec<Option<String>>> {
        Ok(vec![Some(cx.profile().into())])
    }

    async fn observe(&self, _: &Context<Self::Config>) -> CallbackResult<Observation<NoOutputs>> {
        self.gate.pass().await;
        Ok(match self.matching.load(Ordering::SeqCst) {
            true => Observation::READY,
            false => Observation::ABSENT,
        })
    }

    async fn converge(&self, _: &Context<Self::Config>) -> CallbackResult<Outcome<NoOutputs>> {
        self.converges.fetch_add(1, Ordering::SeqCst);
        Ok(Outcome::done())
    }

    async fn delete(&self, _: &Context<Self::Config>) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }
}

/// Runs one reconcile of `web` while watching its phase; returns the
/// report and whether `Reconciling` was stored while observe waited.
async fn reconcile_watching_phase(
    cluster: &FakeCluster,
    controller: &blue_kubernetes::Controller,
    package: &Package,
    probe: &Probe,
) -> (Report, bool) {
    probe.gate.set(false);
    let watching = async {
        for _ in 0..PATIENCE_MS {
            let phase = cluster.get(&widgets(), NS, "web").unwrap()["status"]["phase"].clone();
            if phase == "Reconciling" {
                probe.gate.set(true);
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        probe.gate.set(true);
        false
    };
    let (report, published) = tokio::join!(
        blue_kubernetes::reconcile(controller, package, NS, "web"),
        watching
    );
    (report.unwrap(), published)
}

fn rig(probe: &Probe) -> (FakeCluster, FakeClock, blue_kubernetes::Controller, Package) {
    let clock = FakeClock::default();
    let cluster = FakeCluster::new().with_clock(clock.clone());
    let package = probe.package();
    let controller = build(&cluster, clock.as_fn(), vec![package.clone()], |_| {});
    (cluster, clock, controller, package)
}

#[tokio::test(start_paused = true)]
async fn an_edit_publishes_reconciling_while_observing() {
    let probe = Probe::new();
    let (cluster, _clock, controller, package) = rig(&probe);
    cluster.create(&widgets(), NS, "web", spec(json!(1)));
    let (report, published) =
        reconcile_watching_phase(&cluster, &controller, &package, &probe).await;
    assert!(
        published,
        "Reconciling was stored before observe returned: {report:?}"
    );
    assert_eq!(report, Report::Reconciled(Phase::Failed, Reason::NotReady));
    assert_eq!(probe.converges.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_periodic_check_observes_before_publishing_anything() {
    let probe = Probe::new();
    let (cluster, clock, controller, package) = rig(&probe);
    probe.matching.store(true, Ordering::SeqCst);
    cluster.create(&widgets(), NS, "web", spec(json!(1)));
    let (first, _) = reconcile_watching_phase(&cluster, &controller, &package, &probe).await;
    assert_eq!(first, Report::Reconciled(Phase::Ready, Reason::Converged));

    clock.advance(stretched(60_000));
    cluster.reset_calls();
    let (report, published) =
        reconcile_watching_phase(&cluster, &controller, &package, &probe).await;
    assert!(!published, "nothing published while observing");
    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(cluster.calls().update_status, 1, "one status write");
    assert_eq!(probe.converges.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_lost_publish_stops_the_pass_whatever_was_observed() {
    let probe = Probe::new();
    let (cluster, _clock, controller, package) = rig(&probe);
    cluster.create(&widgets(), NS, "web", spec(json!(1)));
    cluster.fail_always(Operation::UpdateStatus, Some(Fault::Conflict));
    let (report, published) =
        reconcile_watching_phase(&cluster, &controller, &package, &probe).await;
    assert!(!published);
    assert_eq!(report, Report::Conflict);
    assert_eq!(probe.converges.load(Ordering::SeqCst), 0, "no effect");
}
