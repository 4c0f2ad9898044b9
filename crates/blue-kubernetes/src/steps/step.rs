//! One durable step as its closure sees it.

/// One step as its closure sees it: its name, its idempotency key, the run
/// it belongs to and whether an earlier attempt was interrupted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    name: String,
    key: String,
    run: String,
    interrupted: bool,
}

impl Step {
    pub(crate) fn new(name: &str, key: String, run: String, interrupted: bool) -> Self {
        Self {
            name: name.to_string(),
            key,
            run,
            interrupted,
        }
    }

    /// The step's name, as the package gave it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The idempotency key: 1 to 64 characters of `[a-z0-9-]`, the same
    /// on every attempt of this step in this run (after a crash, a failure
    /// or a restart, in any process) and different in every other run.
    /// Derived from the object's uid, the run and the step's name each
    /// time, never read from status. Usable as a cloud API's client token,
    /// or to name what the step creates so that it can be found again.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The run's id, as `status.workflow.run` records it (16 hex digits):
    /// for logs and audit tables.
    pub fn run(&self) -> &str {
        &self.run
    }

    /// An earlier attempt of this step in this run started and did not
    /// record it done: the process died during it, its `Done` record was
    /// lost, or it failed. Its effect may have happened (in part): look
    /// for it before repeating a non-idempotent effect.
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }
}
