//! Durable steps: `converge` and `delete` run their work as named steps,
//! recorded in `status.workflow`, so that a later pass of the same run
//! resumes where the last one stopped.
//!
//! # Guarantees
//! - **Recorded before it starts:** a step is recorded `Running`, with its
//!   idempotency key, by a status write that succeeded before the step's
//!   closure is called. The first step that runs in a pass rides on the
//!   `Reconciling` (or `Deleting`) publish; each later one on the write
//!   that also records the previous one `Done`; the last `Done` on the
//!   pass's final status write. A run of N steps costs N + 1 status writes,
//!   a one-step run none more than a plain `converge`.
//! - **Done once per run:** a step recorded `Done` is never run again in
//!   that run: later passes hand back its recorded result.
//! - **Interrupted is said:** a step that an earlier attempt in this run
//!   started and did not record `Done` (the process died, its record was
//!   lost to a conflict, it failed or panicked) runs again with
//!   [`Step::interrupted`] true and the same [`Step::key`].
//! - **An ended run claims no work in progress:** when a run ends with a
//!   step still recorded `Running` (its process died after the step's
//!   effect, and the next pass's `observe` found the infrastructure in
//!   place, so nothing ran again), that step is recorded `Interrupted`:
//!   no result, no end time, since whether and when it finished is unknown.
//! - **No effect after a lost record:** a step record that cannot be
//!   written (a conflict, an unreachable API server, a lost lease) stops
//!   the pass: no later step starts, and nothing more is written.
//! - **Keys are derived, never read:** a step's key is computed again on
//!   every use from the object's uid, the step's name and the run's id
//!   (a digest of uid, generation, request token, event and run number);
//!   it is stable across crashes, retries and processes within a run and
//!   different in every other run (see `key`). The key stored in status
//!   is a record for people: it is never handed to a package. A stored key
//!   that differs from the derived one is replaced in the record, counted
//!   (`blue_step_records_ignored_total{what="key"}`) and logged (WARN,
//!   naming the step, never the stored value). Every key handed out is 1
//!   to 64 characters of `[a-z0-9-]`, and no status can make a package
//!   see another object's key.
//! - **Older runs stay closed while the process lives:** the run number
//!   comes from status, so the controller also remembers, per object, the
//!   highest run number whose keys it handed out and whether that run
//!   ended. A stored run behind that (a rolled-back `workflow.sequence`,
//!   or a run this process ended marked unfinished again) is not resumed:
//!   a new run starts, numbered after every run this process used for
//!   the object, and the rollback is counted
//!   (`blue_step_records_ignored_total{what="run"}`) and logged once a
//!   write has replaced it. So within one process's lifetime no run's
//!   keys are handed out again after a newer run started or after the run
//!   ended, whatever status says.
//! - **One use of a name per pass:** a second [`Steps::run`] of a name
//!   that already ran (or was skipped as done) in this pass fails with
//!   [`StepError::Repeated`] and runs nothing; the pass fails
//!   (`InvalidStep`, the operator's log names the step) and is retried
//!   with backoff like any failure, so the package's mistake shows
//!   instead of one step's result being handed back for another.
//!
//! # Not guaranteed
//! - Effects are at least once, not exactly once: a step that was running
//!   when its process died runs again. Its effect may have happened
//!   already; [`Step::interrupted`] says so, and the package must look
//!   before it repeats a non-idempotent effect (or pass [`Step::key`] as
//!   the API's client token).
//! - Effects outside steps are not recorded, and with steps declared the
//!   controller publishes `Reconciling` only when the first step starts: do
//!   every effect inside a step.
//! - Steps run in the order the package calls them, one at a time (a
//!   step started while another runs fails); the package must call them
//!   in the same order every pass.
//! - After a restart (or on another replica taking over), the process
//!   remembers no runs: the first run it touches for an object takes its
//!   number from status. Whoever may write `/status` can, before that
//!   first pass, roll the number back and make that process hand out the
//!   keys of an older run of the same desired state (same uid, generation,
//!   request token and event) once more. Keys of another object, another
//!   generation, request token or event can never be produced.
//! - Recorded results and step states are as trustworthy as whoever may
//!   write `/status`: a skipped step's result is handed back as stored.
//!
//! # Many items
//! A run records at most [`MAX_STEPS_PER_RUN`] (24) steps, and each name
//! is used once per pass. For a list of items (databases, users, DNS
//! records):
//! - up to the limit, one step per item, named after the item
//!   (`db-app`, `db-audit`) or its position in a list ordered the same way
//!   every pass (`db-1`, `db-2`): each item is then recorded, resumed and
//!   keyed on its own;
//! - beyond it, one step for a batch (`databases`, or fixed-size chunks
//!   `databases-1`, `databases-2`): the step creates every item of its
//!   batch idempotently, and on [`Step::interrupted`] first looks for the
//!   ones already made. Its one key serves the batch: derive a token per
//!   item from it and the item's name (a digest, if the API limits a
//!   token's length). Its result stays small (at most
//!   [`MAX_STEP_RESULT_BYTES`]): IDs a later step needs, not documents.

