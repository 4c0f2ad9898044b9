//! One resource in the cache: its compact [`Entry`], the [`Hold`] that
//! keeps it from being dispatched again at its current version, its phase
//! slot (no phase, then [`Phase::ALL`], labelled for metrics), and the
//! versions a watch delivered while one pass ran ([`Seen`]: whether the
//! pass's last write already arrived when it ends).

use crate::domain::resource::status_str;
use crate::reconcile::Request;
use crate::resource::Phase;
use crate::runtime::token::Token;
use serde_json::Value;

/// What keeps a resource from being dispatched again at its current
/// version. It needs no version of its own: [`Cache::hold`](super::Cache::hold) sets it only on
/// the cached version, and [`Cache::record`](super::Cache::record) drops it when another arrives.
#[derive(Clone, Copy)]
pub(super) enum Hold {
    UntilNewer,
    /// Until this time, or a newer version if it comes first.
    Until(u64),
    /// Our finalizer is off: the object is gone or going, and the
    /// versions at hand are from before. Only a newer version (someone
    /// else's finalizer still holding it) decides again; an early check
    /// asked for meanwhile (our own delete of a related object) waits too.
    Released,
}

/// One resource, with no allocation of its own when its uid and
/// resourceVersion have the usual shape (see [`Token`]).
pub(super) struct Entry {
    pub(super) uid: Token,
    pub(super) version: Token,
    pub(super) due_ms: Option<u64>,
    /// `due_ms` is the stored `nextReconcileTime` ([`Due::Stored`](crate::domain::due::Due::Stored)), which
    /// `scheduled` overrides.
    pub(super) periodic: bool,
    /// This process's own next check of this uid: set when the resource is
    /// first seen (the stored time, or, when that has passed, a spread
    /// moment soon after), then by every pass that wrote or quietly kept a
    /// status. A quiet check does not rewrite `nextReconcileTime`, so after
    /// one the stored time is behind and only this is right.
    pub(super) scheduled: Option<u64>,
    pub(super) hold: Option<Hold>,
    /// The version our last pass wrote, while a watch has not yet brought
    /// it: versions before it are our own intermediate writes (or older),
    /// so they decide nothing.
    pub(super) awaiting: Option<Token>,
    /// Index into the phase slots; `None` for text that is not a phase.
    pub(super) phase: Option<u8>,
    /// An early check was asked for (a related object changed, a
    /// trigger) and no pass has started since: due now, whatever the
    /// version or the due rules say.
    pub(super) requested: Request,
    /// What referrers depend on (readiness, outputs), for a resource of a
    /// referenced package; `None` until first seen so.
    pub(super) digest: Option<u64>,
    /// The last version that arrived, without `metadata.managedFields`, as
    /// JSON text (a third of a parsed object's memory): `None` when copies
    /// are not kept, after a watch gap until the relist brings it again,
    /// and once a pass found it stale.
    pub(super) copy: Option<Box<str>>,
}

/// Phase slots counted per package: no phase, then [`Phase::ALL`].
pub(crate) const PHASE_SLOTS: usize = Phase::ALL.len() + 1;

/// The phase slot of `object` (`None` for text that is not a phase).
pub(super) fn phase_slot(object: &Value) -> Option<u8> {
    match status_str(object, "phase") {
        None => Some(0),
        Some(text) => Phase::ALL
            .iter()
            .position(|p| p.as_str() == text)
            .map(|i| (i + 1) as u8),
    }
}

/// The label of a phase slot.
pub(crate) fn slot_label(slot: u8) -> &'static str {
    match slot {
        0 => "None",
        n => Phase::ALL[usize::from(n) - 1].as_str(),
    }
}

/// Versions a watch delivered during one pass, in order.
#[derive(Default)]
pub(super) struct Seen {
    versions: Vec<Token>,
    /// More arrived than are kept: whether the pass's last write was
    /// among them is unknown.
    overflowed: bool,
}

/// Versions kept per running pass; a pass that writes more (each step
/// boundary is a write) is rare and, past this, is not awaited.
const SEEN_PER_PASS: usize = 32;

impl Seen {
    /// `version` arrived from a watch while the pass runs.
    pub(super) fn push(&mut self, version: &str) {
        match self.versions.len() < SEEN_PER_PASS {
            true => self.versions.push(Token::new(version)),
            false => self.overflowed = true,
        }
    }

    /// Whether `written` arrived (or may have, past the versions kept).
    pub(super) fn holds(&self, written: &str) -> bool {
        self.overflowed || self.versions.iter().any(|v| v.is(written))
    }
}
