//! The PostgreSQL example's steps audit (test hook `audit-steps`: one row per step
//! attempt, written before its effect) read back and checked against the
//! durable-steps guarantees: within a run, no step recorded `Done` runs
//! again (once a later step started, an earlier one never reappears), a
//! repeated step is always an interrupted one, no step ran more often than
//! its record says it started, and every step of a finished run ran.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{ensure, Context, Result};
use serde_json::Value;

use super::world::Postgres;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// `namespace/name`.
    pub resource: String,
    pub run: String,
    pub step: String,
    pub interrupted: bool,
}

/// What [`check`] counted.
#[derive(Debug, Default)]
pub struct Summary {
    pub runs: usize,
    pub attempts: usize,
    /// Attempts that re-ran a step cut short (interrupted).
    pub reruns: usize,
}

impl Postgres {
    /// The audit, oldest first.
    pub fn audit(&self) -> Result<Vec<Attempt>> {
        let sql =
            "SELECT resource, run, step, interrupted FROM postgres_operator_audit ORDER BY id";
        let rows = self.admin(sql)?;
        let attempt = |line: &str| {
            let f: Vec<&str> = line.split('|').collect();
            ensure!(f.len() == 4, "audit row {line:?}");
            Ok(Attempt {
                resource: f[0].into(),
                run: f[1].into(),
                step: f[2].into(),
                interrupted: f[3] == "t",
            })
        };
        rows.lines().map(attempt).collect()
    }

    /// The steps `name`'s attempts ran, oldest first, re-runs marked `!`.
    pub fn attempts_of(&self, name: &str) -> Result<Vec<String>> {
        let resource = format!("{}/{name}", self.kube.namespace());
        let audit = self.audit()?.into_iter().filter(|a| a.resource == resource);
        let mark = |a: Attempt| format!("{}{}", a.step, if a.interrupted { "!" } else { "" });
        Ok(audit.map(mark).collect())
    }

    /// [`check`]s the whole audit against the resources that exist now.
    pub fn check_audit(&self) -> Result<Summary> {
        let resources = self.kube.items(&["get", blue_e2e::postgres::PGDB])?;
        check(&self.audit()?, &resources)
    }
}

/// Checks `audit` against the rules of the module's docs; `resources` are
/// the `PostgresDatabase`s whose recorded run (`status.workflow`) the
/// audit must not contradict.
pub fn check(audit: &[Attempt], resources: &[Value]) -> Result<Summary> {
    let mut runs: BTreeMap<(&str, &str), Vec<&Attempt>> = BTreeMap::new();
    for a in audit {
        runs.entry((&a.resource, &a.run)).or_default().push(a);
    }
    let mut summary = Summary {
        runs: runs.len(),
        attempts: audit.len(),
        reruns: 0,
    };
    for ((resource, run), attempts) in &runs {
        let (mut seen, mut last) = (BTreeSet::new(), None);
        for a in attempts {
            let step = a.step.as_str();
            if last == Some(step) {
                ensure!(
                    a.interrupted,
                    "{resource} run {run}: {step} repeated, not interrupted"
                );
                summary.reruns += 1;
                continue;
            }
            let first = seen.insert(step);
            ensure!(
                first,
                "{resource} run {run}: {step} ran again after a later step (it was Done)"
            );
            last = Some(step);
        }
    }
    for r in resources {
        let meta = &r["metadata"];
        let resource = format!("{}/{}", text(&meta["namespace"]), text(&meta["name"]));
        let workflow = &r["status"]["workflow"];
        let run = text(&workflow["run"]);
        let steps = workflow["steps"].as_array().map_or(&[][..], Vec::as_slice);
        for step in steps {
            let name = text(&step["name"]);
            let ran = runs.get(&(resource.as_str(), run)).map_or(0, |attempts| {
                attempts.iter().filter(|a| a.step == name).count()
            });
            let started = step["attempts"]
                .as_u64()
                .context("a step without attempts")?;
            ensure!(
                ran as u64 <= started,
                "{resource} run {run}: {name} ran {ran} times, started {started}"
            );
            let finished = workflow["state"] == "Done" && step["state"] == "Done";
            ensure!(
                !finished || ran > 0,
                "{resource} run {run}: {name} is Done and never ran"
            );
        }
    }
    Ok(summary)
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attempts(steps: &[&str]) -> Vec<Attempt> {
        let attempt = |s: &&str| Attempt {
            resource: "ns/a".into(),
            run: "r1".into(),
            step: s.trim_end_matches('!').into(),
            interrupted: s.ends_with('!'),
        };
        steps.iter().map(attempt).collect()
    }

    #[test]
    fn interrupted_reruns_pass_and_a_done_step_run_again_fails() {
        let ok = attempts(&["password", "role", "role!", "database"]);
        assert_eq!(check(&ok, &[]).unwrap().reruns, 1);
        let again = attempts(&["password", "role", "password!"]);
        assert!(check(&again, &[]).is_err());
        let uninterrupted = attempts(&["password", "password"]);
        assert!(check(&uninterrupted, &[]).is_err());
    }

    #[test]
    fn the_record_bounds_the_attempts_and_a_finished_run_has_each_step() {
        let resource = |steps: Value| {
            json!({"metadata": {"namespace": "ns", "name": "a"},
                   "status": {"workflow": {"run": "r1", "state": "Done", "steps": steps}}})
        };
        let once = resource(json!([{"name": "role", "state": "Done", "attempts": 1}]));
        assert!(check(&attempts(&["role"]), std::slice::from_ref(&once)).is_ok());
        assert!(check(&attempts(&["role", "role!"]), std::slice::from_ref(&once)).is_err());
        assert!(check(&attempts(&[]), &[once]).is_err());
    }
}