mod error;
mod key;
mod marks;
mod protocol;
mod record;
mod step;

pub use error::StepError;
pub use key::MAX_STEP_NAME_BYTES;
pub(crate) use key::{hex_digest, valid_name, Desired};
pub(crate) use marks::{Ignored, Mark};
pub(crate) use protocol::{Ended, Request, Started};
pub(crate) use record::{left_running, status_schema, Begun, Chosen, Record, Refused, State};
pub use record::{MAX_STEPS_PER_RUN, MAX_STEP_RESULT_BYTES, MAX_WORKFLOW_BYTES};
pub use step::Step;

use crate::package::result::CallbackResult;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// The handle `converge` and `delete` run steps through
/// ([`CallbackInput::steps`](crate::package::CallbackInput::steps)). Cheap to clone.
///
/// ```no_run
/// # async fn converge(opts: blue_kubernetes::package::CallbackInput) -> blue_kubernetes::CallbackResult<blue_kubernetes::package::WorkflowOutcome> {
/// # async fn create_network(_token: &str) -> blue_kubernetes::CallbackResult<String> { Ok("net-1".into()) }
/// # async fn find_network(_token: &str) -> blue_kubernetes::CallbackResult<Option<String>> { Ok(None) }
/// # async fn create_machine(_net: &str, _token: &str) -> blue_kubernetes::CallbackResult<()> { Ok(()) }
/// let steps = opts.steps();
/// // A cloud API that assigns its own IDs: the key is its client token,
/// // and after an interruption the step looks for what it made first.
/// let network: String = steps
///     .run("network", |step| async move {
///         if step.interrupted() {
///             if let Some(id) = find_network(step.key()).await? {
///                 return Ok(id);
///             }
///         }
///         create_network(step.key()).await
///     })
///     .await?;
/// // Skipped on a later pass of this run once recorded done; `network`
/// // comes back from the record then.
/// steps
///     .run("machine", |step| async move { create_machine(&network, step.key()).await })
///     .await?;
/// Ok(blue_kubernetes::package::WorkflowOutcome::new())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Steps {
    link: Link,
}

#[derive(Clone, Debug)]
enum Link {
    /// Not inside `converge` or `delete`.
    Elsewhere,
    /// Inside them, for a package that declares no steps.
    Undeclared,
    /// Inside them: requests go to the pass.
    Pass(Arc<Channel>),
}

#[derive(Debug)]
struct Channel {
    requests: mpsc::Sender<Request>,
    // One step at a time: a run's record has one step in flight at most,
    // and a step started from inside another would wait for it forever.
    one: tokio::sync::Mutex<()>,
}

impl Steps {
    /// The handle of every callback but `converge` and `delete`.
    pub(crate) const ELSEWHERE: Steps = Steps {
        link: Link::Elsewhere,
    };

    pub(crate) fn undeclared() -> Self {
        Steps {
            link: Link::Undeclared,
        }
    }

    /// A handle whose requests `receiver` (the pass) answers.
    pub(crate) fn linked() -> (Self, mpsc::Receiver<Request>) {
        let (requests, receiver) = mpsc::channel(1);
        let channel = Channel {
            requests,
            one: tokio::sync::Mutex::new(()),
        };
        let steps = Steps {
            link: Link::Pass(Arc::new(channel)),
        };
        (steps, receiver)
    }

    fn channel(&self) -> Result<&Channel, StepError> {
        match &self.link {
            Link::Pass(channel) => Ok(channel),
            Link::Undeclared => Err(StepError::Undeclared),
            Link::Elsewhere => Err(StepError::Unavailable),
        }
    }

