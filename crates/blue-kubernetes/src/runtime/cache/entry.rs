//! One resource in the cache: its compact [`Entry`], the [`Hold`] that
//! keeps it from being dispatched again at its current version, its phase
//! slot (no phase, then [`Phase::ALL`], labelled for metrics), and the
//! versions a watch delivered while one pass ran ([`Seen`]: whether the
//! pass's last write already arrived when it ends); and the opaque text
//! an entry keeps (uid, resourceVersion), as a [`Token`].

use crate::domain::resource::status_str;
use crate::reconcile::Request;
use crate::resource::Phase;

use serde_json::Value;
use std::fmt::{self, Write};
use std::ops::Deref;

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

/// Opaque text the cache keeps per resource (uid, resourceVersion), stored
/// without a heap allocation when it has the shape the API server gives it.
///
/// Both are opaque by the API conventions, but in practice a uid is a
/// lowercase UUID (36 characters, 16 bytes of information) and a
/// resourceVersion an etcd revision (a decimal number). As `Box<str>` each
/// cost an allocation (48 and 32 bytes with the allocator's header) on top
/// of the pointer; here they live in the 24 bytes of the value itself.
/// Only spellings that print back exactly are packed, so equality of
/// tokens is equality of the texts; anything else is kept as text.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Token {
    Uuid([u8; 16]),
    Decimal(u64),
    Text(Box<str>),
}

/// Dash positions of a UUID's canonical spelling.
const DASHES: [usize; 4] = [8, 13, 18, 23];

impl Token {
    pub(crate) fn new(text: &str) -> Self {
        decimal(text)
            .map(Token::Decimal)
            .or_else(|| uuid(text).map(Token::Uuid))
            .unwrap_or_else(|| Token::Text(text.into()))
    }

    /// Whether this is `text` (without allocating for it).
    pub(crate) fn is(&self, text: &str) -> bool {
        match self {
            Token::Text(own) => **own == *text,
            packed => decimal(text)
                .map(Token::Decimal)
                .or_else(|| uuid(text).map(Token::Uuid))
                .is_some_and(|t| t == *packed),
        }
    }

    /// The text, spelled on the stack when packed.
    pub(crate) fn text(&self) -> Spelled<'_> {
        let mut buf = Buf::default();
        match self {
            Token::Text(own) => return Spelled::Own(own),
            Token::Decimal(n) => write!(buf, "{n}"),
            Token::Uuid(bytes) => bytes.iter().enumerate().try_for_each(|(i, b)| {
                if matches!(i, 4 | 6 | 8 | 10) {
                    buf.write_char('-')?;
                }
                write!(buf, "{b:02x}")
            }),
        }
        .expect("a packed token fits its buffer");
        Spelled::Packed(buf)
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.text(), f)
    }
}

/// A canonical decimal: digits only, no leading zero, within `u64`.
fn decimal(text: &str) -> Option<u64> {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    canonical.then(|| text.parse().ok()).flatten()
}

/// A lowercase, dashed UUID (`8-4-4-4-12` hex digits).
fn uuid(text: &str) -> Option<[u8; 16]> {
    let raw = text.as_bytes();
    if raw.len() != 36 || DASHES.iter().any(|&i| raw[i] != b'-') {
        return None;
    }
    let mut digits = raw
        .iter()
        .enumerate()
        .filter(|(i, _)| !DASHES.contains(i))
        .map(|(_, &b)| match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            _ => None,
        });
    let mut bytes = [0u8; 16];
    for byte in &mut bytes {
        *byte = digits.next()?? << 4 | digits.next()??;
    }
    Some(bytes)
}

/// Room for the longest packed spelling (a UUID; a `u64` takes 20).
pub(crate) struct Buf {
    bytes: [u8; 36],
    len: usize,
}

impl Default for Buf {
    fn default() -> Self {
        Self {
            bytes: [0; 36],
            len: 0,
        }
    }
}

impl Write for Buf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        self.bytes
            .get_mut(self.len..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// A token's text: borrowed, or spelled into a buffer.
pub(crate) enum Spelled<'a> {
    Own(&'a str),
    Packed(Buf),
}

impl Deref for Spelled<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            Spelled::Own(text) => text,
            // Only ASCII digits, letters and dashes are ever written.
            Spelled::Packed(buf) => std::str::from_utf8(&buf.bytes[..buf.len]).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_and_versions_of_the_usual_shape_are_packed_and_print_back() {
        for (text, packed) in [
            ("3f2504e0-4f89-11d3-9a0c-0305e82c3301", true),
            ("0", true),
            ("18446744073709551615", true),
            ("123456", true),
            // Spellings that would not print back the same stay text.
            ("3F2504E0-4F89-11D3-9A0C-0305E82C3301", false),
            ("3f2504e04f8911d39a0c0305e82c3301", false),
            ("3f2504e0-4f89-11d3-9a0c-0305e82c330g", false),
            ("007", false),
            ("+1", false),
            ("18446744073709551616", false),
            ("", false),
            ("ünïcode-ä", false),
        ] {
            let token = Token::new(text);
            assert_eq!(&*token.text(), text);
            assert_eq!(!matches!(token, Token::Text(_)), packed, "{text:?}");
            assert!(token.is(text), "{text:?}");
        }
    }

    #[test]
    fn a_token_is_only_its_own_text() {
        let uid = Token::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301");
        assert!(!uid.is("3F2504E0-4F89-11D3-9A0C-0305E82C3301"));
        assert!(!uid.is("3f2504e0-4f89-11d3-9a0c-0305e82c3302"));
        let version = Token::new("10");
        assert!(!version.is("010"));
        assert!(!version.is("11"));
        assert!(!Token::new("007").is("7"));
        assert_eq!(format!("{version:?}"), r#""10""#);
    }
}
