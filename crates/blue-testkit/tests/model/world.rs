//! The world the model drives: three resources of two types over one
//! [`FakeCluster`], [`FakeClock`] and [`FakeInfra`] (widgets converge in
//! one callback, gadgets in durable steps: [`CONVERGE_STEPS`] and
//! [`DELETE_STEPS`]), and two controllers (retry bases 1 s and 0.5 s)
//! sharing one audited client, each behind a [`Crash`] switch and rebuilt
//! from nothing after a crash, plus what the checks count: effects let
//! through, writes, callbacks, queued scripts.

use crate::audit::Audit;
use crate::common::{gadgets, widgets, NS};
use crate::drive::Edit;
use crate::oracle::Retry;
use blue_kubernetes::{controller, Config, Controller, Package};
use blue_kubernetes_client::{Client, Layered, ResourceDescriptor};
use blue_testkit::{Callback, Crash, FakeClock, FakeCluster, FakeInfra, Misbehaviour, Operation};
use blue_testkit::{CONVERGE_STEPS, DELETE_STEPS};
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// The resources: (type, name). `widgets/a` and `gadgets/a` share the
/// default profile `dev--a`, hence one identity.
pub const SLOTS: [(Kind, &str); 3] = [
    (Kind::Widget, "a"),
    (Kind::Widget, "b"),
    (Kind::Gadget, "a"),
];

/// Profiles `config.profile` may be set to; with the defaults these are all
/// the profiles (and identities) any resource can use.
pub const PROFILES: [&str; 3] = ["dev--a", "dev--b", "shared"];

/// `reconcileInterval` values; `0s` is malformed (Invalid configuration).
pub const INTERVALS: [&str; 4] = ["1s", "30s", "2m", "0s"];

/// Somebody else's finalizer: ours must leave it alone.
pub const FOREIGN: &str = "example.com/keep";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Widget,
    Gadget,
}

/// Index into [`SLOTS`], printed as `widgets/a`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Slot(pub usize);

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kind, name) = SLOTS[self.0];
        let kind = match kind {
            Kind::Widget => "widgets",
            Kind::Gadget => "gadgets",
        };
        write!(f, "{kind}/{name}")
    }
}

impl Slot {
    pub fn all() -> impl Iterator<Item = Slot> {
        (0..SLOTS.len()).map(Slot)
    }
    pub fn name(self) -> &'static str {
        SLOTS[self.0].1
    }
    pub fn kind(self) -> Kind {
        SLOTS[self.0].0
    }
    pub fn descriptor(self) -> ResourceDescriptor {
        match self.kind() {
            Kind::Widget => widgets(),
            Kind::Gadget => gadgets(),
        }
    }
    /// The same name in the other type: the same default identity.
    pub fn partner(self) -> Slot {
        match self.0 {
            0 => Slot(2),
            2 => Slot(0),
            other => Slot(other),
        }
    }
}

/// How each resource starts: its value and whether it is `Destroy`.
pub type Initial = [(u8, bool); SLOTS.len()];

pub const STEPS: [Callback; 5] = [
    Callback::Validate,
    Callback::Identity,
    Callback::Observe,
    Callback::Converge,
    Callback::Delete,
];

/// The retry bases of the two controllers.
const RETRY_BASES_MS: [u64; 2] = [1_000, 500];

/// A controller over the world's audited client (judging it by the same
/// retry settings), clock and packages.
pub fn controller_config(
    audit: &Audit,
    packages: &[Package],
    clock: &FakeClock,
    retry: Retry,
) -> Config {
    let cluster: Arc<dyn Client> = Arc::new(audit.cluster.clone());
    let client: Arc<dyn Client> = Arc::new(Layered::new(cluster, audit.with_retry(retry)));
    let mut config = Config::new(client, packages.to_vec());
    config.namespace = NS.into();
    config.now = clock.as_fn();
    config.retry_base_ms = retry.base_ms;
    config.retry_max_ms = retry.max_ms;
    // Events on: the audit checks they never carry the secret.
    config.event_component = Some("model".into());
    config
}

/// One case's world. Cells, not `&mut`: the driver, the futures it joins
/// and the checks all share it.
pub struct World {
    pub clock: FakeClock,
    pub cluster: FakeCluster,
    pub infra: FakeInfra,
    pub audit: Audit,
    pub packages: [Package; 2],
    /// Rebuilt after a crash: a new process remembers nothing.
    pub controllers: RefCell<[Controller; 2]>,
    pub crashes: [Crash; 2],
    pub initial: Initial,
    /// Effects let through the [`FakeInfra`] gate so far.
    pub released: Cell<usize>,
}