    /// Runs step `name`, or, if it is recorded done in this run, returns
    /// its recorded result without running it.
    ///
    /// Before `step` is called, the step is recorded `Running` (a status
    /// write); when it returns, its result is recorded `Done` with the
    /// next write. `name` is the package's constant, `[a-z0-9-]{1,63}`,
    /// used once per pass: a second call with a name that already ran (or
    /// was skipped) in this pass fails with [`StepError::Repeated`], runs
    /// nothing and fails the pass.
    ///
    /// A run records at most [`MAX_STEPS_PER_RUN`] steps. For many items
    /// (databases, users), use one step per item, named after it
    /// (`db-app`, `db-audit`), up to that limit; beyond it, one step per
    /// batch (`databases`, or chunks `databases-1`, `databases-2`) that
    /// makes each item of its batch idempotently, looks for the ones
    /// already made when [`Step::interrupted`], and derives a token per
    /// item from [`Step::key`] and the item's name. Results are small JSON values (at most
    /// [`MAX_STEP_RESULT_BYTES`]), typed through serde: `()` for none.
    /// An error from `step` is [`StepError::Failed`]: return it from
    /// `converge` (`?`), the pass fails with backoff and the retry resumes
    /// at this step. Steps run one at a time: a call made while another
    /// step runs (from inside it, or beside it) fails with
    /// [`StepError::Concurrent`] and runs nothing. Results are recorded in
    /// status, which everyone who can read the resource can read: never
    /// return credentials (keep them in the connection Secret). A result
    /// holding a value the connection Secret generated in this pass fails
    /// with [`StepError::ResultHoldsSecret`] and is not recorded.
    pub async fn run<T, F, Fut>(&self, name: &str, step: F) -> Result<T, StepError>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce(Step) -> Fut,
        Fut: Future<Output = CallbackResult<T>>,
    {
        let channel = self.channel()?;
        let _one = channel.one.try_lock().map_err(|_| StepError::Concurrent)?;
        let begun = channel.begin(name).await?;
        let step_handle = match begun {
            Started::Recorded(value) => return decode(name, value),
            Started::Run(step_handle) => step_handle,
        };
        let returned = step(step_handle).await;
        channel.end(name, returned).await
    }

    /// [`run`](Self::run) for a synchronous callback (which runs on a
    /// blocking thread of the runtime): `step` runs on the calling thread.
    pub fn run_blocking<T, F>(&self, name: &str, step: F) -> Result<T, StepError>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce(Step) -> CallbackResult<T>,
    {
        let channel = self.channel()?;
        let runtime = tokio::runtime::Handle::current();
        let _one = channel.one.try_lock().map_err(|_| StepError::Concurrent)?;
        let step_handle = match runtime.block_on(channel.begin(name))? {
            Started::Recorded(value) => return decode(name, value),
            Started::Run(step_handle) => step_handle,
        };
        let returned = step(step_handle);
        runtime.block_on(channel.end(name, returned))
    }
}

impl Channel {
    async fn begin(&self, name: &str) -> Result<Started, StepError> {
        let (reply, answer) = oneshot::channel();
        let request = Request::Begin {
            name: name.to_string(),
            reply,
        };
        self.ask(request, answer).await?
    }

    async fn end<T: Serialize>(
        &self,
        name: &str,
        returned: CallbackResult<T>,
    ) -> Result<T, StepError> {
        let (ended, returned) = match returned {
            Ok(value) => match serde_json::to_value(&value) {
                Ok(json) => (Ended::Returned(json), Ok(value)),
                Err(_) => (
                    Ended::Unserializable,
                    Err(StepError::Unserializable(name.to_string())),
                ),
            },
            Err(source) => (
                Ended::Failed,
                Err(StepError::Failed {
                    step: name.to_string(),
                    source,
                }),
            ),
        };
        let (reply, answer) = oneshot::channel();
        let request = Request::End {
            name: name.to_string(),
            ended,
            reply,
        };
        self.ask(request, answer).await??;
        returned
    }

    async fn ask<A>(&self, request: Request, answer: oneshot::Receiver<A>) -> Result<A, StepError> {
        // A handle kept past its pass finds nobody listening.
        self.requests
            .send(request)
            .await
            .map_err(|_| StepError::Unavailable)?;
        answer.await.map_err(|_| StepError::Unavailable)
    }
}

fn decode<T: DeserializeOwned>(name: &str, value: Value) -> Result<T, StepError> {
    serde_json::from_value(value).map_err(|_| StepError::RecordedResult(name.to_string()))
}
