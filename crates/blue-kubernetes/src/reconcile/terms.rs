//! What the caller of a pass decides before it runs: the lease its writes
//! are fenced by, and how its checks may go.

use crate::leader::{Fence, FencingToken, Gate};
use crate::Controller;
use std::sync::Arc;

/// What the caller of a pass decides: the lease its writes are fenced by,
/// taken when it chose it, and how its checks may go.
pub(crate) struct Terms {
    /// The fence of that lease (`None`: no lease, no fence).
    pub(crate) fence: Option<Fence>,
    /// That lease's fencing token, handed to the callbacks.
    pub(crate) token: Option<FencingToken>,
    /// The caller keeps the next check in memory, so a check that would
    /// change only the schedule may write nothing; a caller with only
    /// status to remember it by has every check write.
    pub(crate) may_be_quiet: bool,
    /// An effect is likely whatever the desired state says (a related
    /// object was deleted): Reconciling is published while observing.
    pub(crate) expects_effect: bool,
}

impl Terms {
    /// Under the lease `gate` guards (none: no fence), taken now with its
    /// `token`; every check writes.
    pub(crate) fn under(
        c: &Controller,
        gate: Option<&Arc<Gate>>,
        token: Option<FencingToken>,
    ) -> Self {
        Self {
            fence: gate.map(|g| Fence::pass(g.clone(), c.config.now.clone())),
            token,
            may_be_quiet: false,
            expects_effect: false,
        }
    }

    /// Under the leader's lease with leader election (else none).
    pub(crate) fn leader(c: &Controller) -> Self {
        let gate = c.gate.as_ref();
        Self::under(c, gate, gate.and_then(|g| g.token(c.now())))
    }
}
