//! Status is a record, never an authority: a key or a run number written
//! into `status.workflow` by whoever may write `/status` never reaches a
//! package. Keys are derived every time; a rolled-back or edited run
//! number never brings back an older run's keys.

use super::{logged, reconcile_after_backoff, Bed, FAILED, READY};
use crate::chain::Chain;
use crate::common::{widgets, NS};
use blue_kubernetes_client::Client;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use tracing::Level;

/// What an idempotency key must look like, whatever status holds.
fn well_formed(key: &str) -> bool {
    (1..=64).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Rewrites the stored `status.workflow` as a status writer could.
async fn forge_workflow(bed: &Bed, forge: impl FnOnce(&mut Value)) {
    let object = bed.cluster.get(&widgets(), NS, "w").unwrap();
    let mut status = object["status"].clone();
    forge(&mut status["workflow"]);
    bed.cluster
        .update_status(&widgets(), &object, &status)
        .await
        .unwrap();
}

fn ignored(bed: &Bed, what: &str) -> String {
    let wanted = format!("blue_step_records_ignored_total{{what=\"{what}\"}}");
    let text = bed.controller.metrics().encode();
    text.lines()
        .find(|l| l.starts_with(&wanted))
        .map(|l| l.rsplit(' ').next().unwrap().to_string())
        .unwrap_or_else(|| "absent".into())
}

#[test]
fn a_stored_key_that_is_not_the_derived_one_never_reaches_the_package() {
    // Another resource's key (the interrupted step would look for, and
    // adopt, another tenant's infrastructure), and no key at all.
    let other_key = {
        let chain = Chain::new();
        let bed = Bed::new(chain.package(2));
        bed.create(json!({"config": {"value": 1}}));
        let (report, _) = logged(bed.reconcile());
        assert_eq!(report, READY);
        chain.ran_of("s2")[0].key.clone()
    };
    for forged in [other_key.as_str(), "Another_Tenant's KEY"] {
        let chain = Chain::new();
        let bed = Bed::new(chain.package(2));
        bed.create(json!({"config": {"value": 1}}));
        chain.fail("s2", 1);
        let (report, _) = logged(bed.reconcile());
        assert_eq!(report, FAILED);
        let derived = chain.ran_of("s2")[0].key.clone();
        assert_ne!(derived, forged);
        let (report, lines) = logged(async {
            forge_workflow(&bed, |w| w["steps"][1]["key"] = json!(forged)).await;
            reconcile_after_backoff(&bed).await
        });
        assert_eq!(report, READY, "{forged}");
        let again = chain.ran_of("s2");
        assert_eq!(again.len(), 2);
        assert!(again[1].interrupted, "the retry of a failed step");
        assert_eq!(again[1].key, derived, "{forged:?} was handed out");
        assert!(well_formed(&again[1].key), "{}", again[1].key);
        let stored = bed.status()["workflow"]["steps"][1]["key"].clone();
        assert_eq!(stored, json!(derived), "the record is rewritten");
        // Counted, and logged for the operator without the value.
        assert_eq!(ignored(&bed, "key"), "1", "{forged}");
        let text: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
        assert!(!text.contains(forged), "the forged key reached the log");
        let said = lines
            .iter()
            .any(|(level, l)| *level == Level::WARN && l.contains("step=\"s2\""));
        assert!(said, "no WARN names the step:\n{text}");
    }
}

#[test]
fn a_rolled_back_or_reopened_run_never_hands_out_an_older_runs_keys() {
    let chain = Chain::new();
    let bed = Bed::new(chain.package(2));
    bed.create(json!({"config": {"value": 1}, "reconcileInterval": "1s"}));
    let (report, _) = logged(bed.reconcile());
    assert_eq!(report, READY);
    let first = bed.status()["workflow"].clone();
    chain.drift("dev--w");
    let (report, _) = logged(reconcile_after_backoff(&bed));
    assert_eq!(report, READY);
    let second = bed.status()["workflow"].clone();
    assert_eq!(
        (first["sequence"].clone(), second["sequence"].clone()),
        (json!(1), json!(2))
    );
    // Each forgery, then drift that makes the next pass run the steps.
    let reopen = |w: &mut Value| {
        w["state"] = json!("Running");
        for step in w["steps"].as_array_mut().unwrap() {
            step["state"] = json!("Failed");
        }
    };
    // (what, put the first run's record back, mark it unfinished)
    let forgeries = [
        // The first run's record as it was: the next run would be number
        // 2 again.
        ("run 1 restored", true, false),
        // The first run as unfinished: it would be resumed.
        ("run 1 reopened", true, true),
        // The latest run, ended, marked unfinished again.
        ("latest reopened", false, true),
    ];
    let mut seen: BTreeSet<String> = chain.ran().into_iter().map(|r| r.key).collect();
    let mut highest = 2;
    for (what, restore, unfinished) in forgeries {
        let before = chain.ran().len();
        let forge = |w: &mut Value| {
            if restore {
                *w = first.clone();
            }
            if unfinished {
                reopen(w);
            }
        };
        let (report, _) = logged(async {
            forge_workflow(&bed, forge).await;
            chain.drift("dev--w");
            reconcile_after_backoff(&bed).await
        });
        assert_eq!(report, READY, "{what}");
        let ran = chain.ran()[before..].to_vec();
        assert_eq!(ran.len(), 2, "{what}: both steps ran");
        for step in &ran {
            assert!(well_formed(&step.key));
            assert!(!step.interrupted, "{what}: a new run starts fresh");
            assert!(
                seen.insert(step.key.clone()),
                "{what}: {} repeats an older run's key",
                step.name
            );
        }
        let sequence = bed.status()["workflow"]["sequence"].as_u64().unwrap();
        assert!(
            sequence > highest,
            "{what}: run {sequence} after run {highest}"
        );
        highest = sequence;
    }
    assert_eq!(ignored(&bed, "run"), "3", "each rollback is counted");
}

#[test]
fn a_run_this_process_left_unfinished_still_resumes_with_its_keys() {
    // The guard against rollbacks must not break resuming: a failed step
    // of the run this process started reruns with the same key.
    let chain = Chain::new();
    let bed = Bed::new(chain.package(2));
    bed.create(json!({"config": {"value": 1}}));
    chain.fail("s2", 2);
    assert_eq!(logged(bed.reconcile()).0, FAILED);
    assert_eq!(logged(reconcile_after_backoff(&bed)).0, FAILED);
    assert_eq!(logged(reconcile_after_backoff(&bed)).0, READY);
    let s2 = chain.ran_of("s2");
    assert_eq!(s2.len(), 3);
    assert!(s2.iter().all(|r| r.key == s2[0].key && r.run == s2[0].run));
    assert_eq!(bed.status()["workflow"]["sequence"], 1);
    assert_eq!(ignored(&bed, "run"), "0");
    assert_eq!(ignored(&bed, "key"), "0");
}
