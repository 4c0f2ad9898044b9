//! The durable-steps run a pass works on, in memory: part of what the
//! pass accumulates (`steps.rs` answers the steps with it), put into each
//! status write and marked in the process once a write lands.

use super::protocol::Halt;
use crate::domain::status::Transition;
use crate::memory::Memory;
use crate::resource::Phase;
use crate::steps::{Chosen, Ignored, Mark, Record, State};
use crate::telemetry::log::{self, Subject};
use crate::telemetry::Metrics;
use std::collections::HashSet;

/// The run a pass works on, in memory: written with each of its status
/// writes.
pub(super) struct Workflow {
    pub(super) record: Record,
    /// The step between its start and its end.
    pub(super) running: Option<String>,
    /// A step record could not be written: no later step may start, and
    /// the pass stops once the callback returns.
    pub(super) halt: Option<Halt>,
    /// A step ran in this pass: the next boundary is one a stopping
    /// runtime may end the pass at.
    pub(super) ran: bool,
    /// The names `run` was called with in this pass: each may be used once.
    pub(super) named: HashSet<String>,
    /// What of the stored record was ignored, until a write replaces it:
    /// a pass that loses its first write (a stale snapshot) reports
    /// nothing, so only real rewrites of status are logged and counted.
    pub(super) ignored: Notes,
}

/// Claims of the stored record a pass ignored.
#[derive(Default)]
pub(super) struct Notes {
    pub(super) forged_keys: Vec<String>,
    pub(super) rolled_back: bool,
}

impl Workflow {
    pub(super) fn new(record: Record) -> Self {
        Self {
            record,
            running: None,
            halt: None,
            ran: false,
            named: HashSet::new(),
            ignored: Notes::default(),
        }
    }

    pub(super) fn chosen(chosen: Chosen) -> Self {
        let ignored = Notes {
            forged_keys: chosen.forged_keys,
            rolled_back: chosen.rolled_back,
        };
        Self {
            ignored,
            ..Self::new(chosen.record)
        }
    }

    /// Puts the run into the status write `t`, with the step in progress
    /// as the Reconciling condition's message.
    pub(super) fn put_into(&self, t: &mut Transition, deleting: bool) {
        t.workflow = Some(self.record.to_value());
        if matches!(
            t.phase,
            Phase::Reconciling | Phase::Deleting | Phase::Failed
        ) {
            t.progress = self.record.progress(deleting);
        }
    }

    /// A status write holding the run landed: the process marks how far
    /// it went in the object's runs (a run whose step began is started, a
    /// `Done` one ended), and what the write replaced of a forged record
    /// is reported.
    pub(super) fn written(
        &mut self,
        uid: &str,
        memory: &Memory,
        metrics: &Metrics,
        subject: Subject<'_>,
    ) {
        let notes = std::mem::take(&mut self.ignored);
        let sequence = self.record.sequence;
        if self.ran {
            memory.mark_steps(uid, |m| Mark::started(m, sequence));
        }
        if self.record.state == State::Done {
            memory.mark_steps(uid, |m| Mark::ended(m, sequence));
        }
        notes.report(metrics, subject);
    }
}

impl Notes {
    /// Logs and counts what of a stored record was ignored: which steps
    /// had a key that was not theirs (never the key itself), and whether
    /// the run went back behind this process's.
    fn report(self, metrics: &Metrics, subject: Subject<'_>) {
        for step in &self.forged_keys {
            log::warn_about!(
                subject,
                step = step.as_str(),
                "stored step key ignored: it is not the key this step derives; the derived key is recorded and used"
            );
        }
        if !self.forged_keys.is_empty() {
            Ignored::Key.count(metrics, self.forged_keys.len());
        }
        if self.rolled_back {
            log::warn_about!(
                subject,
                "stored step run ignored: it goes back behind a run this process started or ended; a new run starts"
            );
            Ignored::Run.count(metrics, 1);
        }
    }
}
