//! Liveness, at the end of a case: faults, scripts, foreign finalizers,
//! invalid flags and intervals, profile edits, unready marks and
//! suspensions are undone (resources sharing a profile get one value), then
//! the clock advances in 61 s rounds with everything reconciled each round,
//! enough rounds for any leftover script. Then every live resource is Ready
//! for its generation and request token with the infrastructure holding
//! its value; deleting ones are gone (`Destroy`: infrastructure gone too;
//! `Retain`: left as it was) unless protected (Blocked, finalizer kept);
//! nothing is due without time passing; an idle poll costs one list per
//! type; a periodic check observes only and writes status once.

use crate::common::{condition, finalizers};
use crate::drive::{config, unset, Edit};
use crate::object::{destroys, has_ours, is_deleting, object_profile, protected, value_of};
use crate::world::{Slot, World, PROFILES};
use blue_kubernetes::config::{FINALIZER, REQUEST_ANNOTATION};
use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes::Report;
use blue_testkit::Operation;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Settled, for a resource live when liveness began: Ready for its
/// generation and request token, its profile recorded, only our finalizer.
pub fn ready_for_its_generation(context: &str, o: &Value) -> Result<(), TestCaseError> {
    let status = &o["status"];
    prop_assert_eq!(&status["phase"], "Ready", "{}: {}", context, o);
    prop_assert_eq!(
        &status["observedGeneration"],
        &o["metadata"]["generation"],
        "{}: {}",
        context,
        o
    );
    prop_assert_eq!(&condition(status, "Ready")["status"], "True", "{}", context);
    let token = o["metadata"]["annotations"][REQUEST_ANNOTATION]
        .as_str()
        .unwrap_or("");
    let handled = status["lastHandledRequest"].as_str().unwrap_or("");
    prop_assert_eq!(handled, token, "{}: {}", context, o);
    let profile = object_profile(o);
    prop_assert_eq!(
        status["profile"].as_str(),
        Some(profile.as_str()),
        "{}",
        context
    );
    prop_assert_eq!(finalizers(o), vec![FINALIZER.to_string()], "{}", context);
    Ok(())
}

impl World {
    /// Each profile's infrastructure ended as `settle_desired_state` said.
    pub fn check_infrastructure(
        &self,
        expected: &BTreeMap<String, Option<Value>>,
    ) -> Result<(), TestCaseError> {
        for (profile, want) in expected {
            prop_assert_eq!(
                &self.infra.get(profile),
                want,
                "liveness: infrastructure of {}",
                profile
            );
        }
        Ok(())
    }

    /// Undoes everything that may legitimately keep a resource from
    /// settling, then returns what each profile's infrastructure must end as
    /// (`None` inside: absent; missing: left as it is now).
    pub fn settle_desired_state(&self) -> BTreeMap<String, Option<Value>> {
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

    pub async fn liveness(&self) -> Result<(), TestCaseError> {
        let leftover_scripts = self.leftover_scripts();
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
                    ready_for_its_generation(&context, &o)?;
                    prop_assert_eq!(
                        self.infra.get(&object_profile(&o)),
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
        self.check_infrastructure(&expected)?;
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
        // The longest interval (2m) plus its largest uid stretch (< 10%).
        self.clock.advance(132_000);
        for slot in Slot::all() {
            let Some(object) = self.get(slot) else {
                continue;
            };
            let before = self.before();
            let effects = self.effects();
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
            prop_assert_eq!(self.effects(), effects, "{}: effects", context);
        }
        Ok(())
    }
}
