//! Model-based property test of the controller (SPEC section 5).
//!
//! Random sequences (up to 40 steps) of user actions on three resources of
//! two types sharing one [`FakeInfra`] (`widgets/a` and `gadgets/a` share a
//! profile and so an identity; `config.profile` edits make more identities
//! collide): value, `suspend`, `state`, `deletionPolicy`,
//! `compute-prevent-destroy`, `invalid`, `profile` and `reconcileInterval`
//! edits, request tokens, someone else's finalizer, deletion and
//! recreation; clock advances; drift and unreadiness; injected `Conflict` /
//! `Unavailable` faults; scripted callback errors, panics, `blue/exit 1`
//! and a lying `blue/exit 0`; and reconciles by two controller instances:
//! lone ones, two racing ones (mostly of one identity), ones with a user
//! edit landing mid-pass, and cycles of the polling runtime. Checked after
//! every step:
//!
//! 1. never two effects at once for one identity (every effect is held at
//!    the [`FakeInfra`] gate for some yields, so overlaps would show);
//! 2. a Ready status for generation `g` is only written while the
//!    infrastructure holds what generation `g` asked for (and `g` was valid
//!    and unsuspended), and only lands on generation `g` of a live object
//!    carrying our finalizer;
//! 3. our finalizer never leaves a deleting `Destroy` resource while its
//!    infrastructure exists or while destruction is protected, and nobody
//!    else's finalizer is ever dropped;
//! 4. no status, Event, report or error carries [`PLANTED_SECRET`];
//! 5. no identity lock is left held;
//!
//! and also: every status write follows the status rules (kstatus
//! conditions and their transition times, acknowledgement, deletionObserved,
//! immutable profile/stateIdentity, interval and backoff timing, see
//! `audit.rs`); every effect was announced by a successful
//! Reconciling/Deleting write; a lone reconcile is never `Busy`, reads the
//! object at most twice, stops at the first failed call, and when `NotDue`
//! or `Changed` writes nothing and runs no callback but `identity`.
//!
//! 6. Liveness, at the end: faults, scripts, foreign finalizers, invalid
//!    flags and intervals, profile edits, unready marks and suspensions are
//!    undone (resources sharing a profile get one value), then the clock
//!    advances in 61 s rounds with everything reconciled each round, enough
//!    rounds for any leftover script. Then every live resource is Ready for
//!    its generation and request token with the infrastructure holding its
//!    value; deleting ones are gone (`Destroy`: infrastructure gone too;
//!    `Retain`: left as it was) unless protected (Blocked, finalizer kept);
//!    nothing is due without time passing; an idle poll costs one list per
//!    type; a periodic check observes only and writes status once.
//!
//! Deterministic: a current-thread runtime per case, a [`FakeClock`], no
//! sleeps; concurrency comes from `tokio::join!` over futures that yield at
//! every cluster call (the auditing client) and while effects are held.
//!
//! A second property (`watching.rs`) runs the started runtime with
//! watches throughout, under lost, duplicated and delayed events, closed,
//! expired and silent streams, refused watches, bookmarks and compaction,
//! and checks the same audited invariants plus liveness within one resync
//! period, reaction to an edit with no time passing, and at most one list
//! per reflector per resync period while idle.
//!
//! Runs 64 cases by default (a few seconds in a debug build). Search longer:
//! `PROPTEST_CASES=2000 cargo test -p blue-testkit --test model --release`.

mod audit;
mod client;
#[path = "../common/mod.rs"]
mod common;
mod object;
mod oracle;
mod watching;

use audit::Audit;
use blue_kubernetes::{
    controller, is_locked, reconcile, start, Config, Controller, Error, Package, Phase, Reason,
    Report, FINALIZER, REQUEST_ANNOTATION,
};
use blue_kubernetes_client::{Client, ResourceDescriptor};
use blue_testkit::{
    FakeClock, FakeCluster, FakeInfra, Fault, Misbehaviour, Operation, Step, PLANTED_SECRET,
};
use common::{condition, finalizers, gadgets, widgets, NS};
use object::{destroys, has_ours, is_deleting, object_profile, protected, value_of};
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestCaseError};
use serde_json::{json, Value};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::{Arc, Once};
use std::time::Duration;

// ---------------------------------------------------------------- the world

/// The resources: (type, name). `widgets/a` and `gadgets/a` share the
/// default profile `dev--a`, hence one identity.
const SLOTS: [(Kind, &str); 3] = [
    (Kind::Widget, "a"),
    (Kind::Widget, "b"),
    (Kind::Gadget, "a"),
];

/// Profiles `config.profile` may be set to; with the defaults these are all
/// the profiles (and identities) any resource can use.
const PROFILES: [&str; 3] = ["dev--a", "dev--b", "shared"];

