//! The world the model drives: three resources of two types over one
//! [`FakeCluster`], [`FakeClock`] and [`FakeInfra`], and two controllers
//! (retry bases 1 s and 0.5 s) sharing one audited client, plus what the
//! checks count: effects let through, writes, callbacks, queued scripts.

use crate::audit::Audit;
use crate::common::{gadgets, widgets, NS};
use crate::drive::Edit;
use crate::oracle::Retry;
use blue_kubernetes::{controller, Config, Controller, Package};
use blue_kubernetes_client::{Client, Layered, ResourceDescriptor};
use blue_testkit::{FakeClock, FakeCluster, FakeInfra, Misbehaviour, Operation, Step};
use serde_json::Value;
use std::cell::Cell;
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

pub const STEPS: [Step; 5] = [
    Step::Validate,
    Step::Identity,
    Step::Observe,
    Step::Converge,
    Step::Delete,
];

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
    pub controllers: [Controller; 2],
    pub initial: Initial,
    /// Effects let through the [`FakeInfra`] gate so far.
    pub released: Cell<usize>,
    /// Scripted misbehaviours not yet consumed, per [`STEPS`] entry, and the
    /// callback counts last seen (each call consumes one queued script).
    pub scripts: Cell<[usize; 5]>,
    pub calls_seen: Cell<[usize; 5]>,
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
        let packages = [infra.package(widgets()), infra.package(gadgets())];
        let build = |base_ms| {
            let retry = Retry {
                base_ms,
                max_ms: 60_000,
            };
            let mut config = controller_config(&audit, &packages, &clock, retry);
            // Only the immediate first tick of a started runtime polls.
            config.poll_ms = 3_600_000;
            controller(config).expect("valid config")
        };
        let controllers = [build(1_000), build(500)];
        let world = Self {
            clock,
            cluster,
            infra,
            audit,
            packages,
            controllers,
            initial,
            released: Cell::new(0),
            scripts: Cell::new([0; 5]),
            calls_seen: Cell::new([0; 5]),
        };
        for slot in Slot::all() {
            world.apply(slot, Edit::Create);
        }
        world
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

    /// Whether an effect waits at the [`FakeInfra`] gate.
    pub fn effect_waiting(&self) -> bool {
        self.infra.effects_started_count() > self.released.get()
    }

    pub fn release_effect(&self) {
        self.infra.release(1);
        self.released.set(self.released.get() + 1);
    }

    pub fn writes(&self) -> usize {
        let ledger = self.audit.ledger();
        ledger.calls(Operation::UpdateStatus) + ledger.calls(Operation::UpdateFinalizers)
    }

    /// Non-identity callbacks run so far.
    pub fn work(&self) -> usize {
        self.infra
            .records()
            .iter()
            .filter(|r| r.step != Step::Identity)
            .count()
    }

    /// Tracks which scripted misbehaviours are still queued.
    pub fn account_scripts(&self) {
        let mut scripts = self.scripts.get();
        let mut seen = self.calls_seen.get();
        for (i, step) in STEPS.iter().enumerate() {
            let now = self.infra.count(*step);
            scripts[i] = scripts[i].saturating_sub(now - seen[i]);
            seen[i] = now;
        }
        self.scripts.set(scripts);
        self.calls_seen.set(seen);
    }

    pub fn script(&self, step: Step, m: Misbehaviour) {
        self.infra.script(step, m);
        let mut scripts = self.scripts.get();
        let i = STEPS.iter().position(|s| *s == step).expect("known step");
        scripts[i] += 1;
        self.scripts.set(scripts);
    }
}
