//! When a resource needs a reconcile, decided from a listed snapshot alone.

use crate::resource::{self, status, status_str};
use crate::time::parse_ms;
use crate::Names;
use serde_json::Value;

/// Desired state differs from what status acknowledged: a new generation or
/// a new request token.
pub(crate) fn desired_state_changed(r: &Value, request_annotation: &str) -> bool {
    let observed = status(r)
        .and_then(|s| s.get("observedGeneration"))
        .and_then(Value::as_i64);
    observed != Some(resource::generation(r))
        || resource::request_token(r, request_annotation)
            != status_str(r, "lastHandledRequest").unwrap_or("")
}

/// True when the resource needs a reconcile at `now_ms`.
///
/// Due when desired state changed, when it is being deleted and status has
/// not yet recorded that, or when its phase is neither `Invalid` nor
/// `Suspended` and `status.nextReconcileTime` (missing: long ago) has passed.
/// Needs no I/O, so an idle poll costs only the list. Uses the reference
/// [`Names`]; a controller uses its own.
pub fn is_due(resource: &Value, now_ms: u64) -> bool {
    is_due_named(resource, now_ms, &Names::default())
}

/// [`is_due`] with a controller's names.
pub(crate) fn is_due_named(resource: &Value, now_ms: u64, names: &Names) -> bool {
    if desired_state_changed(resource, &names.request_annotation) {
        return true;
    }
    let deletion_observed = status(resource)
        .and_then(|s| s.get("deletionObserved"))
        .and_then(Value::as_bool)
        == Some(true);
    if resource::is_deleting(resource) && !deletion_observed {
        return true;
    }
    if matches!(status_str(resource, "phase"), Some("Invalid" | "Suspended")) {
        return false;
    }
    let next = status_str(resource, "nextReconcileTime").and_then(parse_ms);
    next.is_none_or(|next| next <= now_ms)
}

/// Retry delay of attempt `n` (1-based): `min(max, base * 2^(n-1))`.
pub(crate) fn backoff_ms(attempt: u32, base_ms: u64, max_ms: u64) -> u64 {
    let shift = attempt.saturating_sub(1).min(63);
    base_ms
        .checked_mul(1u64 << shift)
        .map_or(max_ms, |d| d.min(max_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::format_ms;
    use serde_json::json;

    fn acknowledged(extra_status: Value) -> Value {
        let mut status = json!({"observedGeneration": 3, "lastHandledRequest": "t1"});
        status
            .as_object_mut()
            .unwrap()
            .extend(extra_status.as_object().unwrap().clone());
        json!({
            "metadata": {"generation": 3, "annotations": {crate::REQUEST_ANNOTATION: "t1"}},
            "status": status,
        })
    }

    #[test]
    fn backoff_doubles_from_base_up_to_max() {
        let delays: Vec<_> = (1..=8).map(|n| backoff_ms(n, 1000, 60_000)).collect();
        assert_eq!(delays, [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]);
        assert_eq!(backoff_ms(200, 1000, 60_000), 60_000);
    }

    #[test]
    fn never_reconciled_resource_is_due() {
        assert!(is_due(&json!({"metadata": {"name": "a"}}), 0));
    }

    #[test]
    fn acknowledged_resource_is_due_only_when_next_time_passes() {
        let r = acknowledged(json!({"phase": "Ready", "nextReconcileTime": format_ms(10_000)}));
        assert!(!is_due(&r, 9_999));
        assert!(is_due(&r, 10_000));
    }

    #[test]
    fn new_generation_or_request_token_makes_it_due() {
        let mut r = acknowledged(json!({"phase": "Ready", "nextReconcileTime": format_ms(10_000)}));
        r["metadata"]["generation"] = json!(4);
        assert!(is_due(&r, 0));
        let mut r = acknowledged(json!({"phase": "Ready", "nextReconcileTime": format_ms(10_000)}));
        r["metadata"]["annotations"][crate::REQUEST_ANNOTATION] = json!("t2");
        assert!(is_due(&r, 0));
    }

    #[test]
    fn invalid_and_suspended_wait_for_desired_state_changes() {
        for phase in ["Invalid", "Suspended"] {
            let r = acknowledged(json!({"phase": phase, "nextReconcileTime": format_ms(0)}));
            assert!(!is_due(&r, u64::MAX / 2), "{phase}");
        }
    }

    #[test]
    fn unobserved_deletion_is_due_even_when_invalid() {
        let mut r = acknowledged(json!({"phase": "Invalid"}));
        r["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(is_due(&r, 0));
        r["status"]["deletionObserved"] = json!(true);
        assert!(!is_due(&r, 0));
    }
}
