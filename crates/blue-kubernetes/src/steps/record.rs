//! The record of a run in `status.workflow`: which run it is, and each
//! step with its state, key, times and result. Pure: the pass decides
//! when it is written.
//!
//! A stored record is read as a record, never as an authority: its run
//! is resumed only if its id is the one the desired state and its number
//! derive, and only if this process did not already go past it (see
//! `marks`); its keys are never read, each is derived again.

use super::key::{step_key, valid_name, Desired};
use super::marks::Mark;
use crate::domain::due::format_ms;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The largest result one step may record (1 KiB, as JSON): results are
/// facts a later step needs (an ID, a name), not documents.
pub const MAX_STEP_RESULT_BYTES: usize = 1024;

/// The most steps one run may record. With [`MAX_STEP_RESULT_BYTES`] this
/// keeps `status.workflow` under [`MAX_WORKFLOW_BYTES`].
pub const MAX_STEPS_PER_RUN: usize = 24;

/// The largest `status.workflow` the limits above allow (32 KiB as JSON);
/// no larger record can be made.
pub const MAX_WORKFLOW_BYTES: usize = 32 * 1024;

/// The largest run number a stored record may hold: the largest integer
/// every JSON reader keeps exact, far beyond what runs ever reach. A
/// stored record with a larger one counts as none, so a forged number
/// cannot make the next one run out.
pub(crate) const MAX_SEQUENCE: u64 = (1 << 53) - 1;

/// Where a run, or one of its steps, stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum State {
    /// Started and not known to have ended: a process that died, or a
    /// record that was lost, leaves it so.
    Running,
    /// Ended with an error (or a panic); retried with backoff.
    Failed,
    /// Ended; a step's result is recorded. Never run again in this run.
    Done,
    /// A step only: it was cut short (its process died, or its record was
    /// lost) and its run ended without it returning, because the next pass
    /// found the infrastructure in place (or the package no longer ran it).
    /// Whether its effect happened is unknown; it has no result and no end
    /// time.
    Interrupted,
}

/// One step of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) state: State,
    pub(crate) key: String,
    /// How many times the step was started in this run.
    pub(crate) attempts: u32,
    /// When its latest attempt started.
    pub(crate) start_time: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) end_time: Option<String>,
    /// The result of a `Done` step; `null` results are not written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) result: Option<Value>,
}

/// `status.workflow`: the latest run and its steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Record {
    /// The run's id (see `key`): a digest of uid, generation, request
    /// token, event and sequence.
    pub(crate) run: String,
    /// Counts the object's runs: each new run takes the next number.
    pub(crate) sequence: u64,
    /// The generation and event the run is for (the request token is in
    /// the id only: it is the user's text, of any length).
    pub(crate) generation: i64,
    pub(crate) event: String,
    pub(crate) state: State,
    pub(crate) start_time: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) end_time: Option<String>,
    #[serde(default)]
    pub(crate) steps: Vec<Entry>,
}

/// The run a pass works on, and what of the stored record it ignored to
/// choose it (reported once a write has replaced it).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Chosen {
    pub(crate) record: Record,
    /// Steps whose stored key was not the one they derive; the record
    /// now holds the derived one.
    pub(crate) forged_keys: Vec<String>,
    /// The stored run went back behind the process's mark (an older run,
    /// or the run it ended marked unfinished): a new run was started.
    pub(crate) rolled_back: bool,
}

/// What [`Record::begin`] found for a step.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Begun {
    /// Done earlier in this run: its recorded result.
    Recorded(Value),
    /// To run now, with this key; `interrupted` when an earlier attempt in
    /// this run started it and did not record it done.
    Run { key: String, interrupted: bool },
}

/// Why a step cannot be recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The run already has [`MAX_STEPS_PER_RUN`] steps.
    TooManySteps,
    /// The result's size as JSON, above [`MAX_STEP_RESULT_BYTES`].
    ResultTooLarge(usize),
}

impl Chosen {
    fn new(record: Record) -> Self {
        Chosen {
            record,
            forged_keys: Vec::new(),
            rolled_back: false,
        }
    }
}

/// Whether `object`'s recorded run was left `Running` with no process
/// working on it (when read from a list or watch by a process that has not
/// yet started it): its process died, or lost the write of its end.
pub(crate) fn left_running(object: &Value) -> bool {
    object
        .pointer("/status/workflow/state")
        .and_then(Value::as_str)
        == Some("Running")
}

