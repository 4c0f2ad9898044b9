//! The safety checks, after every step:
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
//! and also: every status write follows the status rules (`oracle.rs`);
//! every effect was announced by a successful Reconciling/Deleting write;
//! a lone reconcile is never `Busy`, reads the object at most twice, stops
//! at the first failed call, and when `NotDue` or `Changed` writes nothing
//! and runs no callback but `identity`. Invariants 2 and 3 and the status
//! rules are judged by the audit at each write; the checks here collect
//! its findings.

use crate::common::{condition, NS};
use crate::object::has_ours;
use crate::world::{Slot, World, PROFILES};
use blue_kubernetes::{is_locked, Error, Report};
use blue_testkit::{Callback, Operation, PLANTED_SECRET};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::Value;
use std::collections::BTreeMap;

/// What a step found, to tell what the step itself did.
pub struct Before {
    pub uids: Vec<Value>,
    pub writes: usize,
    pub work: usize,
    pub gets: usize,
    pub lists: usize,
}

impl World {
    /// Invariants 1, 2, 3 (audited on every write), 4 (writes and the
    /// given reports) and 5, checked after every step.
    pub fn check(
        &self,
        context: &str,
        reports: &[&Result<Report, Error>],
    ) -> Result<(), TestCaseError> {
        let max = self.infra.max_concurrent_effects();
        prop_assert!(
            max <= 1,
            "{context}: {max} effects at once for one identity"
        );
        let violations = std::mem::take(&mut self.audit.ledger().violations);
        prop_assert!(violations.is_empty(), "{context}: {violations:#?}");
        // Each effect (a plain converge or delete, or a durable step) was
        // announced (Reconciling/Deleting with its profile) by a status
        // write of its own that succeeded.
        let mut effects: BTreeMap<String, usize> = BTreeMap::new();
        for r in self.infra.records() {
            if matches!(r.callback, Callback::Converge | Callback::Delete) {
                *effects.entry(r.profile).or_default() += 1;
            }
        }
        for r in self.infra.step_runs() {
            *effects.entry(r.profile).or_default() += 1;
        }
        for wrong in self.audit.scan_steps(&self.infra.step_runs()) {
            prop_assert!(false, "{context}: {wrong}");
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
    pub fn before(&self) -> Before {
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

    /// A lone reconcile: never Busy; reads the object at most twice (once,
    /// and once more under the lock) and lists nothing; one that finds
    /// nothing to do writes nothing and runs no callback but `identity`; and
    /// after a failed call (fault or conflict) the pass stops: no further
    /// call, no further callback (but an observe already under way beside
    /// a publish). The report tells what happened: the
    /// status holds the reported phase and reason, and `Released` left no
    /// finalizer of ours.
    pub fn check_lone(
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
        let steps_at_failure = ledger.steps_at_failure;
        drop(ledger);
        if let Some(steps) = steps_at_failure {
            // No step starts after a step record (or any write) was lost.
            let later = &self.infra.step_runs()[steps..];
            prop_assert!(
                later.is_empty(),
                "{}: steps after a failed call: {:?}",
                context,
                later
            );
        }
        if let Some(callbacks) = failed_at {
            prop_assert_eq!(after, 0, "{}: calls after a failed call", context);
            // Reconciling is published while observing when an effect is
            // expected, so one read-only observe may finish after a failed
            // publish; nothing else may run.
            let later: Vec<Callback> = self.infra.records()[callbacks..]
                .iter()
                .map(|r| r.callback)
                .collect();
            prop_assert!(
                later.is_empty() || later == [Callback::Observe],
                "{}: callbacks after a failed call: {:?}",
                context,
                later
            );
        }
        Ok(())
    }
}
