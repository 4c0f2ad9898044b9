//! Random names from the kernel, and a seeded generator for what a run
//! must be able to replay; without a dependency.

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

/// A tiny deterministic xorshift generator: the bench's jitter and chaos's
/// kill points, reproducible from their seed without a `rand` dependency.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    /// Uniform in `0..bound` (bound > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound.max(1)
    }
}
