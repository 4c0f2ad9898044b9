//! When a resource needs a reconcile, decided from a listed snapshot alone;
//! the times status records (milliseconds since the epoch to and from
//! RFC 3339 text), and each resource's interval, stretched by a factor
//! derived from its uid so that resources created together are not
//! checked together.
//!
//! The stretch, exactly: `h` is the 64-bit FNV-1a hash of the uid's bytes,
//! `permille = h % 1000`, and an interval `i` becomes
//! `i + i * permille / 10_000` (integer arithmetic, rounded down), so the
//! stretch is in `[0, 10%)` of the interval. It depends on nothing but the
//! uid, so every process (and a test) computes the same one, and a
//! resource keeps its place in the spread from one check to the next.

use crate::domain::names::Names;
use crate::domain::resource::{self, status, status_str};
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// True when the resource needs a reconcile at `now_ms`, for a controller
/// that writes `names` (its finalizer and request annotation) and retries
/// at most every `retry_max_ms` ([`Config::names`](crate::Config::names),
/// [`Config::retry_max_ms`](crate::Config::retry_max_ms)).
///
/// Due when desired state changed, when it is being deleted and status has
/// not yet recorded that, or when its phase is neither `Invalid` nor
/// `Suspended` and `status.nextReconcileTime` (missing: long ago) has passed.
/// Needs no I/O, so an idle poll costs only the list.
///
/// Status is a record, not an authority (anyone allowed to write `/status`
/// can write anything there), so a record that contradicts the object is due
/// whatever it says:
/// - not deleting, and a phase other than `Failed`, `Waiting`, `Rejected`,
///   `Invalid` or `Suspended` (which can be written before any effect), without our
///   finalizer or without a recorded `profile` and `stateIdentity`;
/// - `Suspended` while `spec.suspend` is not true;
/// - a `nextReconcileTime` later than now plus the interval stretched by
///   a tenth (the most the uid-derived stretch adds) plus `retry_max_ms`.
///
/// This is the stored record's answer, which is all a one-shot
/// reconcile has. A running controller keeps each resource's next check
/// in memory and lets `nextReconcileTime` decide only for a resource it
/// has no schedule for yet: a quiet periodic check does not rewrite it.
///
/// ```
/// use blue_kubernetes::{config::Names, resource::is_due};
/// let forged = serde_json::json!({
///     "metadata": {"generation": 1},
///     "status": {"phase": "Ready", "observedGeneration": 1,
///                "nextReconcileTime": "2999-01-01T00:00:00Z"},
/// });
/// assert!(is_due(&forged, 0, &Names::default(), 60_000));
/// ```
pub fn is_due(resource: &Value, now_ms: u64, names: &Names, retry_max_ms: u64) -> bool {
    due_at_named(resource, now_ms, names, retry_max_ms).is_some_and(|at| at <= now_ms)
}

/// When the resource, as it is, becomes due: `now_ms` or earlier when it is
/// due already, `None` when only a change to the object can make it due
/// (`Invalid`, `Suspended` and still suspended). The same rules as
/// [`is_due`]: `is_due(r, now_ms, ..)` is exactly `due_at <= now_ms`, and
/// when it is not due yet, `is_due(r, t, ..)` for every later `t` is
/// exactly `due_at <= t`, so a timer set from it fires when a poll would
/// have found the resource due.
pub(crate) fn due_at_named(
    resource: &Value,
    now_ms: u64,
    names: &Names,
    retry_max_ms: u64,
) -> Option<u64> {
    match due_named(resource, now_ms, names, retry_max_ms) {
        Due::Now => Some(now_ms),
        Due::Stored { at_ms, .. } => Some(at_ms),
        Due::OnEdit => None,
    }
}

/// Why and when a resource, as it is, becomes due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Due {
    /// Now, by a rule of the object itself (desired state changed, an
    /// unobserved deletion, a record that contradicts the object, no
    /// plausible stored time).
    Now,
    /// At the stored `nextReconcileTime`: the periodic check (or retry)
    /// that a process which keeps its own schedule decides instead.
    Stored {
        /// The stored time.
        at_ms: u64,
        /// What the stored time was written for, a tenth of which spreads
        /// overdue checks found at once: the reconcile interval (the
        /// default when malformed), or for a retry (`Failed`, `Waiting`)
        /// the largest retry delay, so a retry is never put off by a share
        /// of an hour-long interval.
        period_ms: u64,
    },
    /// Only a change to the object can make it due.
    OnEdit,
}