impl Record {
    /// The record stored in `status`, if it is one: anything else (absent,
    /// hand-edited into another shape, a run number above
    /// [`MAX_SEQUENCE`]) counts as no record.
    pub(crate) fn stored(status: Option<&Value>) -> Option<Record> {
        let workflow = status?.get("workflow")?;
        let record: Record = serde_json::from_value(workflow.clone()).ok()?;
        (record.sequence <= MAX_SEQUENCE).then_some(record)
    }

    /// The run `desired` continues: the stored one if it is for the same
    /// desired state, not done, and not behind `mark` (the furthest this
    /// process went in the object's runs); else a new one numbered after
    /// both the stored one and the mark, so that no run number this
    /// process used comes back.
    pub(crate) fn current(
        stored: Option<Record>,
        desired: &Desired,
        mark: Option<Mark>,
        now_ms: u64,
    ) -> Chosen {
        let used = mark.map_or(0, |m| m.sequence);
        let Some(mut stored) = stored else {
            return Chosen::new(Record::new(desired, used.saturating_add(1), now_ms));
        };
        let rolled_back = mark.is_some_and(|m| {
            stored.sequence < m.sequence
                || (stored.sequence == m.sequence && m.ended && stored.state != State::Done)
        });
        if stored.is_for(desired) && stored.state != State::Done && !rolled_back {
            // What the id already proves, said again in plain fields.
            stored.generation = desired.generation;
            stored.event = desired.event.as_str().to_string();
            let forged_keys = stored.derive_keys(desired);
            return Chosen {
                record: stored,
                forged_keys,
                rolled_back,
            };
        }
        let next = stored.sequence.max(used).saturating_add(1);
        Chosen {
            rolled_back,
            ..Chosen::new(Record::new(desired, next, now_ms))
        }
    }

    fn new(desired: &Desired, sequence: u64, now_ms: u64) -> Record {
        Record {
            run: desired.run_id(sequence),
            sequence,
            generation: desired.generation,
            event: desired.event.as_str().to_string(),
            state: State::Running,
            start_time: format_ms(now_ms),
            end_time: None,
            steps: Vec::new(),
        }
    }

    /// Puts in every step the key it derives in this run, in place of
    /// what was stored; returns the steps whose stored key differed. (A
    /// step whose name is not one a package may give is never begun, so
    /// it has no key to derive.)
    pub(crate) fn derive_keys(&mut self, desired: &Desired) -> Vec<String> {
        let run = desired.run_id(self.sequence);
        let mut forged = Vec::new();
        for entry in self.steps.iter_mut().filter(|e| valid_name(&e.name)) {
            let key = step_key(desired.uid, &run, &entry.name);
            if entry.key != key {
                forged.push(entry.name.clone());
                entry.key = key;
            }
        }
        forged
    }

    /// This record is `desired`'s current run (whatever its state).
    pub(crate) fn is_for(&self, desired: &Desired) -> bool {
        self.run == desired.run_id(self.sequence)
    }

    /// Step `name` is recorded `Done` in this run.
    pub(crate) fn is_done(&self, name: &str) -> bool {
        self.steps
            .iter()
            .any(|e| e.name == name && e.state == State::Done)
    }

    fn entry_mut(&mut self, name: &str) -> Option<&mut Entry> {
        self.steps.iter_mut().find(|e| e.name == name)
    }

    /// Step `name` of `desired`'s run is about to run: a `Done` step hands
    /// back its result and stays as it is; any other is recorded
    /// `Running` (again) with its key, derived here and never read from
    /// the record.
    pub(crate) fn begin(
        &mut self,
        desired: &Desired,
        name: &str,
        now_ms: u64,
    ) -> Result<Begun, Refused> {
        let now = format_ms(now_ms);
        if let Some(entry) = self.steps.iter().find(|e| e.name == name) {
            if entry.state == State::Done {
                return Ok(Begun::Recorded(entry.result.clone().unwrap_or(Value::Null)));
            }
        } else if self.steps.len() >= MAX_STEPS_PER_RUN {
            return Err(Refused::TooManySteps);
        }
        self.state = State::Running;
        self.end_time = None;
        let key = step_key(desired.uid, &desired.run_id(self.sequence), name);
        if let Some(entry) = self.entry_mut(name) {
            entry.state = State::Running;
            entry.key = key.clone();
            entry.attempts = entry.attempts.saturating_add(1);
            entry.start_time = now;
            entry.end_time = None;
            return Ok(Begun::Run {
                key,
                interrupted: true,
            });
        }
        self.steps.push(Entry {
            name: name.to_string(),
            state: State::Running,
            key: key.clone(),
            attempts: 1,
            start_time: now,
            end_time: None,
            result: None,
        });
        Ok(Begun::Run {
            key,
            interrupted: false,
        })
    }

