//! Phase slots: the phases the cache counts per package, each a small
//! index (no phase, then [`Phase::ALL`]), labelled for metrics.

use crate::domain::resource::status_str;
use crate::resource::Phase;
use serde_json::Value;

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
