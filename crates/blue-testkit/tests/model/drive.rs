//! Driving the world: the generated operations (user edits, clock
//! advances, drift, unreadiness, faults, scripted misbehaviour of
//! callbacks and of durable steps, and reconciles: lone, racing,
//! interrupted by an edit, crashed (the process dies after or before a
//! status write, or while an effect is held, and a new one starts), and
//! polling cycles), how each is applied, and a whole case: every step
//! checked, then liveness.
//!
//! Deterministic: a current-thread runtime per case, a [`FakeClock`], no
//! sleeps; concurrency comes from `tokio::join!` over futures that yield at
//! every cluster call (`client.rs`) and while effects are held at the
//! [`FakeInfra`] gate.

use crate::common::{finalizers, NS};
use crate::object::is_deleting;
use crate::world::{Initial, Slot, World, FOREIGN, INTERVALS, PROFILES};
use blue_kubernetes::config::REQUEST_ANNOTATION;
use blue_kubernetes::{reconcile, start, Error, Report};
use blue_testkit::{Callback, Crash, CrashAt, Fault, Misbehaviour, Operation, PLANTED_SECRET};
use blue_testkit::{CONVERGE_STEPS, DELETE_STEPS};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};
use std::cell::Cell;
use std::sync::Once;
use std::time::Duration;

/// A user action on one resource (what `kubectl apply/edit/annotate/delete` does).
#[derive(Clone, Copy, Debug)]
pub enum Edit {
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
pub enum Op {
    User(Slot, Edit),
    Advance(u64),
    /// Drift: set (or remove) a profile's infrastructure behind the controller.
    Drift(usize, Option<u8>),
    Ready(usize, bool),
    Fault(Operation, Fault),
    Script(Callback, Misbehaviour),
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
    /// A reconcile whose process dies at `point`, after the user set the
    /// value to `value` (so that there is a run to interrupt); controller
    /// `by` starts again with nothing in memory.
    Crash {
        at: Slot,
        by: usize,
        value: Option<u8>,
        point: CrashPoint,
        hold: u8,
    },
    /// Scripts the next run of a durable step (an index into
    /// [`CONVERGE_STEPS`] then [`DELETE_STEPS`]) to misbehave.
    ScriptStep(usize, Misbehaviour),
}

/// Where a crashed pass dies.
#[derive(Clone, Copy, Debug)]
pub enum CrashPoint {
    /// Just after its `n`-th status write lands (the answer is lost).
    AfterWrite(u8),
    /// Just before its `n`-th status write (it never lands).
    BeforeWrite(u8),
    /// While its `n`-th effect is held at the gate: a durable step after
    /// its effect, a plain converge or delete before it.
    InEffect(u8),
}

/// The name of durable step `i` of [`Op::ScriptStep`].
pub fn step_name(i: usize) -> &'static str {
    CONVERGE_STEPS
        .iter()
        .chain(&DELETE_STEPS)
        .nth(i)
        .copied()
        .expect("a known step")
}

impl World {
    /// Applies a user action; actions on a missing resource do nothing.
    pub fn apply(&self, slot: Slot, edit: Edit) {
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
        self.release_effects_or_crash(done, total, hold, None).await
    }

    /// [`release_effects`](Self::release_effects), except that the
    /// `n`-th effect held from now on crashes the process instead.
    async fn release_effects_or_crash(
        &self,
        done: &Cell<usize>,
        total: usize,
        hold: u8,
        crash: Option<(u8, &Crash)>,
    ) {
        let base = self.infra.effects_started_count();
        let mut waited = 0u8;
        let mut spins = 0u32;
        while done.get() < total {
            tokio::task::yield_now().await;
            spins += 1;
            assert!(spins < 1_000_000, "the driven futures never finish");
            if self.effect_waiting() {
                let nth = self.infra.effects_started_count() - base;
                match crash {
                    Some((n, crash)) if usize::from(n) == nth => crash.now(),
                    _ if waited >= hold => {
                        self.release_effect();
                        waited = 0;
                    }
                    _ => waited += 1,
                }
            }
        }
    }

    /// A reconcile that dies at `point`, and the restart after it.
    async fn crash(&self, slot: Slot, by: usize, point: CrashPoint, hold: u8) {
        let crash = &self.crashes[by];
        // (Armed for nothing that happens, for a crash inside an effect.)
        crash.arm(match point {
            CrashPoint::AfterWrite(n) => CrashAt::AfterStatusWrite(n.into()),
            CrashPoint::BeforeWrite(n) => CrashAt::BeforeStatusWrite(n.into()),
            CrashPoint::InEffect(_) => CrashAt::BeforeStatusWrite(usize::MAX),
        });
        let in_effect = match point {
            CrashPoint::InEffect(n) => Some((n, crash)),
            _ => None,
        };
        let (done, counted) = (Cell::new(0), Cell::new(0));
        tokio::join!(
            async {
                let pass = self.reconcile_counted(slot, by, &counted);
                let _ = crash.run(pass).await;
                done.set(1);
            },
            self.release_effects_or_crash(&done, 1, hold, in_effect)
        );
        crash.disarm();
        if crash.crashed() {
            self.restart(by);
        }
    }

    async fn reconcile_counted(
        &self,
        slot: Slot,
        by: usize,
        done: &Cell<usize>,
    ) -> Result<Report, Error> {
        let controller = self.controller(by);
        let result = reconcile(&controller, self.package(slot), NS, slot.name()).await;
        done.set(done.get() + 1);
        result
    }

    pub async fn reconcile_one(&self, slot: Slot, by: usize, hold: u8) -> Result<Report, Error> {
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

    pub async fn poll(&self, by: usize, hold: u8) -> Result<(), TestCaseError> {
        let runtime = start(self.controller(by)).expect("inside a runtime");
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
            Op::Crash {
                at,
                by,
                value,
                point,
                hold,
            } => {
                if let Some(v) = value {
                    self.apply(at, Edit::Value(v));
                }
                self.crash(at, by, point, hold).await
            }
            Op::ScriptStep(step, m) => self.infra.script_step(step_name(step), m),
        }
        self.check(&context, &[])
    }
}

/// The spec's `config` map, made an empty one first if it is not a map.
pub fn config(spec: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !spec.get("config").is_some_and(Value::is_object) {
        spec["config"] = json!({});
    }
    spec["config"].as_object_mut().expect("an object")
}

pub fn unset(spec: &mut Value, key: &str) {
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

/// A case runs alone on a current-thread runtime: concurrency only where
/// the driver joins futures, so a seed replays exactly.
pub fn case_runtime(start_paused: bool) -> tokio::runtime::Runtime {
    quiet_planted_panics();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(start_paused)
        .build()
        .expect("a runtime")
}

pub fn run_case(initial: Initial, ops: &[Op]) -> Result<(), TestCaseError> {
    case_runtime(false).block_on(async {
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