/// `reconcileInterval` values; `0s` is malformed (Invalid configuration).
const INTERVALS: [&str; 4] = ["1s", "30s", "2m", "0s"];

/// Somebody else's finalizer: ours must leave it alone.
const FOREIGN: &str = "example.com/keep";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Widget,
    Gadget,
}

/// Index into [`SLOTS`], printed as `widgets/a`.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Slot(usize);

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
    fn all() -> impl Iterator<Item = Slot> {
        (0..SLOTS.len()).map(Slot)
    }
    fn name(self) -> &'static str {
        SLOTS[self.0].1
    }
    fn kind(self) -> Kind {
        SLOTS[self.0].0
    }
    fn descriptor(self) -> ResourceDescriptor {
        match self.kind() {
            Kind::Widget => widgets(),
            Kind::Gadget => gadgets(),
        }
    }
    /// The same name in the other type: the same default identity.
    fn partner(self) -> Slot {
        match self.0 {
            0 => Slot(2),
            2 => Slot(0),
            other => Slot(other),
        }
    }
}

/// A user action on one resource (what `kubectl apply/edit/annotate/delete` does).
#[derive(Clone, Copy, Debug)]
enum Edit {
    /// Create it again if it is gone (new uid); nothing if it exists.
    Create,
    Delete,
    /// Delete, and if that removed it at once, create it again (new uid).
    Replace,
    Value(u8),
    Suspend(bool),
    Stopped(bool),
    /// `deletionPolicy`: `None` unsets it (Retain by default).
    Destroy(Option<bool>),
    Protect(bool),
    Invalid(bool),
    /// `config.profile`: an index into [`PROFILES`], `None` unsets it.
    Profile(Option<usize>),
    /// `reconcileInterval`: an index into [`INTERVALS`], `None` unsets it.
    Interval(Option<usize>),
    /// The request annotation (a small set of tokens, so repeats happen).
    Request(u8),
    /// Add (when not deleting: the server forbids it then) or remove
    /// [`FOREIGN`].
    Foreign(bool),
}

#[derive(Clone, Copy, Debug)]
enum Op {
    User(Slot, Edit),
    Advance(u64),
    /// Drift: set (or remove) a profile's infrastructure behind the controller.
    Drift(usize, Option<u8>),
    Ready(usize, bool),
    Fault(Operation, Fault),
    Script(Step, Misbehaviour),
    /// One reconcile by controller `by`; effects are held `hold` yields.
    Reconcile {
        at: Slot,
        by: usize,
        hold: u8,
    },
    /// Two reconciles at once (`tokio::join!`), usually of one identity,
    /// maybe with a user edit of `a` landing after some yields.
    Race {
        a: (Slot, usize),
        b: (Slot, usize),
        hold: u8,
        edit: Option<(u8, Edit)>,
    },
    /// A reconcile with a user edit of the same resource landing after
    /// `after` yields, i.e. in the middle of the pass.
    Interrupted {
        at: Slot,
        by: usize,
        after: u8,
        edit: Edit,
        hold: u8,
    },
    /// One cycle of the polling runtime of controller `by` (two workers), then stop.
    Poll {
        by: usize,
        hold: u8,
    },
}

/// How each resource starts: its value and whether it is `Destroy`.
type Initial = [(u8, bool); SLOTS.len()];

const STEPS: [Step; 5] = [
    Step::Validate,
    Step::Identity,
    Step::Observe,
    Step::Converge,
    Step::Delete,
];

struct World {
    clock: FakeClock,
    cluster: FakeCluster,
    infra: FakeInfra,
    audit: Audit,
    packages: [Package; 2],
    controllers: [Controller; 2],
    initial: Initial,
    /// Effects let through the [`FakeInfra`] gate so far.
    released: Cell<usize>,
    /// Scripted misbehaviours not yet consumed, per [`STEPS`] entry, and the
    /// callback counts last seen (each call consumes one queued script).
    scripts: Cell<[usize; 5]>,
    calls_seen: Cell<[usize; 5]>,
}

