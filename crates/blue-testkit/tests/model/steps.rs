//! The audit of durable steps (the gadgets' `converge` and `delete`): what
//! every landed status write records in `status.workflow`, set against the
//! steps the stepped package actually ran ([`StepRun`]s).
//!
//! - within one run no step recorded `Done` runs again;
//! - a step is recorded `Done` only after it ran and took effect in that
//!   run, so a run recorded done through its steps had every step's effect
//!   at least once (a run may also end by being found Ready, which the
//!   Ready rules of `oracle.rs` judge by the infrastructure itself);
//! - keys are at most 64 of `[a-z0-9-]`, one per (object, run, step) and
//!   never shared by two of them: stable within a run, different across
//!   runs; a run id names one desired state (generation and event), and
//!   its steps see that desired state;
//! - the Reconciling condition names the step in progress in fixed words.
//!
//! That no step starts after a lost record (a failed write, a crash) is
//! checked with the other calls after a failure (`invariants.rs`).

use crate::audit::Audit;
use crate::object::str_at;
use blue_testkit::{StepRun, CONVERGE_STEPS, DELETE_STEPS};
use serde_json::Value;
use std::collections::HashMap;

/// (uid, run, step name).
type Triple = (String, String, String);

/// What the step audit has seen.
#[derive(Debug, Default)]
pub struct StepLedger {
    /// Recorded `Done` by a write that landed, with how many steps had
    /// run by then: a later run of the same step is a second run of a
    /// `Done` step.
    done: HashMap<Triple, usize>,
    keys: HashMap<Triple, String>,
    owners: HashMap<String, Triple>,
    /// (uid, run) -> (generation, event).
    runs: HashMap<(String, String), (i64, String)>,
    /// Step runs scanned so far.
    scanned: usize,
    /// Found at writes, reported by the next scan.
    wrong: Vec<String>,
}

impl StepLedger {
    fn key(&mut self, triple: &Triple, key: &str) {
        if key.len() > 64
            || !key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            self.wrong
                .push(format!("key {key:?} of {triple:?} is no client token"));
        }
        match self.keys.get(triple) {
            Some(known) if known != key => self.wrong.push(format!(
                "{triple:?} has keys {known} and {key}: not stable within its run"
            )),
            Some(_) => {}
            None => {
                self.keys.insert(triple.clone(), key.to_string());
            }
        }
        match self.owners.get(key) {
            Some(owner) if owner != triple => self.wrong.push(format!(
                "key {key} belongs to {owner:?} and {triple:?}: shared across runs or steps"
            )),
            Some(_) => {}
            None => {
                self.owners.insert(key.to_string(), triple.clone());
            }
        }
    }

    fn run(&mut self, uid: &str, run: &str, generation: i64, event: &str, what: &str) {
        let desired = (generation, event.to_string());
        let at = (uid.to_string(), run.to_string());
        match self.runs.get(&at) {
            Some(known) if *known != desired => self.wrong.push(format!(
                "run {run} of {uid} is for {known:?} and ({what}) {desired:?}"
            )),
            Some(_) => {}
            None => {
                self.runs.insert(at, desired);
            }
        }
    }
}

/// The Reconciling condition's message: a fixed one, or a step in fixed
/// words naming one of the package's steps.
fn generic_progress(message: &str) -> bool {
    let names = CONVERGE_STEPS.iter().chain(&DELETE_STEPS);
    let stepped = |prefix: &str, suffix: &str| {
        message
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(suffix))
            .and_then(|rest| rest.split_once(" ("))
            .is_some_and(|(n, name)| {
                n.parse::<usize>().is_ok_and(|n| (1..=3).contains(&n))
                    && names.clone().any(|s| *s == name)
            })
    };
    !message.contains("step ")
        || stepped("converging infrastructure: step ", ")")
        || stepped("destroying infrastructure: step ", ")")
        || stepped("infrastructure work failed at step ", "); retrying")
}

impl Audit {
    /// After a status write landed: what its record says, checked against
    /// the steps run so far.
    pub fn audit_workflow_written(&self, written: &Value, runs: &[StepRun]) {
        let status = &written["status"];
        let reconciling = status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Reconciling");
        let mut ledger = self.steps();
        if let Some(message) = reconciling.and_then(|c| c["message"].as_str()) {
            if !generic_progress(message) {
                ledger
                    .wrong
                    .push(format!("Reconciling message {message:?}"));
            }
        }
        let Some(workflow) = status.get("workflow") else {
            return;
        };
        let uid = str_at(written, "/metadata/uid");
        let run = str_at(workflow, "/run");
        let generation = workflow["generation"].as_i64().unwrap_or(-1);
        ledger.run(
            uid,
            run,
            generation,
            str_at(workflow, "/event"),
            "its record",
        );
        for step in workflow["steps"].as_array().into_iter().flatten() {
            let name = str_at(step, "/name");
            let triple = (uid.to_string(), run.to_string(), name.to_string());
            ledger.key(&triple, str_at(step, "/key"));
            if step["state"] != "Done" || ledger.done.contains_key(&triple) {
                continue;
            }
            let ran = runs.iter().any(|r| {
                (&r.uid, &r.run, &r.name) == (&triple.0, &triple.1, &triple.2)
                    && r.effected
                    && r.finished
            });
            if !ran {
                ledger
                    .wrong
                    .push(format!("{triple:?} recorded Done without having run"));
            }
            ledger.done.insert(triple, runs.len());
        }
    }

    /// The steps run since the last scan: none of a `Done` step, keys and
    /// runs consistent. Returns what is wrong (and what writes found).
    pub fn scan_steps(&self, runs: &[StepRun]) -> Vec<String> {
        let mut ledger = self.steps();
        for (i, r) in runs.iter().enumerate().skip(ledger.scanned) {
            let triple = (r.uid.clone(), r.run.clone(), r.name.clone());
            if ledger.done.get(&triple).is_some_and(|at| i >= *at) {
                ledger
                    .wrong
                    .push(format!("{triple:?} ran again after it was recorded Done"));
            }
            ledger.key(&triple, &r.key);
            ledger.run(&r.uid, &r.run, r.generation, &r.event, "a step saw");
        }
        ledger.scanned = runs.len();
        std::mem::take(&mut ledger.wrong)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_messages_are_fixed_words_and_known_steps() {
        for fine in [
            "converging infrastructure",
            "converging infrastructure: step 2 (apply)",
            "destroying infrastructure: step 1 (drain)",
            "infrastructure work failed at step 3 (verify); retrying",
        ] {
            assert!(generic_progress(fine), "{fine}");
        }
        for wrong in [
            "converging infrastructure: step 2 (SECRET)",
            "converging infrastructure: step 9 (apply)",
            "step 1 (apply) failed: connection refused",
        ] {
            assert!(!generic_progress(wrong), "{wrong}");
        }
    }

    #[test]
    fn a_key_shared_by_two_runs_or_two_keys_for_one_step_are_reported() {
        let mut ledger = StepLedger::default();
        let a = ("u".to_string(), "r1".to_string(), "apply".to_string());
        let b = ("u".to_string(), "r2".to_string(), "apply".to_string());
        ledger.key(&a, "apply-1");
        ledger.key(&a, "apply-1");
        assert!(ledger.wrong.is_empty());
        ledger.key(&b, "apply-1");
        ledger.key(&a, "apply-2");
        ledger.key(&b, "Apply_3");
        assert_eq!(ledger.wrong.len(), 4, "{:?}", ledger.wrong);
    }
}