/// [`due_at_named`], saying which rule decided.
pub(crate) fn due_named(resource: &Value, now_ms: u64, names: &Names, retry_max_ms: u64) -> Due {
    let now = Due::Now;
    if desired_state_changed(resource, &names.request_annotation) {
        return now;
    }
    let deleting = resource::is_deleting(resource);
    let deletion_observed = status(resource)
        .and_then(|s| s.get("deletionObserved"))
        .and_then(Value::as_bool)
        == Some(true);
    if deleting && !deletion_observed {
        return now;
    }
    let phase = status_str(resource, "phase");
    match phase {
        Some("Invalid") => return Due::OnEdit,
        Some("Suspended") if resource::suspended(resource) => return Due::OnEdit,
        Some("Suspended") => return now,
        // Each can be written before any effect: the stored time decides.
        Some("Failed" | "Waiting" | "Rejected") => {}
        _ if !deleting && !records_an_effect(resource, &names.finalizer) => return now,
        _ => {}
    }
    let Some(next) = status_str(resource, "nextReconcileTime").and_then(parse_ms) else {
        return now;
    };
    let interval =
        resource::parse(resource).map_or(resource::DEFAULT_INTERVAL_MS, |c| c.interval_ms);
    // The interval as stretched (`stretch`, under a tenth more) or the
    // largest retry delay, whichever the record was written for.
    let latest_plausible = now_ms
        .saturating_add(interval)
        .saturating_add(interval / 10)
        .saturating_add(retry_max_ms);
    // An implausibly late time is a forged record: due at once. A plausible
    // one stays plausible as time passes, so the answer holds for later `t`.
    let period_ms = match phase {
        Some("Failed" | "Waiting") => retry_max_ms,
        _ => interval,
    };
    match next > latest_plausible {
        true => now,
        false => Due::Stored {
            at_ms: next,
            period_ms,
        },
    }
}

/// What every status written after an effect carries: our finalizer and the
/// profile and state identity the effect ran under.
fn records_an_effect(r: &Value, finalizer: &str) -> bool {
    resource::has_finalizer(r, finalizer)
        && status_str(r, "profile").is_some()
        && status_str(r, "stateIdentity").is_some()
}

/// The first check this process makes of a periodic resource it has no
/// schedule for: the stored time, or, when that has passed (a start after
/// a while, quiet checks that left it behind, or a retry written just
/// before a watch gap), soon after now, spread by the uid's share of a
/// tenth of the period it was written for (the interval, or the largest
/// retry delay for a retry) so thousands of resources found due at a
/// start are not queued at once behind one another.
pub(crate) fn first_check(due: Due, uid: &str, now_ms: u64) -> Option<u64> {
    match due {
        Due::Stored { at_ms, .. } if at_ms > now_ms => Some(at_ms),
        Due::Stored { period_ms, .. } => Some(now_ms.saturating_add(extra_ms(period_ms, uid))),
        Due::Now | Due::OnEdit => None,
    }
}

