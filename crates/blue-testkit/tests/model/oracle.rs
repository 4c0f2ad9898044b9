//! The oracle: what one write must look like under the ordered rules of a
//! pass (the crate README, "One pass, in order"), judged from
//! the snapshot the controller computed it from, the write itself and the
//! few facts of the world passed in (the clock, the retry settings, what
//! the infrastructure holds). Pure functions, so that the rules are tested
//! on their own below and a wrong rule cannot hide behind the controller
//! agreeing with it; `audit.rs` looks the facts up and feeds them each write.
//!
//! Each function returns what is wrong, one line each; empty means fine.

use crate::object::{flag, has_ours, is_deleting, object_profile, value_of};
use blue_kubernetes::config::{FINALIZER, REQUEST_ANNOTATION};
use serde_json::Value;

/// A controller's `retry_base_ms` and `retry_max_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retry {
    pub base_ms: u64,
    pub max_ms: u64,
}

impl Retry {
    /// The delay after failed attempt `attempt` (counted from 1): the base,
    /// doubled each attempt, capped at the maximum.
    pub fn backoff_ms(self, attempt: u64) -> u64 {
        self.base_ms
            .checked_mul(1u64 << attempt.saturating_sub(1).min(63))
            .map_or(self.max_ms, |d| d.min(self.max_ms))
    }
}

const PHASES: [&str; 7] = [
    "Ready",
    "Reconciling",
    "Deleting",
    "Failed",
    "Invalid",
    "Blocked",
    "Suspended",
];

const REASONS: [&str; 10] = [
    "Converged",
    "Reconciling",
    "Deleting",
    "NotReady",
    "ExecutionFailed",
    "ValidationFailed",
    "InvalidConfiguration",
    "ImmutableStateIdentity",
    "DestructionProtected",
    "Suspended",
];

/// Milliseconds since the epoch of an RFC 3339 time.
pub fn time_ms(v: &Value) -> Option<u64> {
    let t = humantime::parse_rfc3339_weak(v.as_str()?).ok()?;
    Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as u64)
}

