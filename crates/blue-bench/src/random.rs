//! A seeded generator for what a run must be able to replay, without a
//! dependency (random names come from `blue_envtest::random_hex`).

/// A tiny deterministic xorshift generator: the bench's jitter,
/// reproducible from its seed without a `rand` dependency.
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
