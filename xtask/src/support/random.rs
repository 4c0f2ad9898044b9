//! Random names and delays from the kernel, without a dependency.

use std::fs;
use std::io::Read;

use anyhow::{Context, Result};

/// `n` random bytes from the kernel, hex-encoded.
pub fn random_hex(n: usize) -> Result<String> {
    let mut bytes = vec![0u8; n];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading /dev/urandom")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