/// Retry delay of attempt `n` (1-based): `min(max, base * 2^(n-1))`.
pub(crate) fn backoff_ms(attempt: u32, base_ms: u64, max_ms: u64) -> u64 {
    let shift = attempt.saturating_sub(1).min(63);
    base_ms
        .checked_mul(1u64 << shift)
        .map_or(max_ms, |d| d.min(max_ms))
}

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

    use serde_json::json;

    /// The reference names and largest retry delay.
    fn due(resource: &Value, now_ms: u64) -> bool {
        is_due(resource, now_ms, &Names::default(), 60_000)
    }

    /// A resource with the record a real pass leaves: acknowledged desired
    /// state, our finalizer, the profile and state identity.
    fn acknowledged(extra_status: Value) -> Value {
        let mut status = json!({
            "observedGeneration": 3, "lastHandledRequest": "t1",
            "profile": "ns--a", "stateIdentity": "abc",
        });
        status
            .as_object_mut()
            .unwrap()
            .extend(extra_status.as_object().unwrap().clone());
        json!({
            "metadata": {
                "generation": 3,
                "annotations": {crate::config::REQUEST_ANNOTATION: "t1"},
                "finalizers": [crate::config::FINALIZER],
            },
            "spec": {"suspend": true},
            "status": status,
        })
    }

    fn ready_until(next_ms: u64) -> Value {
        let mut r =
            acknowledged(json!({"phase": "Ready", "nextReconcileTime": format_ms(next_ms)}));
        r["spec"] = json!({"reconcileInterval": "10s"});
        r
    }

    #[test]
    fn forged_ready_status_without_our_finalizer_is_due() {
        let mut r = ready_until(10_000);
        assert!(!due(&r, 5_000));
        r["metadata"]["finalizers"] = json!(["someone.else/keep"]);
        assert!(due(&r, 5_000));
    }

    #[test]
    fn forged_ready_status_without_recorded_identity_is_due() {
        for key in ["profile", "stateIdentity"] {
            let mut r = ready_until(10_000);
            r["status"].as_object_mut().unwrap().remove(key);
            assert!(due(&r, 5_000), "{key}");
        }
    }

    #[test]
    fn next_time_beyond_interval_plus_maximum_backoff_is_implausible_and_due() {
        // 10 s interval + 1 s largest stretch + 60 s largest backoff from now.
        assert!(!due(&ready_until(76_000), 5_000));
        assert!(due(&ready_until(76_001), 5_000));
        assert!(due(&ready_until(u64::MAX), 5_000));
        let names = Names::default();
        assert!(
            !is_due(&ready_until(76_001), 5_000, &names, 3_600_000),
            "configured max"
        );
    }

    #[test]
    fn suspended_record_is_trusted_only_while_spec_says_suspend() {
        let mut r = acknowledged(json!({"phase": "Suspended"}));
        assert!(!due(&r, 0));
        r["spec"]["suspend"] = json!(false);
        assert!(due(&r, 0));
    }

    #[test]
    fn failed_before_any_effect_needs_no_finalizer_and_keeps_its_backoff() {
        let mut r = acknowledged(json!({"phase": "Failed", "nextReconcileTime": format_ms(4_000)}));
        r["metadata"]["finalizers"] = json!([]);
        r["status"].as_object_mut().unwrap().remove("profile");
        assert!(!due(&r, 3_999));
        assert!(due(&r, 4_000));
    }

    #[test]
    fn a_stored_retry_is_spread_over_the_retry_delay_and_a_check_over_the_interval() {
        let period = |phase: &str| {
            let mut r = acknowledged(json!({"phase": phase, "nextReconcileTime": format_ms(500)}));
            r["spec"] = json!({"reconcileInterval": "1h"});
            match due_named(&r, 0, &Names::default(), 4_000) {
                Due::Stored { period_ms, .. } => period_ms,
                other => panic!("{phase}: {other:?}"),
            }
        };
        assert_eq!(period("Failed"), 4_000);
        assert_eq!(period("Waiting"), 4_000);
        assert_eq!(period("Ready"), 3_600_000);
    }

    #[test]
    fn backoff_doubles_from_base_up_to_max() {
        let delays: Vec<_> = (1..=8).map(|n| backoff_ms(n, 1000, 60_000)).collect();
        assert_eq!(delays, [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]);
        assert_eq!(backoff_ms(200, 1000, 60_000), 60_000);
    }

    #[test]
    fn never_reconciled_resource_is_due() {
        assert!(due(&json!({"metadata": {"name": "a"}}), 0));
    }

    #[test]
    fn acknowledged_resource_is_due_only_when_next_time_passes() {
        let r = ready_until(10_000);
        assert!(!due(&r, 9_999));
        assert!(due(&r, 10_000));
    }

    #[test]
    fn new_generation_or_request_token_makes_it_due() {
        let mut r = acknowledged(json!({"phase": "Ready", "nextReconcileTime": format_ms(10_000)}));
        r["metadata"]["generation"] = json!(4);
        assert!(due(&r, 0));
        let mut r = acknowledged(json!({"phase": "Ready", "nextReconcileTime": format_ms(10_000)}));
        r["metadata"]["annotations"][crate::config::REQUEST_ANNOTATION] = json!("t2");
        assert!(due(&r, 0));
    }

    #[test]
    fn invalid_and_suspended_wait_for_desired_state_changes() {
        for phase in ["Invalid", "Suspended"] {
            let r = acknowledged(json!({"phase": phase, "nextReconcileTime": format_ms(0)}));
            assert!(!due(&r, u64::MAX / 2), "{phase}");
        }
    }

    #[test]
    fn unobserved_deletion_is_due_even_when_invalid() {
        let mut r = acknowledged(json!({"phase": "Invalid"}));
        r["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(due(&r, 0));
        r["status"]["deletionObserved"] = json!(true);
        assert!(!due(&r, 0));
    }

    proptest::proptest! {
        /// Due now exactly when `is_due` says so; otherwise a timer set from
        /// `due_at` fires exactly when a poll at any later time would have
        /// found the resource due.
        #[test]
        fn due_at_agrees_with_is_due_at_every_later_time(
            phase in proptest::sample::select(&["Ready", "Failed", "Invalid", "Suspended", "Pending"][..]),
            next_s in 0u64..200,
            now_s in 0u64..200,
            later_s in 0u64..200,
            suspend: bool,
            generation in 2i64..4,
        ) {
            let mut r = acknowledged(json!({"phase": phase, "nextReconcileTime": format_ms(next_s * 1000)}));
            r["spec"] = json!({"reconcileInterval": "10s", "suspend": suspend});
            r["metadata"]["generation"] = json!(generation);
            let (names, now) = (Names::default(), now_s * 1000);
            let at = due_at_named(&r, now, &names, 60_000);
            proptest::prop_assert_eq!(is_due(&r, now, &names, 60_000), at.is_some_and(|at| at <= now));
            if at.is_none_or(|at| at > now) {
                let t = now + later_s * 1000;
                proptest::prop_assert_eq!(is_due(&r, t, &names, 60_000), at.is_some_and(|at| at <= t));
            }
        }
    }

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
