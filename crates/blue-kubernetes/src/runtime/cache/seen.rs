//! The versions a watch delivered while one pass ran: whether the pass's
//! last write already arrived when it ends.

use crate::runtime::token::Token;

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
