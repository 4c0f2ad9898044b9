//! State identity for blue-kubernetes resources.
//!
//! An `identity` callback returns a vector of strings and nulls
//! (`Vec<Option<String>>`), e.g. `["local-kubernetes", "dev", "dev--web"]`.
//! Its **state-identity hash** (stored in `status.stateIdentity`) is the
//! lowercase hex SHA-256 of the UTF-8 bytes of the value printed the way
//! Clojure's `pr-str` prints a vector of strings and nils, so that it matches
//! what the Clojure reference implementation stores.
//!
//! * [`render`] produces the `pr-str` text;
//! * [`state_identity_hash`] hashes it.
//!
//! ```
//! let identity = vec![Some("a".to_string()), None, Some("x\"y".to_string())];
//! assert_eq!(blue_identity::render(&identity), r#"["a" nil "x\"y"]"#);
//! assert_eq!(blue_identity::state_identity_hash(&identity).len(), 64);
//! ```

mod hash;
mod render;

pub use hash::state_identity_hash;
pub use render::render;