impl World {
    fn new(initial: Initial) -> Self {
        let clock = FakeClock::default();
        let cluster = FakeCluster::new().with_clock(clock.clone());
        let infra = FakeInfra::new();
        // Every effect waits at the gate until the driver lets it through,
        // so effects span yields and overlapping ones would be seen.
        infra.hold_effects();
        let audit = Audit::new(cluster.clone(), infra.clone());
        let packages = [infra.package(widgets()), infra.package(gadgets())];
        let build = |retry_base_ms| {
            let client: Arc<dyn Client> = Arc::new(audit.with_retry(retry_base_ms, 60_000));
            let mut config = Config::new(client, packages.to_vec());
            config.namespace = NS.into();
            config.now = clock.as_fn();
            // Only the immediate first tick of a started runtime polls.
            config.poll_ms = 3_600_000;
            config.retry_base_ms = retry_base_ms;
            config.retry_max_ms = 60_000;
            // Events on: the audit checks they never carry the secret.
            config.event_component = Some("model".into());
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

    fn package(&self, slot: Slot) -> &Package {
        match slot.kind() {
            Kind::Widget => &self.packages[0],
            Kind::Gadget => &self.packages[1],
        }
    }

    fn get(&self, slot: Slot) -> Option<Value> {
        self.cluster.get(&slot.descriptor(), NS, slot.name())
    }

    fn record(&self, object: &Value) {
        self.audit.model().record(object);
    }

    fn edit_spec(&self, slot: Slot, f: impl FnOnce(&mut Value)) {
        let object = self
            .cluster
            .edit_spec(&slot.descriptor(), NS, slot.name(), f);
        self.record(&object);
    }

    /// Applies a user action; actions on a missing resource do nothing.
    fn apply(&self, slot: Slot, edit: Edit) {
        let d = slot.descriptor();
        let exists = self.get(slot).is_some();
        let create = || {
            let (value, destroy) = self.initial[slot.0];
            let policy = if destroy { "Destroy" } else { "Retain" };
            let spec = json!({"deletionPolicy": policy, "config": {"value": value}});
            let object = self.cluster.create(&d, NS, slot.name(), spec);
            self.record(&object);
        };
        match edit {
            Edit::Create if !exists => create(),
            _ if !exists => {}
            Edit::Create => {}
            Edit::Delete => {
                self.cluster.delete(&d, NS, slot.name());
            }
            Edit::Replace => {
                if self.cluster.delete(&d, NS, slot.name()).is_none() {
                    create();
                }
            }
            Edit::Request(token) => {
                let object = self.cluster.set_annotation(
                    &d,
                    NS,
                    slot.name(),
                    REQUEST_ANNOTATION,
                    &format!("token-{token}"),
                );
                self.record(&object);
            }
            Edit::Value(v) => self.edit_spec(slot, |s| {
                config(s).insert("value".into(), json!(v));
            }),
            Edit::Suspend(on) => self.edit_spec(slot, |s| s["suspend"] = json!(on)),
            Edit::Stopped(stopped) => self.edit_spec(slot, |s| {
                s["state"] = json!(if stopped { "stopped" } else { "running" })
            }),
            Edit::Destroy(policy) => self.edit_spec(slot, |s| match policy {
                None => unset(s, "deletionPolicy"),
                Some(true) => s["deletionPolicy"] = json!("Destroy"),
                Some(false) => s["deletionPolicy"] = json!("Retain"),
            }),
            Edit::Protect(on) => {
                self.edit_spec(slot, |s| set_flag(config(s), "compute-prevent-destroy", on))
            }
            Edit::Invalid(on) => self.edit_spec(slot, |s| set_flag(config(s), "invalid", on)),
            Edit::Profile(p) => self.edit_spec(slot, |s| match p {
                None => {
                    config(s).remove("profile");
                }
                Some(i) => {
                    config(s).insert("profile".into(), json!(PROFILES[i]));
                }
            }),
            Edit::Interval(i) => self.edit_spec(slot, |s| match i {
                None => unset(s, "reconcileInterval"),
                Some(i) => s["reconcileInterval"] = json!(INTERVALS[i]),
            }),
            Edit::Foreign(on) => {
                let object = self.cluster.edit(&d, NS, slot.name(), |o| {
                    let mut list = finalizers(o);
                    list.retain(|f| f != FOREIGN);
                    if on && !is_deleting(o) {
                        list.push(FOREIGN.into());
                    }
                    o["metadata"]["finalizers"] = json!(list);
                });
                self.record(&object);
            }
        }
    }

    /// Lets held effects through, each after `hold` of its own yields,
    /// until `done` reaches `total`.
    async fn release_effects(&self, done: &Cell<usize>, total: usize, hold: u8) {
        let mut waited = 0u8;
        let mut spins = 0u32;
        while done.get() < total {
            tokio::task::yield_now().await;
            spins += 1;
            assert!(spins < 1_000_000, "the driven futures never finish");
            let released = self.released.get();
            if self.infra.effects_started_count() > released {
                if waited >= hold {
                    self.infra.release(1);
                    self.released.set(released + 1);
                    waited = 0;
                } else {
                    waited += 1;
                }
            }
        }
    }

    async fn reconcile_counted(
        &self,
        slot: Slot,
        by: usize,
        done: &Cell<usize>,
    ) -> Result<Report, Error> {
        let result = reconcile(&self.controllers[by], self.package(slot), NS, slot.name()).await;
        done.set(done.get() + 1);
        result
    }

    async fn reconcile_one(&self, slot: Slot, by: usize, hold: u8) -> Result<Report, Error> {
        let done = Cell::new(0);
        let (result, ()) = tokio::join!(
            self.reconcile_counted(slot, by, &done),
            self.release_effects(&done, 1, hold)
        );
        result
    }

    /// The user acting on `slot` after `after` yields, if at all.
    async fn edit_later(&self, slot: Slot, edit: Option<(u8, Edit)>, done: &Cell<usize>) {
        if let Some((after, edit)) = edit {
            for _ in 0..after {
                tokio::task::yield_now().await;
            }
            self.apply(slot, edit);
        }
        done.set(done.get() + 1);
    }

    async fn race(
        &self,
        a: (Slot, usize),
        b: (Slot, usize),
        hold: u8,
        edit: Option<(u8, Edit)>,
    ) -> [Result<Report, Error>; 2] {
        let done = Cell::new(0);
        let (ra, rb, (), ()) = tokio::join!(
            self.reconcile_counted(a.0, a.1, &done),
            self.reconcile_counted(b.0, b.1, &done),
            self.edit_later(a.0, edit, &done),
            self.release_effects(&done, 3, hold)
        );
        [ra, rb]
    }

    async fn interrupted(
        &self,
        slot: Slot,
        by: usize,
        after: u8,
        edit: Edit,
        hold: u8,
    ) -> Result<Report, Error> {
        let done = Cell::new(0);
        let (result, (), ()) = tokio::join!(
            self.reconcile_counted(slot, by, &done),
            self.edit_later(slot, Some((after, edit)), &done),
            self.release_effects(&done, 2, hold)
        );
        result
    }

    async fn poll(&self, by: usize, hold: u8) -> Result<(), TestCaseError> {
        let runtime = start(self.controllers[by].clone()).expect("inside a runtime");
        let done = Cell::new(0);
        let (stats, ()) = tokio::join!(
            async {
                // Wait for the first cycle and for the workers to take
                // everything it queued; stop then awaits the running ones.
                while runtime.stats().polls == 0 || runtime.queued() > 0 {
                    tokio::task::yield_now().await;
                }
                let stats = runtime.stats();
                runtime.stop().await;
                done.set(1);
                stats
            },
            self.release_effects(&done, 1, hold)
        );
        let text = format!("{stats:?}");
        prop_assert!(!text.contains(PLANTED_SECRET), "stats leak: {}", text);
        Ok(())
    }

    fn writes(&self) -> usize {
        let ledger = self.audit.ledger();
        ledger.calls(Operation::UpdateStatus) + ledger.calls(Operation::UpdateFinalizers)
    }

    /// Non-identity callbacks run so far.
    fn work(&self) -> usize {
        self.infra
            .records()
            .iter()
            .filter(|r| r.step != Step::Identity)
            .count()
    }

    /// Tracks which scripted misbehaviours are still queued.
    fn account_scripts(&self) {
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

    fn script(&self, step: Step, m: Misbehaviour) {
        self.infra.script(step, m);
        let mut scripts = self.scripts.get();
        let i = STEPS.iter().position(|s| *s == step).expect("known step");
        scripts[i] += 1;
        self.scripts.set(scripts);
    }

    /// Invariants 1, 2, 3 (audited on every write), 4 (writes and the
    /// given reports) and 5, checked after every step.
    fn check(
        &self,
        context: &str,
        reports: &[&Result<Report, Error>],
    ) -> Result<(), TestCaseError> {
        self.account_scripts();
        let max = self.infra.max_concurrent_effects();
        prop_assert!(
            max <= 1,
            "{context}: {max} effects at once for one identity"
        );
        let violations = std::mem::take(&mut self.audit.ledger().violations);
        prop_assert!(violations.is_empty(), "{context}: {violations:#?}");
        // Each effect was announced (Reconciling/Deleting with its profile)
        // by a status write of its own that succeeded.
        let mut effects: BTreeMap<String, usize> = BTreeMap::new();
        for r in self.infra.records() {
            if matches!(r.step, Step::Converge | Step::Delete) {
                *effects.entry(r.profile).or_default() += 1;
            }
        }
        let announced = self.audit.ledger().announced.clone();
        for (profile, n) in effects {
            let a = announced.get(&profile).copied().unwrap_or(0);
            prop_assert!(n <= a, "{context}: {n} effects on {profile}, {a} announced");
        }
        for report in reports {
            let text = match report {
                Ok(r) => format!("{r:?}"),
                Err(e) => format!("{e} {e:?}"),
            };
            prop_assert!(
                !text.contains(PLANTED_SECRET),
                "{context}: report leaks: {text}"
            );
        }
        for profile in PROFILES {
            prop_assert!(
                !is_locked(&self.infra.identity(profile)),
                "{context}: lock for {profile} leaked"
            );
        }
        Ok(())
    }

    /// Counters before a step, to judge a lone reconcile by.
    fn before(&self) -> Before {
        let mut ledger = self.audit.ledger();
        ledger.reset_failure();
        Before {
            uids: Slot::all()
                .map(|slot| self.cluster.get(&slot.descriptor(), NS, slot.name()))
                .map(|o| o.map_or(Value::Null, |o| o["metadata"]["uid"].clone()))
                .collect(),
            writes: ledger.calls(Operation::UpdateStatus)
                + ledger.calls(Operation::UpdateFinalizers),
            gets: ledger.calls(Operation::Get),
            lists: ledger.lists(),
            work: {
                drop(ledger);
                self.work()
            },
        }
    }

    async fn step(&self, index: usize, op: Op) -> Result<(), TestCaseError> {
        let context = format!("step {index} ({op:?})");
        let before = self.before();
        match op {
            Op::User(slot, edit) => self.apply(slot, edit),
            Op::Advance(ms) => self.clock.advance(ms),
            Op::Drift(p, Some(v)) => self.infra.set(PROFILES[p], json!(v)),
            Op::Drift(p, None) => self.infra.remove(PROFILES[p]),
            Op::Ready(p, ready) => self.infra.set_ready(PROFILES[p], ready),
            Op::Fault(operation, fault) => self.cluster.inject(operation, fault),
            Op::Script(step, m) => self.script(step, m),
            Op::Reconcile { at, by, hold } => {
                let result = self.reconcile_one(at, by, hold).await;
                self.check(&context, &[&result])?;
                self.check_lone(&context, at, &result, &before)?;
            }
            Op::Interrupted {
                at,
                by,
                after,
                edit,
                hold,
            } => {
                let result = self.interrupted(at, by, after, edit, hold).await;
                self.check(&context, &[&result])?;
                self.check_lone(&context, at, &result, &before)?;
            }
            Op::Race { a, b, hold, edit } => {
                let [ra, rb] = self.race(a, b, hold, edit).await;
                self.check(&context, &[&ra, &rb])?;
            }
            Op::Poll { by, hold } => self.poll(by, hold).await?,
        }
        self.check(&context, &[])
    }

    /// A lone reconcile: never Busy; reads the object at most twice (once,
    /// and once more under the lock) and lists nothing; one that finds
    /// nothing to do writes nothing and runs no callback but `identity`; and
    /// after a failed call (fault or conflict) the pass stops: no further
    /// call, no further callback (but an observe already under way beside
    /// a publish). The report tells what happened: the
    /// status holds the reported phase and reason, and `Released` left no
    /// finalizer of ours.
    fn check_lone(
        &self,
        context: &str,
        slot: Slot,
        result: &Result<Report, Error>,
        before: &Before,
    ) -> Result<(), TestCaseError> {
        // (Unless the user replaced the object meanwhile.)
        let object = self
            .get(slot)
            .filter(|o| o["metadata"]["uid"] == before.uids[slot.0]);
        match (result, &object) {
            (Ok(Report::Reconciled(phase, reason)), Some(o)) => {
                prop_assert_eq!(&o["status"]["phase"], phase.as_str(), "{}", context);
                let ready = condition(&o["status"], "Ready");
                prop_assert_eq!(&ready["reason"], reason.as_str(), "{}", context);
            }
            (Ok(Report::Released), Some(o)) => {
                prop_assert!(!has_ours(o), "{}: released but kept: {}", context, o);
            }
            _ => {}
        }
        if let Ok(report) = result {
            prop_assert_ne!(
                *report,
                Report::Busy,
                "{}: lone reconcile was busy",
                context
            );
            if matches!(report, Report::NotDue | Report::Changed) {
                prop_assert_eq!(
                    self.writes(),
                    before.writes,
                    "{}: {:?} wrote",
                    context,
                    report
                );
                prop_assert_eq!(
                    self.work(),
                    before.work,
                    "{}: {:?} ran callbacks",
                    context,
                    report
                );
            }
        }
        let ledger = self.audit.ledger();
        let (gets, lists) = (ledger.calls(Operation::Get), ledger.lists());
        prop_assert!(
            gets - before.gets <= 2,
            "{}: {} reads",
            context,
            gets - before.gets
        );
        prop_assert_eq!(lists, before.lists, "{}: listed", context);
        let (failed_at, after) = (ledger.failed_at, ledger.calls_after_failure);
        drop(ledger);
        if let Some(callbacks) = failed_at {
            prop_assert_eq!(after, 0, "{}: calls after a failed call", context);
            // Reconciling is published while observing when an effect is
            // expected, so one read-only observe may finish after a failed
            // publish; nothing else may run.
            let later: Vec<Step> = self.infra.records()[callbacks..]
                .iter()
                .map(|r| r.step)
                .collect();
            prop_assert!(
                later.is_empty() || later == [Step::Observe],
                "{}: callbacks after a failed call: {:?}",
                context,
                later
            );
        }
        Ok(())
    }

    // ------------------------------------------------------------ liveness

    /// Undoes everything that may legitimately keep a resource from
    /// settling, then returns what each profile's infrastructure must end as
    /// (`None` inside: absent; missing: left as it is now).
    fn settle_desired_state(&self) -> BTreeMap<String, Option<Value>> {
        self.cluster.clear_faults();
        for profile in PROFILES {
            self.infra.set_ready(profile, true);
        }
        // Profiles and state identities are immutable once recorded: revert
        // to the recorded profile; and no more invalid or suspended specs.
        let mut canonical: BTreeMap<String, Value> = BTreeMap::new();
        for slot in Slot::all() {
            // Whoever holds the foreign finalizer lets go.
            self.apply(slot, Edit::Foreign(false));
            let Some(object) = self.get(slot) else {
                continue;
            };
            let recorded = object
                .pointer("/status/profile")
                .and_then(Value::as_str)
                .map(str::to_string);
            self.edit_spec(slot, |s| {
                unset(s, "suspend");
                if s["reconcileInterval"] == "0s" {
                    unset(s, "reconcileInterval");
                }
                let c = config(s);
                c.remove("invalid");
                match &recorded {
                    Some(p) => c.insert("profile".into(), json!(p)),
                    None => c.remove("profile"),
                };
            });
            // Resources sharing a profile manage the same infrastructure:
            // give them one value, or they rightly fight forever.
            let object = self.get(slot).expect("just edited");
            let value = canonical
                .entry(object_profile(&object))
                .or_insert_with(|| value_of(&object["spec"]))
                .clone();
            self.edit_spec(slot, |s| {
                config(s).insert("value".into(), value);
            });
        }
        let mut expected = BTreeMap::new();
        for slot in Slot::all() {
            let Some(object) = self.get(slot) else {
                continue;
            };
            let profile = object_profile(&object);
            let live = !is_deleting(&object);
            if live {
                expected.insert(profile, Some(value_of(&object["spec"])));
            } else if destroys(&object) && !protected(&object) && has_ours(&object) {
                // (Without our finalizer it is released, never destroyed.)
                expected.entry(profile).or_insert(None);
            }
        }
        for profile in PROFILES {
            expected
                .entry(profile.to_string())
                .or_insert_with(|| self.infra.get(profile));
        }
        expected
    }

    async fn liveness(&self) -> Result<(), TestCaseError> {
        self.account_scripts();
        let leftover_scripts: usize = self.scripts.get().iter().sum();
        let before: Vec<_> = Slot::all().map(|slot| self.get(slot)).collect();
        let expected = self.settle_desired_state();
        // Every round every resource is due (backoff and interval <= 60 s,
        // except `2m` intervals, which only matter for drift repair) and
        // each leftover script can spoil at most one attempt.
        let rounds = 12 + 2 * leftover_scripts;
        for round in 0..rounds {
            self.clock.advance(61_000);
            for slot in Slot::all() {
                let before = self.before();
                let result = self.reconcile_one(slot, round % 2, 0).await;
                let context = format!("liveness round {round}, {slot:?}");
                self.check(&context, &[&result])?;
                self.check_lone(&context, slot, &result, &before)?;
                prop_assert!(result.is_ok(), "{}: {:?}", context, result);
            }
        }
        for (slot, before) in Slot::all().zip(before) {
            let now = self.get(slot);
            let context = format!("liveness: {slot:?}");
            match (before, now) {
                (None, None) => {}
                (None, Some(_)) => return Err(TestCaseError::fail(format!("{context}: appeared"))),
                (Some(b), now) if !is_deleting(&b) => {
                    let o =
                        now.ok_or_else(|| TestCaseError::fail(format!("{context}: vanished")))?;
                    let status = &o["status"];
                    let profile = object_profile(&o);
                    prop_assert_eq!(&status["phase"], "Ready", "{}: {}", context, o);
                    prop_assert_eq!(&status["observedGeneration"], &o["metadata"]["generation"]);
                    prop_assert_eq!(&condition(status, "Ready")["status"], "True");
                    let token = o["metadata"]["annotations"][REQUEST_ANNOTATION]
                        .as_str()
                        .unwrap_or("");
                    prop_assert_eq!(status["lastHandledRequest"].as_str().unwrap_or(""), token);
                    prop_assert_eq!(status["profile"].as_str(), Some(profile.as_str()));
                    prop_assert_eq!(finalizers(&o), vec![FINALIZER.to_string()]);
                    prop_assert_eq!(
                        self.infra.get(&profile),
                        Some(value_of(&o["spec"])),
                        "{}: infrastructure",
                        context
                    );
                }
                (Some(b), Some(o)) if destroys(&b) && protected(&b) && has_ours(&b) => {
                    let status = &o["status"];
                    prop_assert_eq!(&status["phase"], "Blocked", "{}: {}", context, o);
                    prop_assert_eq!(&status["observedGeneration"], &o["metadata"]["generation"]);
                    prop_assert_eq!(finalizers(&o), vec![FINALIZER.to_string()]);
                }
                (Some(_), Some(o)) => {
                    return Err(TestCaseError::fail(format!(
                        "{context}: deleting resource never went: {o}"
                    )))
                }
                (Some(_), None) => {}
            }
        }
        for (profile, want) in &expected {
            prop_assert_eq!(
                &self.infra.get(profile),
                want,
                "liveness: infrastructure of {}",
                profile
            );
        }
        // Settled means quiet: with no time passing nothing is due.
        let writes = self.writes();
        for slot in Slot::all() {
            let result = self.reconcile_one(slot, 0, 0).await;
            let context = format!("settled, {slot:?}");
            self.check(&context, &[&result])?;
            let report = result.map_err(|e| TestCaseError::fail(format!("{context}: {e}")))?;
            prop_assert!(
                matches!(report, Report::NotDue | Report::NotFound),
                "{}: {:?}",
                context,
                report
            );
        }
        prop_assert_eq!(self.writes(), writes, "settled resources were written");

        // Cost budget: an idle poll cycle is one list per type and nothing else.
        let before = self.before();
        self.poll(0, 0).await?;
        self.check("idle poll", &[])?;
        let (lists, gets) = {
            let ledger = self.audit.ledger();
            (ledger.lists(), ledger.calls(Operation::Get))
        };
        prop_assert_eq!(lists - before.lists, 2, "idle poll lists");
        prop_assert_eq!(gets, before.gets, "idle poll reads");
        prop_assert_eq!(self.writes(), before.writes, "idle poll writes");

        // Cost budget: a periodic check that finds the infrastructure
        // matching and ready observes only and writes status once.
        self.clock.advance(120_000);
        for slot in Slot::all() {
            let Some(object) = self.get(slot) else {
                continue;
            };
            let before = self.before();
            let effects = self.infra.count(Step::Converge) + self.infra.count(Step::Delete);
            let result = self.reconcile_one(slot, 1, 0).await;
            let context = format!("periodic check, {slot:?}");
            self.check(&context, &[&result])?;
            self.check_lone(&context, slot, &result, &before)?;
            let expected = if is_deleting(&object) {
                Report::Reconciled(Phase::Blocked, Reason::DestructionProtected)
            } else {
                Report::Reconciled(Phase::Ready, Reason::Converged)
            };
            prop_assert_eq!(result.ok(), Some(expected), "{}", context);
            prop_assert_eq!(self.writes() - before.writes, 1, "{}: writes", context);
            let now = self.infra.count(Step::Converge) + self.infra.count(Step::Delete);
            prop_assert_eq!(now, effects, "{}: effects", context);
        }
        Ok(())
    }
}

struct Before {
    uids: Vec<Value>,
    writes: usize,
    work: usize,
    gets: usize,
    lists: usize,
}

fn config(spec: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !spec.get("config").is_some_and(Value::is_object) {
        spec["config"] = json!({});
    }
    spec["config"].as_object_mut().expect("an object")
}

fn unset(spec: &mut Value, key: &str) {
    if let Some(map) = spec.as_object_mut() {
        map.remove(key);
    }
}

fn set_flag(map: &mut serde_json::Map<String, Value>, key: &str, on: bool) {
    if on {
        map.insert(key.into(), json!(true));
    } else {
        map.remove(key);
    }
}

/// Callback panics are planted on purpose: keep them out of the output.
fn quiet_planted_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let text = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or_default();
            if !text.contains(PLANTED_SECRET) {
                default(info);
            }
        }));
    });
}

