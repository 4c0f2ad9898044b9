//! What identifies a run and a step: the run's digest, each step's
//! idempotency key, and the names a package may give its steps.
//!
//! A run is one desired state of one object: its uid, `metadata.generation`,
//! the request annotation's value and the event (`create`, `stop` or
//! `delete`), plus the record's `sequence`, which counts the runs of the
//! object so that a second run for the same desired state (drift repaired
//! after a run finished) gets keys of its own. The run's id is a digest of
//! all five; a step's key is a digest of the uid, the run id and the step's
//! name, so it is the same on every attempt of that step in that run, in
//! every process, and differs in every other run.
//!
//! Both are computed again on every use, never read back from status. Of
//! their inputs only the run number is stored in status; the uid and the
//! generation are the API server's, the request token and the event come
//! from the object's metadata and spec, and the name is the package's
//! constant. What keeps a stored run number from bringing an older run
//! back is the process's memory of its runs (`marks`).

use crate::resource::Intent;
use sha2::{Digest, Sha256};

/// The longest step name.
pub const MAX_STEP_NAME_BYTES: usize = 63;

/// The longest idempotency key: what cloud APIs accept as a client token
/// (AWS `ClientToken`, for one, takes at most 64 ASCII characters).
pub(crate) const MAX_KEY_BYTES: usize = 64;

/// How much of a step's name leads its key, so a key found in a cloud
/// console says which step made it.
const NAME_IN_KEY: usize = MAX_KEY_BYTES - 1 - KEY_DIGEST_HEX;
/// Hex digits of the digest in a key: 128 bits.
const KEY_DIGEST_HEX: usize = 32;
/// Hex digits of a run id: 64 bits, unique among one object's runs.
const RUN_DIGEST_HEX: usize = 16;

/// The desired state a run is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Desired<'a> {
    pub(crate) uid: &'a str,
    pub(crate) generation: i64,
    pub(crate) request: &'a str,
    pub(crate) event: Intent,
}

impl Desired<'_> {
    /// The id of this desired state's run number `sequence`.
    pub(crate) fn run_id(&self, sequence: u64) -> String {
        let generation = self.generation.to_string();
        let sequence = sequence.to_string();
        let parts = [
            "blue-kubernetes/run",
            self.uid,
            &generation,
            self.request,
            self.event.as_str(),
            &sequence,
        ];
        hex_digest(&parts, RUN_DIGEST_HEX)
    }
}

/// Step `name`'s idempotency key in run `run` of object `uid`: at most 64
/// characters of `[a-z0-9-]`, the name's first 31 characters, a dash and
/// 32 hex digits.
pub(crate) fn step_key(uid: &str, run: &str, name: &str) -> String {
    let digest = hex_digest(&["blue-kubernetes/step", uid, run, name], KEY_DIGEST_HEX);
    // Names are ASCII (`valid_name`), so byte slicing is on char boundaries.
    let lead = &name[..name.len().min(NAME_IN_KEY)];
    format!("{lead}-{digest}")
}

/// `[a-z0-9-]{1,63}`: what a step name may be.
pub(crate) fn valid_name(name: &str) -> bool {
    (1..=MAX_STEP_NAME_BYTES).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The first `hex` hex digits of SHA-256 over `parts`, each prefixed with
/// its length so that no two lists of parts hash alike.
pub(crate) fn hex_digest(parts: &[&str], hex: usize) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    let digest = hasher.finalize();
    let mut out = String::with_capacity(hex);
    for byte in digest.iter().take(hex.div_ceil(2)) {
        out.push_str(&format!("{byte:02x}"));
    }
    out.truncate(hex);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desired(generation: i64, request: &'static str, event: Intent) -> Desired<'static> {
        Desired {
            uid: "6f1c-uid",
            generation,
            request,
            event,
        }
    }

    #[test]
    fn keys_are_short_url_safe_and_name_their_step() {
        let run = desired(1, "", Intent::Create).run_id(1);
        let long = "a".repeat(63);
        for name in ["role", "-", long.as_str()] {
            let key = step_key("6f1c-uid", &run, name);
            assert!(key.len() <= MAX_KEY_BYTES, "{key}");
            assert!(key.starts_with(&name[..name.len().min(31)]), "{key}");
            assert!(valid_name(&key[..key.len() - 33]), "{key}");
            assert!(key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
        }
        assert_eq!(run.len(), 16);
    }

    #[test]
    fn the_same_run_and_step_give_the_same_key_anything_else_another() {
        let base = desired(3, "t1", Intent::Create);
        let run = base.run_id(7);
        assert_eq!(run, base.run_id(7), "stable across calls and processes");
        let key = step_key(base.uid, &run, "role");
        assert_eq!(key, step_key(base.uid, &run, "role"));
        let others = [
            desired(4, "t1", Intent::Create).run_id(7),
            desired(3, "t2", Intent::Create).run_id(7),
            desired(3, "t1", Intent::Delete).run_id(7),
            desired(3, "t1", Intent::Stop).run_id(7),
            base.run_id(8),
            Desired {
                uid: "another",
                ..base
            }
            .run_id(7),
        ];
        for other in &others {
            assert_ne!(&run, other);
            assert_ne!(key, step_key(base.uid, other, "role"));
        }
        assert_ne!(key, step_key(base.uid, &run, "grants"));
        assert_ne!(key, step_key("another", &run, "role"));
    }

    #[test]
    fn parts_are_framed_so_shifting_text_between_them_changes_the_digest() {
        let a = Desired {
            uid: "ab",
            ..desired(1, "c", Intent::Create)
        };
        let b = Desired {
            uid: "a",
            ..desired(1, "bc", Intent::Create)
        };
        assert_ne!(a.run_id(1), b.run_id(1));
    }

    #[test]
    fn step_names_are_lowercase_digits_and_dashes_up_to_63() {
        for good in ["role", "db-1", "-", &"x".repeat(63)] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "Role", "db_1", "db.1", "rôle", "a b", &"x".repeat(64)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}
