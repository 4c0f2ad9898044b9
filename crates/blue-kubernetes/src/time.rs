//! Milliseconds since the epoch to and from RFC 3339 text.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(crate) fn format_ms(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

pub(crate) fn parse_ms(s: &str) -> Option<u64> {
    let t: SystemTime = humantime::parse_rfc3339_weak(s).ok()?;
    Some(t.duration_since(UNIX_EPOCH).ok()?.as_millis() as u64)
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
    fn seconds_precision_times_from_kubernetes_parse() {
        assert_eq!(parse_ms("1970-01-01T00:00:01Z"), Some(1000));
        assert_eq!(parse_ms("yesterday"), None);
    }
}
