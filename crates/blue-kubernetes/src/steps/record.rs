//! The record of a run in `status.workflow`: which run it is, and each
//! step with its state, key, times and result. Pure: the pass decides
//! when it is written.

use super::key::{step_key, Desired};
use crate::domain::time::format_ms;
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
    /// hand-edited into another shape) counts as no record.
    pub(crate) fn stored(status: Option<&Value>) -> Option<Record> {
        let workflow = status?.get("workflow")?;
        serde_json::from_value(workflow.clone()).ok()
    }

    /// The run `desired` continues: the stored one if it is for the same
    /// desired state and not done, else a new one numbered after it.
    pub(crate) fn current(stored: Option<Record>, desired: &Desired, now_ms: u64) -> Record {
        if let Some(stored) = stored {
            let same = stored.run == desired.run_id(stored.sequence);
            if same && stored.state != State::Done {
                return stored;
            }
            return Record::new(desired, stored.sequence.saturating_add(1), now_ms);
        }
        Record::new(desired, 1, now_ms)
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

    /// Step `name` of object `uid` is about to run: a `Done` step hands back
    /// its result and stays as it is; any other is recorded `Running`
    /// (again) with its key.
    pub(crate) fn begin(&mut self, uid: &str, name: &str, now_ms: u64) -> Result<Begun, Refused> {
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
        if let Some(entry) = self.entry_mut(name) {
            entry.state = State::Running;
            entry.attempts = entry.attempts.saturating_add(1);
            entry.start_time = now;
            entry.end_time = None;
            let key = entry.key.clone();
            return Ok(Begun::Run {
                key,
                interrupted: true,
            });
        }
        let key = step_key(uid, &self.run, name);
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
    /// the next effect for the same desired state is a new run.
    pub(crate) fn finish(&mut self, now_ms: u64) {
        if self.state != State::Done {
            self.state = State::Done;
            self.end_time = Some(format_ms(now_ms));
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
                        "state": state,
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
