//! Milliseconds since the epoch to and from RFC 3339 text.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `9999-12-31T23:59:59.999Z`, the last instant RFC 3339 can write.
pub(crate) const LATEST_MS: u64 = 253_402_300_799_999;

/// Total: times past year 9999 are written as its last millisecond (they
/// come only from a clock or a status that is wrong anyway).
pub(crate) fn format_ms(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms.min(LATEST_MS)))
        .to_string()
}

pub(crate) fn parse_ms(s: &str) -> Option<u64> {
    let t: SystemTime = humantime::parse_rfc3339_weak(s).ok()?;
    u64::try_from(t.duration_since(UNIX_EPOCH).ok()?.as_millis()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatted_times_parse_back_to_the_same_millisecond() {
        for ms in [0, 1_764_000_000_123, 1_800_000_000_999] {
            assert_eq!(parse_ms(&format_ms(ms)), Some(ms));
        }
    }

    #[test]
    fn times_past_year_9999_are_clamped_not_a_panic() {
        assert_eq!(format_ms(u64::MAX), "9999-12-31T23:59:59.999Z");
        assert_eq!(parse_ms(&format_ms(u64::MAX)), Some(LATEST_MS));
    }

    #[test]
    fn seconds_precision_times_from_kubernetes_parse() {
        assert_eq!(parse_ms("1970-01-01T00:00:01Z"), Some(1000));
        assert_eq!(parse_ms("yesterday"), None);
    }
}
