//! The common spec fields every managed resource carries.

use crate::resource::at;
use serde_json::Value;

/// What happens to the infrastructure when the resource is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeletionPolicy {
    Retain,
    Destroy,
}

/// Parsed common fields; `None` in [`parse`] means one is malformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CommonSpec {
    pub(crate) suspend: bool,
    pub(crate) interval_ms: u64,
    pub(crate) deletion_policy: DeletionPolicy,
}

pub(crate) const DEFAULT_INTERVAL_MS: u64 = 60_000;

/// What [`parse_interval`] accepts, as the CRD's `reconcileInterval` pattern.
pub(crate) const RECONCILE_INTERVAL_PATTERN: &str = "^[1-9][0-9]*(ms|s|m|h)$";

/// Parses `spec.state`, `spec.suspend`, `spec.reconcileInterval` and
/// `spec.deletionPolicy`, or `None` when any is present but malformed.
pub(crate) fn parse(resource: &Value) -> Option<CommonSpec> {
    let field = |k| at(resource, &["spec", k]).filter(|v| !v.is_null());
    match field("state") {
        None => {}
        Some(v) if matches!(v.as_str(), Some("running" | "stopped")) => {}
        Some(_) => return None,
    }
    let suspend = match field("suspend") {
        None => false,
        Some(v) => v.as_bool()?,
    };
    let interval_ms = match field("reconcileInterval") {
        None => DEFAULT_INTERVAL_MS,
        Some(v) => parse_interval(v.as_str()?)?,
    };
    let deletion_policy = deletion_policy(resource)?;
    if !matches!(
        at(resource, &["spec", "config"]),
        None | Some(Value::Object(_))
    ) {
        return None;
    }
    Some(CommonSpec {
        suspend,
        interval_ms,
        deletion_policy,
    })
}

/// `spec.deletionPolicy` (absent: Retain), or `None` when malformed.
pub(crate) fn deletion_policy(resource: &Value) -> Option<DeletionPolicy> {
    match at(resource, &["spec", "deletionPolicy"]).filter(|v| !v.is_null()) {
        None => Some(DeletionPolicy::Retain),
        Some(v) => match v.as_str()? {
            "Retain" => Some(DeletionPolicy::Retain),
            "Destroy" => Some(DeletionPolicy::Destroy),
            _ => None,
        },
    }
}

/// A positive integer followed by `ms`, `s`, `m` or `h`, in milliseconds.
pub(crate) fn parse_interval(s: &str) -> Option<u64> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = s.split_at(digits);
    let factor = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    let n: u64 = number.parse().ok()?;
    if n == 0 {
        return None;
    }
    n.checked_mul(factor)
}

/// `spec.config.<key>` (the destroy-protection key, by default
/// `compute-prevent-destroy`) is true (boolean or `"true"`).
pub(crate) fn prevents_destroy(resource: &Value, key: &str) -> bool {
    match at(resource, &["spec", "config", key]) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s == "true",
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn intervals_accept_positive_integers_with_units() {
        assert_eq!(parse_interval("250ms"), Some(250));
        assert_eq!(parse_interval("60s"), Some(60_000));
        assert_eq!(parse_interval("2m"), Some(120_000));
        assert_eq!(parse_interval("1h"), Some(3_600_000));
    }

    #[test]
    fn intervals_reject_zero_fractions_unknown_units_and_overflow() {
        for bad in [
            "0s",
            "1.5s",
            "10d",
            "",
            "s",
            "-1s",
            " 1s",
            "1 s",
            "99999999999999999999h",
        ] {
            assert_eq!(parse_interval(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn defaults_apply_when_fields_are_absent() {
        let spec = parse(&json!({"spec": {}})).unwrap();
        assert!(!spec.suspend);
        assert_eq!(spec.interval_ms, 60_000);
        assert_eq!(spec.deletion_policy, DeletionPolicy::Retain);
    }

    #[test]
    fn malformed_common_fields_are_rejected() {
        for spec in [
            json!({"state": "paused"}),
            json!({"suspend": "yes"}),
            json!({"reconcileInterval": "0s"}),
            json!({"deletionPolicy": "Delete"}),
            json!({"config": "text"}),
        ] {
            assert_eq!(parse(&json!({ "spec": spec })), None, "{spec}");
        }
    }
}
