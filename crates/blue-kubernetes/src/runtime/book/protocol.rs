//! What the dispatcher and the book say to each other: the settings the
//! book's decisions depend on, the events it takes (a version's
//! [`Arrival`], a pass [`Ended`]) and the [`Decision`]s it returns.

use crate::domain::due::Due;
use crate::reconcile::Request;
use crate::runtime::key::Key;
use crate::runtime::queue::Work;
use crate::telemetry::Verdict;
use serde_json::Value;

/// What the dispatcher does after an event.
#[derive(Debug, PartialEq)]
pub(in crate::runtime) enum Decision {
    /// Due now: queue it (ahead of the others when `first`).
    Queue { work: Work, first: bool },
    /// A timer was set earlier than the timer loop sleeps: wake it.
    WakeTimers,
    /// An early check was asked for and registered.
    Requested,
    /// The count of `package`'s resources in phase slot `slot` is `count`.
    Phases {
        package: usize,
        slot: u8,
        count: i64,
    },
    /// Released or gone: drop all kept about it outside the book, its
    /// queue entry and the controller's memory (`uid` empty: never cached).
    Forget { key: Key, uid: String },
}

/// The decisions one event leads to, in order.
pub(in crate::runtime) type Out = Vec<Decision>;

/// The settings decisions depend on, from the config.
#[derive(Clone, Copy, Debug)]
pub(in crate::runtime) struct Settings {
    pub(in crate::runtime) poll_ms: u64,
    pub(in crate::runtime) timer_slack_ms: u64,
    pub(in crate::runtime) retry_base_ms: u64,
    pub(in crate::runtime) retry_max_ms: u64,
    /// Watches run, so copies can be trusted while they do.
    pub(in crate::runtime) keep_copies: bool,
}

/// A version of a resource, with what the dispatcher derived from it.
pub(in crate::runtime) struct Arrival {
    pub(in crate::runtime) key: Key,
    pub(in crate::runtime) object: Value,
    pub(in crate::runtime) due: Due,
    /// From a watch (in order), not a list.
    pub(in crate::runtime) watched: bool,
    /// Its recorded run was left `Running`: it is queued first.
    pub(in crate::runtime) left_running: bool,
    /// The resources it refers to, for a package that declares references.
    pub(in crate::runtime) names: Option<Vec<Key>>,
    /// What its referrers depend on, for a referenced package.
    pub(in crate::runtime) digest: Option<u64>,
}

/// What a finished pass tells the book.
pub(in crate::runtime) struct Ended {
    /// How it went; `Broke` without `started_from`: the read failed.
    pub(in crate::runtime) verdict: Verdict,
    /// The object it started from, when it had one (for backoff).
    pub(in crate::runtime) started_from: Option<Value>,
    /// The version of its last successful write, whose arrival the earlier
    /// versions (its own Reconciling publish, say) must not pre-empt.
    pub(in crate::runtime) written: Option<String>,
    /// The next check it decided, written or (a quiet check) kept only here.
    pub(in crate::runtime) next_check: Option<u64>,
    /// It was asked for and could not look: the request stands.
    pub(in crate::runtime) unserved_request: Request,
    /// With sharding: the resource's shard is held by another replica.
    pub(in crate::runtime) not_owned: Option<u32>,
    /// It removed our finalizer from the deleting resource.
    pub(in crate::runtime) released: bool,
}