fn run_case(initial: Initial, ops: &[Op]) -> Result<(), TestCaseError> {
    quiet_planted_panics();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let world = World::new(initial);
        let body = async {
            for (index, op) in ops.iter().enumerate() {
                world.step(index, *op).await?;
            }
            world.liveness().await
        };
        // A safety net only: a deadlocked controller fails instead of hanging.
        tokio::time::timeout(Duration::from_secs(60), body)
            .await
            .map_err(|_| TestCaseError::fail("the case did not finish within 60 s"))?
    })
}

// ----------------------------------------------------------- strategies

fn arb_slot() -> impl Strategy<Value = Slot> {
    (0..SLOTS.len()).prop_map(Slot)
}

fn arb_edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        2 => Just(Edit::Create),
        3 => Just(Edit::Delete),
        1 => Just(Edit::Replace),
        5 => (0u8..3).prop_map(Edit::Value),
        1 => any::<bool>().prop_map(Edit::Suspend),
        1 => any::<bool>().prop_map(Edit::Stopped),
        2 => proptest::option::of(any::<bool>()).prop_map(Edit::Destroy),
        2 => any::<bool>().prop_map(Edit::Protect),
        1 => any::<bool>().prop_map(Edit::Invalid),
        1 => proptest::option::of(0..PROFILES.len()).prop_map(Edit::Profile),
        1 => proptest::option::of(0..INTERVALS.len()).prop_map(Edit::Interval),
        2 => (0u8..3).prop_map(Edit::Request),
        1 => any::<bool>().prop_map(Edit::Foreign),
    ]
}