impl World {
    pub fn new(initial: Initial) -> Self {
        let clock = FakeClock::default();
        let cluster = FakeCluster::new().with_clock(clock.clone());
        let infra = FakeInfra::new();
        // Every effect waits at the gate until the driver lets it through,
        // so effects span yields and overlapping ones would be seen.
        infra.hold_effects();
        let audit = Audit::new(cluster.clone(), infra.clone());
        let packages = [infra.package(widgets()), infra.stepped_package(gadgets())];
        let crashes = [Crash::new(), Crash::new()];
        let controllers = [0, 1].map(|by| build(&audit, &packages, &clock, &crashes[by], by));
        let world = Self {
            clock,
            cluster,
            infra,
            audit,
            packages,
            controllers: RefCell::new(controllers),
            crashes,
            initial,
            released: Cell::new(0),
        };
        for slot in Slot::all() {
            world.apply(slot, Edit::Create);
        }
        world
    }

    /// Controller `by`, as it is now.
    pub fn controller(&self, by: usize) -> Controller {
        self.controllers.borrow()[by].clone()
    }

    /// Controller `by`'s process died: a new one starts with nothing in
    /// memory.
    pub fn restart(&self, by: usize) {
        let fresh = build(
            &self.audit,
            &self.packages,
            &self.clock,
            &self.crashes[by],
            by,
        );
        self.controllers.borrow_mut()[by] = fresh;
    }

    pub fn package(&self, slot: Slot) -> &Package {
        match slot.kind() {
            Kind::Widget => &self.packages[0],
            Kind::Gadget => &self.packages[1],
        }
    }

    pub fn get(&self, slot: Slot) -> Option<Value> {
        self.cluster.get(&slot.descriptor(), NS, slot.name())
    }

    pub fn record(&self, object: &Value) {
        self.audit.model().record(object);
    }

    pub fn edit_spec(&self, slot: Slot, f: impl FnOnce(&mut Value)) {
        let object = self
            .cluster
            .edit_spec(&slot.descriptor(), NS, slot.name(), f);
        self.record(&object);
    }

    /// Whether an effect waits at the [`FakeInfra`] gate (not counting
    /// those a crash abandoned there).
    pub fn effect_waiting(&self) -> bool {
        self.infra.effects_started_count() - self.infra.effects_abandoned() > self.released.get()
    }

    pub fn release_effect(&self) {
        self.infra.release(1);
        self.released.set(self.released.get() + 1);
    }

    pub fn writes(&self) -> usize {
        let ledger = self.audit.ledger();
        ledger.calls(Operation::UpdateStatus) + ledger.calls(Operation::UpdateFinalizers)
    }

    /// Non-identity callbacks and durable steps run so far.
    pub fn work(&self) -> usize {
        let callbacks = self.infra.records().into_iter();
        callbacks
            .filter(|r| r.callback != Callback::Identity)
            .count()
            + self.infra.step_runs().len()
    }

    /// Effects so far: plain `converge` and `delete` calls, and steps.
    pub fn effects(&self) -> usize {
        self.infra.count(Callback::Converge)
            + self.infra.count(Callback::Delete)
            + self.infra.step_runs().len()
    }

    /// Scripted misbehaviours still queued, of callbacks and of steps.
    pub fn leftover_scripts(&self) -> usize {
        let callbacks: usize = STEPS.iter().map(|s| self.infra.scripts_left(*s)).sum();
        let steps = CONVERGE_STEPS.iter().chain(&DELETE_STEPS);
        callbacks
            + steps
                .map(|s| self.infra.step_scripts_left(s))
                .sum::<usize>()
    }

    pub fn script(&self, step: Callback, m: Misbehaviour) {
        self.infra.script(step, m);
    }
}

/// Controller `by` over the world's audited client behind its crash switch.
fn build(
    audit: &Audit,
    packages: &[Package],
    clock: &FakeClock,
    crash: &Crash,
    by: usize,
) -> Controller {
    let retry = Retry {
        base_ms: RETRY_BASES_MS[by],
        max_ms: 60_000,
    };
    let mut config = controller_config(audit, packages, clock, retry);
    config.client = crash.client(config.client.clone());
    // Only the immediate first tick of a started runtime polls.
    config.poll_ms = 3_600_000;
    controller(config).expect("valid config")
}
