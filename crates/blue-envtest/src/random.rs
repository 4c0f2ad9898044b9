//! Random names and secrets from the kernel, without a dependency.

use std::fs;
use std::io::Read;

use crate::error::{io_error, Error};

/// `n` random bytes from the kernel, hex-encoded: for names a test makes
/// unique (`format!("alpha-{}", random_hex(3)?)`).
pub fn random_hex(n: usize) -> Result<String, Error> {
    let mut bytes = vec![0u8; n];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(io_error("reading /dev/urandom"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