fn arb_fault() -> impl Strategy<Value = (Operation, Fault)> {
    let operation = prop_oneof![
        Just(Operation::UpdateStatus),
        Just(Operation::UpdateFinalizers),
        Just(Operation::Get),
        Just(Operation::List),
    ];
    let fault = prop_oneof![Just(Fault::Conflict), Just(Fault::Unavailable)];
    (operation, fault)
}

fn arb_script() -> impl Strategy<Value = (Step, Misbehaviour)> {
    let step = prop_oneof![
        1 => Just(Step::Validate),
        1 => Just(Step::Identity),
        2 => Just(Step::Observe),
        2 => Just(Step::Converge),
        2 => Just(Step::Delete),
    ];
    // `Exit(0)` claims success without doing anything: only observing
    // again can tell.
    let m = prop_oneof![
        Just(Misbehaviour::Error),
        Just(Misbehaviour::Panic),
        Just(Misbehaviour::Exit(1)),
        Just(Misbehaviour::Exit(0)),
    ];
    (step, m)
}

fn arb_advance() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0u64), Just(1_000), Just(60_000), 0u64..=120_000,]
}

fn arb_op() -> impl Strategy<Value = Op> {
    let by = 0usize..2;
    let hold = 0u8..3;
    prop_oneof![
        12 => (arb_slot(), arb_edit()).prop_map(|(s, e)| Op::User(s, e)),
        4 => arb_advance().prop_map(Op::Advance),
        2 => (0..PROFILES.len(), proptest::option::of(0u8..3)).prop_map(|(p, v)| Op::Drift(p, v)),
        1 => (0..PROFILES.len(), any::<bool>()).prop_map(|(p, r)| Op::Ready(p, r)),
        2 => arb_fault().prop_map(|(o, f)| Op::Fault(o, f)),
        2 => arb_script().prop_map(|(s, m)| Op::Script(s, m)),
        14 => (arb_slot(), by.clone(), hold.clone())
            .prop_map(|(at, by, hold)| Op::Reconcile { at, by, hold }),
        4 => (
            arb_slot(),
            by.clone(),
            0u8..4,
            arb_slot(),
            by.clone(),
            hold.clone(),
            proptest::option::weighted(0.3, (0u8..10, arb_edit())),
        )
            .prop_map(|(sa, ca, pick, sr, cr, hold, edit)| {
                let b = match pick {
                    0 | 1 => (sa, 1 - ca),
                    2 => (sa.partner(), cr),
                    _ => (sr, cr),
                };
                Op::Race {
                    a: (sa, ca),
                    b,
                    hold,
                    edit,
                }
            }),
        4 => (arb_slot(), by.clone(), 0u8..10, arb_edit(), hold.clone()).prop_map(
            |(at, by, after, edit, hold)| Op::Interrupted { at, by, after, edit, hold }
        ),
        1 => (by, hold).prop_map(|(by, hold)| Op::Poll { by, hold }),
    ]
}

fn arb_initial() -> impl Strategy<Value = Initial> {
    [
        (0u8..3, any::<bool>()),
        (0u8..3, any::<bool>()),
        (0u8..3, any::<bool>()),
    ]
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(64)
}

/// Proptest looks for `main.rs`'s seeds in `tests/proptest-regressions/`
/// by default; they stay beside the source, as they were for `model.rs`.
fn proptest_config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::with_cases(cases())
    }
}

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn controller_keeps_its_invariants(
        initial in arb_initial(),
        ops in proptest::collection::vec(arb_op(), 0..=40),
    ) {
        run_case(initial, &ops)?;
    }

    /// See `watching.rs`.
    #[test]
    fn watching_runtime_keeps_its_invariants_and_the_resync_backstop(
        initial in arb_initial(),
        ops in proptest::collection::vec(watching::arb_watch_op(), 0..=40),
    ) {
        watching::run_watch_case(initial, &ops)?;
    }
}
