//! Opaque text the cache keeps per resource (uid, resourceVersion), stored
//! without a heap allocation when it has the shape the API server gives it.
//!
//! Both are opaque by the API conventions, but in practice a uid is a
//! lowercase UUID (36 characters, 16 bytes of information) and a
//! resourceVersion an etcd revision (a decimal number). As `Box<str>` each
//! cost an allocation (48 and 32 bytes with the allocator's header) on top
//! of the pointer; here they live in the 24 bytes of the value itself.
//! Only spellings that print back exactly are packed, so equality of
//! tokens is equality of the texts; anything else is kept as text.

use std::fmt::{self, Write};
use std::ops::Deref;

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
