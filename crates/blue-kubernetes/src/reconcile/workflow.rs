//! The durable-steps run a pass works on, in memory: part of what the
//! pass accumulates (`steps.rs` answers the steps with it).

use super::report::Halt;
use crate::steps::{Chosen, Record};
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
}