/// The period `reconcileInterval` asks for (60 s when unset); `None` when
/// it is malformed.
pub fn interval_ms(spec: &Value) -> Option<u64> {
    let Some(text) = spec.get("reconcileInterval").and_then(Value::as_str) else {
        return Some(60_000);
    };
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let n: u64 = text[..digits].parse().ok()?;
    let unit = match &text[digits..] {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    Some(n * unit)
}

fn phase(status: &Value) -> &str {
    status["phase"].as_str().unwrap_or_default()
}

/// The status the snapshot already had (`null` when none).
fn previous(snapshot: &Value) -> &Value {
    snapshot.get("status").unwrap_or(&Value::Null)
}

fn generation(snapshot: &Value) -> i64 {
    snapshot
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

fn request_token(snapshot: &Value) -> &str {
    snapshot["metadata"]["annotations"][REQUEST_ANNOTATION]
        .as_str()
        .unwrap_or_default()
}

/// Every status rule one write can be judged by: kstatus conditions and
/// their transition times, acknowledgement, deletionObserved, immutable
/// profile and state identity, interval and retry timing. `now_ms` is the
/// clock at the write; `state_identity` gives the stateIdentity a profile
/// must record.
pub fn status_rules(
    snapshot: &Value,
    status: &Value,
    now_ms: u64,
    retry: Retry,
    state_identity: impl Fn(&str) -> String,
) -> Vec<String> {
    let mut wrong = phase_and_clock_rules(status, now_ms);
    wrong.extend(condition_rules(snapshot, status));
    wrong.extend(acknowledgement_rules(snapshot, status));
    wrong.extend(identity_rules(snapshot, status, state_identity));
    wrong.extend(timing_rules(snapshot, status, retry));
    wrong
}

/// A known phase, and a reconcile time that is the clock's.
pub fn phase_and_clock_rules(status: &Value, now_ms: u64) -> Vec<String> {
    let mut wrong = Vec::new();
    let phase = phase(status);
    if !PHASES.contains(&phase) {
        wrong.push(format!("unknown phase {phase:?}"));
    }
    if time_ms(&status["lastReconcileTime"]) != Some(now_ms) {
        wrong.push("lastReconcileTime is not the clock's time".into());
    }
    wrong
}

/// kstatus: exactly Ready, Reconciling and Stalled, true as the phase
/// says, one known reason, the snapshot's generation, and a transition
/// time that moves only when status or reason does.
pub fn condition_rules(snapshot: &Value, status: &Value) -> Vec<String> {
    let mut wrong = Vec::new();
    let phase = phase(status);
    let generation = generation(snapshot);
    let wanted = [
        ("Ready", phase == "Ready"),
        (
            "Reconciling",
            matches!(phase, "Reconciling" | "Deleting" | "Failed"),
        ),
        ("Stalled", matches!(phase, "Invalid" | "Blocked")),
    ];
    let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
    if conditions.len() != wanted.len() {
        wrong.push(format!("{} conditions", conditions.len()));
    }
    let mut reason = None;
    for (kind, on) in wanted {
        let Some(c) = conditions.iter().find(|c| c["type"] == kind) else {
            wrong.push(format!("no {kind} condition"));
            continue;
        };
        if c["status"] != if on { "True" } else { "False" } {
            wrong.push(format!(
                "{kind} condition is {} in phase {phase}",
                c["status"]
            ));
        }
        let r = c["reason"].as_str().unwrap_or_default();
        if !REASONS.contains(&r) || reason.is_some_and(|first| first != r) {
            wrong.push(format!("{kind} condition has reason {r:?}"));
        }
        reason = Some(r);
        if c["observedGeneration"] != generation {
            wrong.push(format!(
                "{kind} condition observedGeneration {}",
                c["observedGeneration"]
            ));
        }
        let old = previous(snapshot)["conditions"]
            .as_array()
            .and_then(|l| l.iter().find(|o| o["type"] == kind));
        let same = old.is_some_and(|o| o["status"] == c["status"] && o["reason"] == c["reason"]);
        let since = match old {
            Some(old) if same => &old["lastTransitionTime"],
            _ => &status["lastReconcileTime"],
        };
        if time_ms(&c["lastTransitionTime"]) != time_ms(since) {
            wrong.push(format!(
                "{kind} condition transition time {} (changed: {})",
                c["lastTransitionTime"], !same
            ));
        }
    }
    wrong
}

/// Everything but the announcement of an effect records the snapshot's
/// generation and request token; deletionObserved is the snapshot's.
pub fn acknowledgement_rules(snapshot: &Value, status: &Value) -> Vec<String> {
    let mut wrong = Vec::new();
    let phase = phase(status);
    let previous = previous(snapshot);
    let (generation, token) = (generation(snapshot), request_token(snapshot));
    if phase == "Reconciling" {
        if status.get("observedGeneration") != previous.get("observedGeneration") {
            wrong.push("Reconciling acknowledged desired state".into());
        }
    } else if phase != "Deleting"
        && (status["observedGeneration"] != generation
            || status["lastHandledRequest"].as_str().unwrap_or_default() != token)
    {
        wrong.push(format!(
            "{phase} acknowledges generation {} / request {} of generation {generation} / request {token:?}",
            status["observedGeneration"], status["lastHandledRequest"]
        ));
    }
    if status["deletionObserved"] != is_deleting(snapshot) {
        wrong.push("deletionObserved differs from the snapshot".into());
    }
    wrong
}

/// Profile and state identity: immutable once recorded, and consistent.
pub fn identity_rules(
    snapshot: &Value,
    status: &Value,
    state_identity: impl Fn(&str) -> String,
) -> Vec<String> {
    let mut wrong = Vec::new();
    let previous = previous(snapshot);
    for key in ["profile", "stateIdentity"] {
        if previous.get(key).is_some_and(|p| !p.is_null()) && status.get(key) != previous.get(key) {
            wrong.push(format!(
                "recorded {key} changed from {} to {}",
                previous[key], status[key]
            ));
        }
    }
    if let Some(profile) = status.get("profile").and_then(Value::as_str) {
        if status["stateIdentity"] != state_identity(profile).as_str() {
            wrong.push(format!(
                "stateIdentity is not the hash of {profile}'s identity"
            ));
        }
    }
    wrong
}

/// The next check: one interval after Ready and Blocked, the backoff
/// after Failed (whose attempts count again from 1 once the desired state
/// changes).
/// Each resource's interval `i` is stretched by a factor
/// in [0, 10%) from its uid, so the next check comes `after` ms with
/// `i <= after < 1.1 i` (exactly `i` when the stretch rounds to nothing).
pub fn stretched_within(i: u64, after: Option<u64>) -> bool {
    after.is_some_and(|after| after >= i && ((after - i) * 10 < i || after == i))
}

pub fn timing_rules(snapshot: &Value, status: &Value, retry: Retry) -> Vec<String> {
    let mut wrong = Vec::new();
    let phase = phase(status);
    let previous = previous(snapshot);
    let now = time_ms(&status["lastReconcileTime"]);
    let next = time_ms(&status["nextReconcileTime"]);
    let retries = status["retryCount"].as_u64();
    match (phase, now) {
        (_, None) => wrong.push("no lastReconcileTime".into()),
        ("Ready" | "Blocked", Some(now)) => {
            let spec = snapshot.get("spec").unwrap_or(&Value::Null);
            let on_time = match (interval_ms(spec), next) {
                (Some(i), Some(next)) => stretched_within(i, next.checked_sub(now)),
                _ => false,
            };
            if !on_time || retries != Some(0) {
                wrong.push(format!(
                    "{phase}: next check {next:?} (now {now}), retries {retries:?}"
                ));
            }
        }
        ("Failed", Some(now)) => {
            let changed = previous.get("observedGeneration").and_then(Value::as_i64)
                != Some(generation(snapshot))
                || previous["lastHandledRequest"].as_str().unwrap_or_default()
                    != request_token(snapshot);
            let before = if changed {
                0
            } else {
                previous["retryCount"].as_u64().unwrap_or(0)
            };
            let attempt = before + 1;
            let delay = retry.backoff_ms(attempt);
            if retries != Some(attempt) || next != Some(now + delay) {
                wrong.push(format!(
                    "Failed: attempt {retries:?}, next {next:?} (now {now}); \
                     expected attempt {attempt}, next {}",
                    now + delay
                ));
            }
        }
        _ => {}
    }
    wrong
}

/// The generation a Ready status claims to be Ready for: `None` for any
/// other phase, `Some(None)` when it names none.
pub fn ready_claim(status: &Value) -> Option<Option<i64>> {
    (status.get("phase").and_then(Value::as_str) == Some("Ready"))
        .then(|| status.get("observedGeneration").and_then(Value::as_i64))
}

/// Invariant 2, before the write: Ready for generation `g` (whose spec was
/// `spec`, so whose profile is `profile`) only while the infrastructure
/// holds (`held`) what `g` asked for, with that profile recorded, and only
/// for a valid, unsuspended `g`.
pub fn ready_claim_rules(
    g: i64,
    spec: &Value,
    profile: &str,
    held: Option<&Value>,
    status: &Value,
) -> Vec<String> {
    let mut wrong = Vec::new();
    let want = value_of(spec);
    if held != Some(&want) {
        wrong.push(format!(
            "Ready for generation {g} (wants {profile} = {want}) \
             while the infrastructure holds {:?}",
            held.cloned()
        ));
    }
    if status.get("profile").and_then(Value::as_str) != Some(profile) {
        wrong.push(format!(
            "Ready for generation {g} records profile {} instead of {profile}",
            status["profile"]
        ));
    }
    if flag(spec, "/config/invalid") || flag(spec, "/suspend") {
        wrong.push(format!(
            "Ready for generation {g}, which was invalid or suspended"
        ));
    }
    wrong
}

/// Invariant 2, after the write: Ready for generation `g` landed only on
/// generation `g` of a live object that carries our finalizer.
pub fn ready_landing_rules(g: i64, written: &Value) -> Vec<String> {
    let mut wrong = Vec::new();
    let current = written
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);
    if current != Some(g) {
        wrong.push(format!(
            "Ready for generation {g} was stored on generation {current:?}"
        ));
    }
    if is_deleting(written) {
        wrong.push("Ready stored on a deleting object".into());
    }
    if !has_ours(written) {
        wrong.push("Ready stored without our finalizer".into());
    }
    wrong
}

/// Whatever a stored status acknowledges is at most what is stored.
pub fn stored_acknowledgement_rule(status: &Value, written: &Value) -> Option<String> {
    let stored = written
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);
    let observed = status["observedGeneration"].as_i64();
    observed
        .is_some_and(|o| Some(o) > stored)
        .then(|| format!("observedGeneration {observed:?} > generation {stored:?}"))
}

