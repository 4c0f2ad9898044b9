//! Each resource's interval, stretched by a factor derived from its uid so
//! that resources created together are not checked together.
//!
//! The rule, exactly: `h` is the 64-bit FNV-1a hash of the uid's bytes,
//! `permille = h % 1000`, and an interval `i` becomes
//! `i + i * permille / 10_000` (integer arithmetic, rounded down), so the
//! stretch is in `[0, 10%)` of the interval. It depends on nothing but the
//! uid, so every process (and a test) computes the same one, and a
//! resource keeps its place in the spread from one check to the next.

/// The stretch of `uid`'s interval, in ten-thousandths: `0..1000`.
pub(crate) fn permille_of_ten(uid: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in uid.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h % 1000
}

/// The part added to `interval_ms` for `uid`: in `[0, interval_ms / 10)`.
pub(crate) fn extra_ms(interval_ms: u64, uid: &str) -> u64 {
    let extra = u128::from(interval_ms) * u128::from(permille_of_ten(uid)) / 10_000;
    u64::try_from(extra).unwrap_or(u64::MAX)
}

/// `interval_ms` stretched for `uid`: in `[interval_ms, interval_ms * 1.1)`.
pub(crate) fn stretch(interval_ms: u64, uid: &str) -> u64 {
    interval_ms.saturating_add(extra_ms(interval_ms, uid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stretch_is_below_a_tenth_and_the_same_for_the_same_uid() {
        for n in 0..2_000 {
            let uid = format!("3f2504e0-4f89-11d3-9a0c-{n:012}");
            let stretched = stretch(60_000, &uid);
            assert!((60_000..66_000).contains(&stretched), "{stretched}");
            assert_eq!(stretched, stretch(60_000, &uid));
        }
        assert_eq!(stretch(u64::MAX, "u"), u64::MAX);
        assert_eq!(stretch(0, "u"), 0);
    }

    #[test]
    fn uids_created_together_spread_over_the_tenth() {
        let mut buckets = [0usize; 10];
        for n in 0..1_000 {
            let extra = extra_ms(60_000, &format!("uid-{n}"));
            buckets[usize::try_from(extra / 600).unwrap()] += 1;
        }
        // A thousand uids over ten buckets of 0.6 s: none empty, none
        // holding a quarter.
        assert!(buckets.iter().all(|&b| b > 0 && b < 250), "{buckets:?}");
    }

    #[test]
    fn the_documented_formula_gives_these_values() {
        // FNV-1a 64 of "" is its offset basis.
        assert_eq!(permille_of_ten(""), 0xcbf2_9ce4_8422_2325 % 1000);
        let p = permille_of_ten("a");
        assert_eq!(stretch(10_000, "a"), 10_000 + 10_000 * p / 10_000);
    }
}
