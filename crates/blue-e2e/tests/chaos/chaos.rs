//! What every chaos check shares: the profile (how hard to push), the
//! seed of a randomised check, and its figures.

use std::time::Duration;

/// How hard to push: `BLUE_CHAOS_PROFILE=long` for the long profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// How long each control-plane fault lasts.
    pub outage: Duration,
    /// Operator SIGKILLs.
    pub kills: usize,
    /// How long the operator runs with each missing permission.
    pub forbidden_window: Duration,
    /// Every permission in turn (else the two writes only).
    pub every_permission: bool,
}

impl Profile {
    pub const SHORT: Profile = Profile {
        outage: Duration::from_secs(5),
        kills: 4,
        forbidden_window: Duration::from_secs(24),
        every_permission: false,
    };
    pub const LONG: Profile = Profile {
        outage: Duration::from_secs(20),
        kills: 40,
        forbidden_window: Duration::from_secs(90),
        every_permission: true,
    };

    /// The profile `BLUE_CHAOS_PROFILE` names (`long`; else short).
    pub fn from_env() -> Profile {
        match std::env::var("BLUE_CHAOS_PROFILE").as_deref() {
            Ok("long") => Profile::LONG,
            _ => Profile::SHORT,
        }
    }
}

/// A deterministic xorshift generator seeded from `BLUE_CHAOS_SEED` (else
/// at random). The seed is printed when it is drawn, so a failed test's
/// output says how to replay it.
pub struct Seed(u64);

impl Seed {
    /// The generator of the check `test`, printing its seed.
    pub fn for_test(test: &str) -> Seed {
        let seed = match std::env::var("BLUE_CHAOS_SEED") {
            Ok(n) => n.parse().expect("BLUE_CHAOS_SEED is a u64"),
            Err(_) => {
                let hex = blue_envtest::random_hex(8).expect("random bytes");
                u64::from_str_radix(&hex, 16).expect("hex")
            }
        };
        println!("seed {seed}: `BLUE_CHAOS_SEED={seed} cargo test -p blue-e2e --test chaos {test}` replays it");
        Seed(seed.max(1))
    }

    /// Uniform in `0..bound` (bound > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound.max(1)
    }
}

/// Prints a figure (the README quotes a run's).
pub fn figure(line: &str) {
    println!("figure: {line}");
}

#[cfg(test)]
mod tests {
    use super::Seed;

    #[test]
    fn a_seed_replays_the_same_draws() {
        let draws = |seed| {
            let mut s = Seed(seed);
            (0..5).map(|_| s.below(400)).collect::<Vec<_>>()
        };
        assert_eq!(draws(42), draws(42));
        assert_ne!(draws(42), draws(43));
        assert!(draws(7).iter().all(|d| *d < 400));
    }
}
