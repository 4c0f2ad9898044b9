//! SHA-256 state-identity hash.

use sha2::{Digest, Sha256};

use crate::render::render;

/// Lowercase hex SHA-256 (64 characters) of the UTF-8 bytes of
/// [`render(identity)`](crate::render), the value stored in
/// `status.stateIdentity`.
///
/// ```
/// use blue_identity::state_identity_hash;
///
/// // SHA-256 of the two bytes `[]`.
/// assert_eq!(
///     state_identity_hash(&[]),
///     "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
/// );
/// let identity = [Some("local-kubernetes".to_string()), Some("dev".into()), Some("dev--web".into())];
/// assert_eq!(
///     state_identity_hash(&identity),
///     "99c51b428074af1078a9bb3ba6c76c949b32877b5dc2de510e5b39c3ba1b44c2"
/// );
/// ```
#[must_use]
pub fn state_identity_hash(identity: &[Option<String>]) -> String {
    let digest = Sha256::digest(render(identity).as_bytes());
    to_lower_hex(&digest)
}

/// Lowercase hexadecimal encoding of `bytes`.
fn to_lower_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{state_identity_hash, to_lower_hex};

    #[test]
    fn hex_encoding_is_lowercase_and_zero_padded() {
        assert_eq!(to_lower_hex(&[0x00, 0x0f, 0xab, 0xff]), "000fabff");
    }

    #[test]
    fn hash_of_empty_identity_is_sha256_of_empty_brackets() {
        assert_eq!(
            state_identity_hash(&[]),
            "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
        );
    }

    #[test]
    fn different_identities_hash_differently() {
        let a = state_identity_hash(&[Some("nil".to_string())]);
        let b = state_identity_hash(&[None]);
        assert_ne!(a, b);
    }
}
