//! What a callback's [`Steps`](super::Steps) handle and its pass say to
//! each other: a step begins ([`Started`]) and ends ([`Ended`]).

use super::error::StepError;
use super::step::Step;
use serde_json::Value;
use tokio::sync::oneshot;

/// What the pass answers a step about to start.
#[derive(Debug)]
pub(crate) enum Started {
    /// Run it.
    Run(Step),
    /// Done earlier in this run: its result.
    Recorded(Value),
}

/// How a step ended, as the pass is told.
#[derive(Debug)]
pub(crate) enum Ended {
    Returned(Value),
    Failed,
    Unserializable,
}

/// A request from a callback's [`Steps`](super::Steps) to its pass.
#[derive(Debug)]
pub(crate) enum Request {
    Begin {
        name: String,
        reply: oneshot::Sender<Result<Started, StepError>>,
    },
    End {
        name: String,
        ended: Ended,
        reply: oneshot::Sender<Result<(), StepError>>,
    },
}
