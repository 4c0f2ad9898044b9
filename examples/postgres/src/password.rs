//! Generated passwords: 32 characters from `[A-Za-z0-9]` (about 190 bits),
//! drawn from the operating system's generator. The alphabet needs no
//! quoting anywhere (SQL, URLs, shells).

/// Length of a generated password.
pub const LENGTH: usize = 32;

const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// A fresh password. Panics only if the operating system has no random
/// source, where no password could be safe anyway (the controller turns
/// a callback panic into a failed attempt).
pub fn generate() -> String {
    let mut out = String::with_capacity(LENGTH);
    let mut bytes = [0u8; 64];
    while out.len() < LENGTH {
        getrandom::fill(&mut bytes).expect("the operating system's random source");
        // Rejection sampling: 248 = 4 * 62, so every character is equally likely.
        for &b in bytes.iter().filter(|&&b| b < 248) {
            if out.len() == LENGTH {
                break;
            }
            out.push(ALPHABET[usize::from(b) % ALPHABET.len()] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_32_alphanumerics_and_differ() {
        let (a, b) = (generate(), generate());
        assert_eq!(a.len(), LENGTH);
        assert!(a.bytes().all(|c| c.is_ascii_alphanumeric()), "{a}");
        assert_ne!(a, b);
    }
}