    /// Step `name` returned `result`; too large a result leaves it failed.
    pub(crate) fn done(&mut self, name: &str, result: Value, now_ms: u64) -> Result<(), Refused> {
        let size = result.to_string().len();
        if size > MAX_STEP_RESULT_BYTES {
            self.failed(name, now_ms);
            return Err(Refused::ResultTooLarge(size));
        }
        if let Some(entry) = self.entry_mut(name) {
            entry.state = State::Done;
            entry.end_time = Some(format_ms(now_ms));
            entry.result = (!result.is_null()).then_some(result);
        }
        Ok(())
    }

    /// Step `name` failed, or never returned (a panic).
    pub(crate) fn failed(&mut self, name: &str, now_ms: u64) {
        if let Some(entry) = self.entry_mut(name) {
            entry.state = State::Failed;
            entry.end_time = Some(format_ms(now_ms));
        }
        self.state = State::Failed;
    }

    /// The pass failed outside any step: the run is retried from where it is.
    pub(crate) fn run_failed(&mut self) {
        if self.state != State::Done {
            self.state = State::Failed;
        }
    }

    /// The run ended (its callback succeeded, or the resource is Ready):
    /// the next effect for the same desired state is a new run. A step
    /// still recorded `Running` will never run again in it: it is recorded
    /// `Interrupted`, so the record does not claim work in progress.
    pub(crate) fn finish(&mut self, now_ms: u64) {
        if self.state != State::Done {
            self.state = State::Done;
            self.end_time = Some(format_ms(now_ms));
        }
        for entry in self.steps.iter_mut().filter(|e| e.state == State::Running) {
            entry.state = State::Interrupted;
        }
    }

    pub(crate) fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| json!({}))
    }

    /// The Reconciling condition's message while this run is in progress
    /// or failed at a step: fixed words, the step's number and its name
    /// (the package's constant), nothing the step returned or raised.
    pub(crate) fn progress(&self, deleting: bool) -> Option<String> {
        let (at, entry) = self
            .steps
            .iter()
            .enumerate()
            .rev()
            .find(|(_, e)| e.state != State::Done)?;
        let number = at + 1;
        let name = &entry.name;
        Some(match (entry.state, deleting) {
            (State::Failed, _) => {
                format!("infrastructure work failed at step {number} ({name}); retrying")
            }
            (_, false) => format!("converging infrastructure: step {number} ({name})"),
            (_, true) => format!("destroying infrastructure: step {number} ({name})"),
        })
    }
}

/// The schema of `status.workflow` in the generated CRD.
pub(crate) fn status_schema() -> Value {
    let string = json!({"type": "string"});
    let time = json!({"type": "string", "format": "date-time"});
    let state = json!({"type": "string", "enum": ["Running", "Failed", "Done"]});
    let step_state =
        json!({"type": "string", "enum": ["Running", "Failed", "Done", "Interrupted"]});
    json!({
        "type": "object",
        "description": "The latest durable-steps run of converge or delete: its identity and each step's state, idempotency key, times and result.",
        "properties": {
            "run": string,
            "sequence": {"type": "integer", "minimum": 0},
            "generation": {"type": "integer", "format": "int64"},
            "event": {"type": "string", "enum": ["create", "stop", "delete"]},
            "state": state,
            "startTime": time,
            "endTime": time,
            "steps": {
                "type": "array",
                "maxItems": MAX_STEPS_PER_RUN,
                "items": {
                    "type": "object",
                    "required": ["name", "state", "key"],
                    "properties": {
                        "name": {"type": "string", "maxLength": super::key::MAX_STEP_NAME_BYTES},
                        "state": step_state,
                        "key": {"type": "string", "maxLength": super::key::MAX_KEY_BYTES},
                        "attempts": {"type": "integer", "minimum": 0},
                        "startTime": time,
                        "endTime": time,
                        "result": {"x-kubernetes-preserve-unknown-fields": true},
                    },
                },
            },
        },
    })
}

#[cfg(test)]
mod tests;