/// The profile a stored status announces an effect on (Reconciling or
/// Deleting with its profile), if it does.
pub fn announced_profile(status: &Value) -> Option<&str> {
    let announces = matches!(phase(status), "Reconciling" | "Deleting");
    status["profile"].as_str().filter(|_| announces)
}

/// Only ever our finalizer changes: the others `stored` carries that
/// `finalizers` drops.
pub fn dropped_finalizers(stored: Option<&Value>, finalizers: &[String]) -> Vec<String> {
    stored
        .iter()
        .flat_map(|o| o.pointer("/metadata/finalizers").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .filter(|f| *f != FINALIZER && !finalizers.iter().any(|n| n == f))
        .map(str::to_string)
        .collect()
}

/// Whether writing `finalizers` lets a deleting `Destroy` object go.
pub fn releases_a_destroy(stored: &Value, finalizers: &[String]) -> bool {
    let removing = has_ours(stored) && !finalizers.iter().any(|f| f == FINALIZER);
    let destroy = stored["spec"].get("deletionPolicy").and_then(Value::as_str) == Some("Destroy");
    removing && destroy && is_deleting(stored)
}

/// Invariant 3: why letting the deleting `Destroy` object `stored` go is
/// premature, if it is: its infrastructure still exists (`held`), or its
/// destruction is protected.
pub fn premature_release(stored: &Value, held: Option<&Value>) -> Option<String> {
    if let Some(value) = held {
        let profile = object_profile(stored);
        return Some(format!(
            "finalizer removed (Destroy) while {profile} still exists ({value})"
        ));
    }
    flag(&stored["spec"], "/config/compute-prevent-destroy")
        .then(|| "finalizer removed (Destroy) despite compute-prevent-destroy".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::{Duration, UNIX_EPOCH};

    const NOW: u64 = 1_000_000;
    const RETRY: Retry = Retry {
        base_ms: 1_000,
        max_ms: 60_000,
    };

    fn rfc3339(ms: u64) -> String {
        humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
    }

    fn snapshot(generation: i64, spec: Value) -> Value {
        json!({
            "metadata": {
                "name": "a", "namespace": "dev", "uid": "u", "generation": generation,
                "finalizers": [FINALIZER],
            },
            "spec": spec,
        })
    }

    fn identity(profile: &str) -> String {
        format!("hash of {profile}")
    }

    /// The status a correct controller writes for `snapshot` at `NOW`: the
    /// rules' own reading of the ordered rules of a pass, built by hand.
    fn written(snapshot: &Value, phase: &str, reason: &str, next_ms: u64, retries: u64) -> Value {
        let generation = generation(snapshot);
        let at = rfc3339(NOW);
        let condition = |kind: &str, on: bool| {
            json!({
                "type": kind, "status": if on { "True" } else { "False" }, "reason": reason,
                "observedGeneration": generation, "lastTransitionTime": at,
            })
        };
        json!({
            "phase": phase,
            "observedGeneration": generation,
            "lastHandledRequest": "",
            "deletionObserved": false,
            "profile": "dev--a",
            "stateIdentity": identity("dev--a"),
            "lastReconcileTime": at,
            "nextReconcileTime": rfc3339(next_ms),
            "retryCount": retries,
            "conditions": [
                condition("Ready", phase == "Ready"),
                condition("Reconciling", matches!(phase, "Reconciling" | "Deleting" | "Failed")),
                condition("Stalled", matches!(phase, "Invalid" | "Blocked")),
            ],
        })
    }

    fn ready(snapshot: &Value) -> Value {
        written(snapshot, "Ready", "Converged", NOW + 60_000, 0)
    }

    fn judge(snapshot: &Value, status: &Value) -> Vec<String> {
        status_rules(snapshot, status, NOW, RETRY, identity)
    }

    #[test]
    fn a_ready_status_by_the_rules_passes() {
        let object = snapshot(1, json!({}));
        assert_eq!(judge(&object, &ready(&object)), Vec::<String>::new());
    }

    #[test]
    fn ready_status_with_the_wrong_next_reconcile_time_is_reported() {
        let object = snapshot(1, json!({"reconcileInterval": "2m"}));
        let wrong = judge(&object, &ready(&object));
        assert_eq!(wrong.len(), 1, "{wrong:?}");
        assert!(wrong[0].starts_with("Ready: next check"), "{wrong:?}");

        let on_time = written(&object, "Ready", "Converged", NOW + 120_000, 0);
        assert!(judge(&object, &on_time).is_empty());
        let stretched = written(&object, "Ready", "Converged", NOW + 131_999, 0);
        assert!(judge(&object, &stretched).is_empty(), "under a tenth more");
        let late = written(&object, "Ready", "Converged", NOW + 132_000, 0);
        assert_eq!(judge(&object, &late).len(), 1, "a tenth more");
    }

    #[test]
    fn failed_status_backs_off_exponentially_up_to_the_cap() {
        let delays: Vec<u64> = (1..=8).map(|attempt| RETRY.backoff_ms(attempt)).collect();
        assert_eq!(
            delays,
            [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]
        );
        // Far beyond the cap the doubling overflows: still the cap.
        assert_eq!(RETRY.backoff_ms(100), 60_000);
        let huge = Retry {
            base_ms: u64::MAX / 2,
            max_ms: u64::MAX,
        };
        assert_eq!(huge.backoff_ms(3), u64::MAX);
    }

    #[test]
    fn failed_attempts_count_on_until_the_desired_state_changes() {
        let mut object = snapshot(2, json!({}));
        object["status"] = written(&object, "Failed", "ExecutionFailed", NOW, 2);
        let third = written(&object, "Failed", "ExecutionFailed", NOW + 4_000, 3);
        assert!(timing_rules(&object, &third, RETRY).is_empty());
        let first = written(&object, "Failed", "ExecutionFailed", NOW + 1_000, 1);
        assert_eq!(timing_rules(&object, &first, RETRY).len(), 1);

        // A new generation starts again from the first attempt.
        object["metadata"]["generation"] = json!(3);
        assert!(timing_rules(&object, &first, RETRY).is_empty());
        assert_eq!(timing_rules(&object, &third, RETRY).len(), 1);
    }

    #[test]
    fn intervals_are_read_in_milliseconds_seconds_minutes_and_hours() {
        let read = |text: &str| interval_ms(&json!({ "reconcileInterval": text }));
        assert_eq!(read("250ms"), Some(250));
        assert_eq!(read("30s"), Some(30_000));
        assert_eq!(read("2m"), Some(120_000));
        assert_eq!(read("1h"), Some(3_600_000));
        assert_eq!(interval_ms(&json!({})), Some(60_000));
    }

    #[test]
    fn malformed_intervals_have_no_period() {
        for text in ["", "2", "s", "1.5s", "2 m", "-1s", "2d", "1h30m"] {
            let spec = json!({ "reconcileInterval": text });
            assert_eq!(interval_ms(&spec), None, "{text:?}");
        }
    }

    #[test]
    fn an_unknown_phase_or_another_clock_is_reported() {
        let object = snapshot(1, json!({}));
        let mut status = ready(&object);
        status["phase"] = json!("Done");
        assert_eq!(
            phase_and_clock_rules(&status, NOW + 1),
            [
                "unknown phase \"Done\"",
                "lastReconcileTime is not the clock's time"
            ]
        );
    }

    #[test]
    fn a_condition_keeps_its_transition_time_while_unchanged() {
        let mut object = snapshot(1, json!({}));
        let mut earlier = ready(&object);
        for c in earlier["conditions"].as_array_mut().expect("conditions") {
            c["lastTransitionTime"] = json!(rfc3339(NOW - 5_000));
        }
        object["status"] = earlier.clone();
        let moved = condition_rules(&object, &ready(&object));
        assert_eq!(moved.len(), 3, "{moved:?}");
        assert!(condition_rules(&object, &earlier).is_empty());
    }

    #[test]
    fn conditions_disagreeing_with_the_phase_are_reported() {
        let object = snapshot(1, json!({}));
        let mut status = ready(&object);
        status["conditions"][1]["status"] = json!("True");
        status["conditions"][2]["reason"] = json!("Suspended");
        assert_eq!(condition_rules(&object, &status).len(), 2);
    }

    #[test]
    fn reconciling_acknowledges_nothing_yet() {
        let mut object = snapshot(2, json!({}));
        object["status"] = json!({"observedGeneration": 1});
        let mut status = written(&object, "Reconciling", "Reconciling", NOW, 0);
        assert_eq!(
            acknowledgement_rules(&object, &status),
            ["Reconciling acknowledged desired state"]
        );
        status["observedGeneration"] = json!(1);
        assert!(acknowledgement_rules(&object, &status).is_empty());
    }

    #[test]
    fn a_settled_status_acknowledges_the_request_token_and_deletion() {
        let mut object = snapshot(1, json!({}));
        object["metadata"]["annotations"] = json!({ REQUEST_ANNOTATION: "token-1" });
        object["metadata"]["deletionTimestamp"] = json!(rfc3339(NOW));
        let wrong = acknowledgement_rules(&object, &ready(&object));
        assert_eq!(wrong.len(), 2, "{wrong:?}");
        assert_eq!(wrong[1], "deletionObserved differs from the snapshot");
    }

    #[test]
    fn a_recorded_profile_and_state_identity_never_change() {
        let mut object = snapshot(1, json!({}));
        object["status"] = json!({"profile": "shared", "stateIdentity": identity("shared")});
        let wrong = identity_rules(&object, &ready(&object), identity);
        assert_eq!(wrong.len(), 2, "{wrong:?}");
        assert!(wrong[0].starts_with("recorded profile changed"));
    }

    #[test]
    fn the_state_identity_is_the_hash_of_the_profile_identity() {
        let object = snapshot(1, json!({}));
        let mut status = ready(&object);
        status["stateIdentity"] = json!(identity("shared"));
        assert_eq!(
            identity_rules(&object, &status, identity),
            ["stateIdentity is not the hash of dev--a's identity"]
        );
    }

    #[test]
    fn only_a_ready_status_claims_a_generation() {
        let object = snapshot(4, json!({}));
        assert_eq!(ready_claim(&ready(&object)), Some(Some(4)));
        assert_eq!(ready_claim(&json!({"phase": "Ready"})), Some(None));
        let failed = written(&object, "Failed", "ExecutionFailed", NOW + 1_000, 1);
        assert_eq!(ready_claim(&failed), None);
    }

    #[test]
    fn ready_while_the_infrastructure_holds_something_else_is_reported() {
        let object = snapshot(1, json!({}));
        let spec = json!({"config": {"value": 2}});
        let status = ready(&object);
        assert!(ready_claim_rules(1, &spec, "dev--a", Some(&json!(2)), &status).is_empty());
        let wrong = ready_claim_rules(1, &spec, "dev--a", Some(&json!(1)), &status);
        assert_eq!(wrong.len(), 1, "{wrong:?}");
        assert_eq!(
            ready_claim_rules(1, &spec, "dev--a", None, &status).len(),
            1
        );
        assert_eq!(
            ready_claim_rules(1, &spec, "shared", Some(&json!(2)), &status).len(),
            1
        );
    }

    #[test]
    fn ready_for_an_invalid_or_suspended_generation_is_reported() {
        let object = snapshot(1, json!({}));
        for spec in [
            json!({"config": {"value": 1, "invalid": true}}),
            json!({"suspend": true, "config": {"value": 1}}),
        ] {
            let wrong = ready_claim_rules(1, &spec, "dev--a", Some(&json!(1)), &ready(&object));
            assert_eq!(
                wrong,
                ["Ready for generation 1, which was invalid or suspended"]
            );
        }
    }

    #[test]
    fn ready_lands_only_on_its_generation_of_a_live_object_we_hold() {
        let object = snapshot(3, json!({}));
        assert!(ready_landing_rules(3, &object).is_empty());
        assert_eq!(ready_landing_rules(2, &object).len(), 1);
        let mut gone = object.clone();
        gone["metadata"]["deletionTimestamp"] = json!(rfc3339(NOW));
        gone["metadata"]["finalizers"] = json!(["example.com/keep"]);
        assert_eq!(ready_landing_rules(3, &gone).len(), 2);
    }

    #[test]
    fn a_status_never_acknowledges_a_generation_not_stored() {
        let object = snapshot(2, json!({}));
        let mut status = ready(&object);
        assert_eq!(stored_acknowledgement_rule(&status, &object), None);
        status["observedGeneration"] = json!(3);
        assert!(stored_acknowledgement_rule(&status, &object).is_some());
    }

    #[test]
    fn only_reconciling_and_deleting_announce_an_effect() {
        let object = snapshot(1, json!({}));
        let announce = written(&object, "Reconciling", "Reconciling", NOW, 0);
        assert_eq!(announced_profile(&announce), Some("dev--a"));
        assert_eq!(announced_profile(&ready(&object)), None);
    }

    #[test]
    fn dropping_someone_elses_finalizer_is_reported() {
        let mut object = snapshot(1, json!({}));
        object["metadata"]["finalizers"] = json!([FINALIZER, "example.com/keep"]);
        assert_eq!(dropped_finalizers(Some(&object), &[]), ["example.com/keep"]);
        let kept = ["example.com/keep".to_string()];
        assert!(dropped_finalizers(Some(&object), &kept).is_empty());
        assert!(dropped_finalizers(None, &[]).is_empty());
    }

    #[test]
    fn releasing_a_destroy_early_is_reported() {
        let mut object = snapshot(1, json!({"deletionPolicy": "Destroy"}));
        assert!(!releases_a_destroy(&object, &[]), "not deleting yet");
        object["metadata"]["deletionTimestamp"] = json!(rfc3339(NOW));
        assert!(releases_a_destroy(&object, &[]));
        assert!(!releases_a_destroy(&object, &[FINALIZER.to_string()]));

        assert_eq!(premature_release(&object, None), None);
        let held = premature_release(&object, Some(&json!(1))).expect("still exists");
        assert!(held.contains("while dev--a still exists"), "{held}");
        object["spec"]["config"] = json!({"compute-prevent-destroy": true});
        assert!(premature_release(&object, None).is_some());
    }
}
