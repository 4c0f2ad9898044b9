//! The status the controller writes: phase, generic reason, kstatus conditions.

use crate::domain::due::format_ms;
use crate::domain::due::{backoff_ms, desired_state_changed};
use crate::domain::phase::{Phase, Reason};
use crate::domain::resource::{self, status};
use serde_json::{json, Map, Value};

/// When the resource should next be checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// After this many milliseconds (the reconcile interval).
    After(u64),
    /// After the retry backoff of the next attempt.
    Backoff,
    /// Immediately: an effect is in flight, so a crash must lead to a recheck.
    Now,
    /// Only when desired state changes.
    OnEdit,
}

/// One status write, computed against a snapshot.
#[derive(Clone, Debug)]
pub(crate) struct Transition {
    pub(crate) phase: Phase,
    pub(crate) reason: Reason,
    /// Record the snapshot's generation and request token as handled.
    pub(crate) acknowledge: bool,
    /// Record this profile and state-identity hash (else keep stored ones).
    pub(crate) identity: Option<(String, String)>,
    /// Record this digest of the immutable fields (else keep the stored one).
    pub(crate) immutable_digest: Option<String>,
    pub(crate) next: Next,
    /// Record these outputs (else keep the stored ones).
    pub(crate) outputs: Option<Value>,
    /// Record this durable-steps run (else keep the stored one).
    pub(crate) workflow: Option<Value>,
    /// The Reconciling condition's message instead of the reason's: the
    /// step in progress (generic words and the step's name only).
    pub(crate) progress: Option<String>,
}

impl Transition {
    pub(crate) fn new(phase: Phase, reason: Reason, next: Next) -> Self {
        Self {
            phase,
            reason,
            acknowledge: true,
            identity: None,
            immutable_digest: None,
            next,
            outputs: None,
            workflow: None,
            progress: None,
        }
    }
}

/// Retry timing the status needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Retry {
    pub(crate) base_ms: u64,
    pub(crate) max_ms: u64,
}

/// Renders the new status for `snapshot`; `request_annotation` carries the
/// token it acknowledges.
pub(crate) fn render_named(
    snapshot: &Value,
    t: &Transition,
    now_ms: u64,
    retry: Retry,
    request_annotation: &str,
) -> Value {
    let previous = status(snapshot).cloned().unwrap_or_else(|| json!({}));
    let prev = |k: &str| previous.get(k).cloned().unwrap_or(Value::Null);
    let prev_retries = if desired_state_changed(snapshot, request_annotation) {
        0
    } else {
        let stored = previous.get("retryCount").and_then(Value::as_u64);
        u32::try_from(stored.unwrap_or(0)).unwrap_or(u32::MAX)
    };
    let (retry_count, next_ms) = match t.next {
        Next::After(ms) => (0, Some(now_ms.saturating_add(ms))),
        Next::Backoff => {
            let attempt = prev_retries.saturating_add(1);
            let delay = backoff_ms(attempt, retry.base_ms, retry.max_ms);
            (attempt, Some(now_ms.saturating_add(delay)))
        }
        Next::Now => (prev_retries, Some(now_ms)),
        Next::OnEdit => (0, None),
    };
    let generation = resource::generation(snapshot);
    let (observed, handled) = if t.acknowledge {
        (
            json!(generation),
            json!(resource::request_token(snapshot, request_annotation)),
        )
    } else {
        (prev("observedGeneration"), prev("lastHandledRequest"))
    };
    let (profile, state_identity) = match &t.identity {
        Some((p, h)) => (json!(p), json!(h)),
        None => (prev("profile"), prev("stateIdentity")),
    };
    let mut s = Map::new();
    s.insert("phase".into(), json!(t.phase.as_str()));
    s.insert(
        "conditions".into(),
        conditions(&previous, t, generation, now_ms),
    );
    let optional = [
        ("observedGeneration", observed),
        ("profile", profile),
        ("stateIdentity", state_identity),
        (
            "immutableDigest",
            t.immutable_digest
                .as_ref()
                .map_or_else(|| prev("immutableDigest"), |d| json!(d)),
        ),
        ("lastHandledRequest", handled),
        ("nextReconcileTime", json!(next_ms.map(format_ms))),
        (
            "outputs",
            t.outputs.clone().unwrap_or_else(|| prev("outputs")),
        ),
        (
            "workflow",
            t.workflow.clone().unwrap_or_else(|| prev("workflow")),
        ),
    ];
    for (k, v) in optional {
        // An absent token reads as "", so "" need not be written; some API
        // servers (the local 1.20 build among them) reject empty strings.
        if !v.is_null() && v != "" {
            s.insert(k.into(), v);
        }
    }
    s.insert("lastReconcileTime".into(), json!(format_ms(now_ms)));
    s.insert("retryCount".into(), json!(retry_count));
    s.insert(
        "deletionObserved".into(),
        json!(resource::is_deleting(snapshot)),
    );
    Value::Object(s)
}

/// The fields that only schedule the next check: a status differing from
/// the stored one in these alone says nothing new.
const SCHEDULE: [&str; 2] = ["lastReconcileTime", "nextReconcileTime"];

/// The next check a rendered status records.
pub(crate) fn next_check(status: &Value) -> Option<u64> {
    status
        .get("nextReconcileTime")
        .and_then(Value::as_str)
        .and_then(crate::domain::due::parse_ms)
}

/// A quiet periodic check (the crate README, "Guarantees"): `status`,
/// rendered for `snapshot` by `t`, would differ from the stored status
/// only in its schedule, and the stored `lastReconcileTime` is no older than
/// `heartbeat_ms` (0: every check writes, as the reference does). Then
/// nothing is written. A Failed attempt always writes (its retry count and
/// backoff are the record of it), and so does a changed desired state (its
/// acknowledgement is new).
pub(crate) fn is_quiet(
    snapshot: &Value,
    t: &Transition,
    status: &Value,
    now_ms: u64,
    heartbeat_ms: u64,
) -> bool {
    let Some(stored) = resource::status(snapshot) else {
        return false;
    };
    let heartbeat_due = stored
        .get("lastReconcileTime")
        .and_then(Value::as_str)
        .and_then(crate::domain::due::parse_ms)
        .is_none_or(|last| now_ms.saturating_sub(last) >= heartbeat_ms);
    // A stored next check later than this one's (a forged record, say)
    // would delay whoever trusts it: rewritten.
    let stored_later = next_check(stored) > next_check(status);
    if heartbeat_due || stored_later || t.phase == Phase::Failed || !t.acknowledge {
        return false;
    }
    let (Some(stored), Some(new)) = (stored.as_object(), status.as_object()) else {
        return false;
    };
    let other = |k: &&String| !SCHEDULE.contains(&k.as_str());
    stored.keys().filter(other).count() == new.keys().filter(other).count()
        && new
            .iter()
            .filter(|(k, _)| other(k))
            .all(|(k, v)| stored.get(k) == Some(v))
}

fn conditions(previous: &Value, t: &Transition, generation: i64, now_ms: u64) -> Value {
    // Waiting for a dependency is progress still to come, not a stall:
    // kstatus readers keep waiting, as they do for a retry.
    let reconciling = matches!(
        t.phase,
        Phase::Reconciling | Phase::Deleting | Phase::Failed | Phase::Waiting
    );
    let stalled = matches!(t.phase, Phase::Invalid | Phase::Blocked | Phase::Rejected);
    let wanted = [
        ("Ready", t.phase == Phase::Ready),
        ("Reconciling", reconciling),
        ("Stalled", stalled),
    ];
    let old = previous.get("conditions").and_then(Value::as_array);
    let list = wanted.iter().map(|(kind, on)| {
        let status = if *on { "True" } else { "False" };
        let reason = t.reason.as_str();
        // Kubernetes semantics: the transition time moves only when the
        // condition's status or reason changes.
        let kept = old
            .into_iter()
            .flatten()
            .find(|c| c["type"] == *kind)
            .filter(|c| c["status"] == status && c["reason"] == reason)
            .and_then(|c| c.get("lastTransitionTime").cloned());
        json!({
            "type": kind,
            "status": status,
            "reason": reason,
            "message": match (*kind, &t.progress) {
                ("Reconciling", Some(progress)) => progress.as_str(),
                _ => message(t.reason),
            },
            "observedGeneration": generation,
            "lastTransitionTime": kept.unwrap_or_else(|| json!(format_ms(now_ms))),
        })
    });
    Value::Array(list.collect())
}

fn message(reason: Reason) -> &'static str {
    match reason {
        Reason::Converged => "infrastructure matches and is ready",
        Reason::Reconciling => "converging infrastructure",
        Reason::Deleting => "destroying infrastructure",
        Reason::NotReady => "infrastructure is not ready yet",
        Reason::ExecutionFailed => "infrastructure work failed; retrying",
        Reason::ValidationFailed => "validation could not run; retrying",
        Reason::InvalidConfiguration => "configuration is invalid; edit the resource",
        Reason::ImmutableStateIdentity => "profile or state identity changed; revert it",
        // Generic on purpose: the key is configurable (`Names`).
        Reason::DestructionProtected => {
            "the destroy-protection key in spec.config blocks destruction"
        }
        Reason::Suspended => "reconciliation is suspended",
        Reason::InvalidOutputs => "the package reported outputs it may not record; retrying",
        Reason::InvalidStep => "a durable step broke the step rules; retrying",
        Reason::DependencyNotReady => "waiting for a referenced resource to be Ready",
        Reason::CyclicReference => "its references lead back to it; edit one of them",
        Reason::ImmutableField => "an immutable config field changed; revert the edit",
        Reason::InputRejected => {
            "the infrastructure refused the configuration; see the resource's events and edit it"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(snapshot: &Value, t: &Transition, now_ms: u64, retry: Retry) -> Value {
        render_named(
            snapshot,
            t,
            now_ms,
            retry,
            crate::config::REQUEST_ANNOTATION,
        )
    }

    const RETRY: Retry = Retry {
        base_ms: 1000,
        max_ms: 60_000,
    };

    #[test]
    fn empty_request_token_is_not_written_but_still_acknowledged() {
        let snapshot = json!({"metadata": {"generation": 2}});
        let t = Transition::new(Phase::Ready, Reason::Converged, Next::After(1000));
        let status = render(&snapshot, &t, 0, RETRY);
        assert!(status.get("lastHandledRequest").is_none());
        let acknowledged = json!({"metadata": {"generation": 2}, "status": status});
        assert!(!desired_state_changed(
            &acknowledged,
            crate::config::REQUEST_ANNOTATION
        ));
    }

    proptest::proptest! {
        /// Whatever the clock, the interval, the stored retry count and the
        /// retry settings, rendering is total and its times parse back.
        #[test]
        fn status_renders_for_any_interval_retry_count_and_clock(
            interval in proptest::prelude::any::<u64>(),
            retries in proptest::prelude::any::<u64>(),
            now in proptest::prelude::any::<u64>(),
            base in 1..=u64::MAX,
            extra in proptest::prelude::any::<u64>(),
            generation in proptest::prelude::any::<i64>(),
        ) {
            let retry = Retry { base_ms: base, max_ms: base.saturating_add(extra) };
            let snapshot = json!({
                "metadata": {"generation": generation},
                "status": {"retryCount": retries, "observedGeneration": generation,
                           "conditions": [{"type": "Ready", "status": "True", "reason": "Converged",
                                           "lastTransitionTime": crate::domain::due::format_ms(now)}]},
            });
            for next in [Next::After(interval), Next::Backoff, Next::Now, Next::OnEdit] {
                let t = Transition::new(Phase::Failed, Reason::ExecutionFailed, next);
                let status = render(&snapshot, &t, now, retry);
                for key in ["lastReconcileTime", "nextReconcileTime"] {
                    if let Some(text) = status[key].as_str() {
                        proptest::prop_assert!(crate::domain::due::parse_ms(text).is_some(), "{}", text);
                    }
                }
            }
        }
    }

    /// A resource Ready since `at_ms`, due again at `at_ms + 60 s`.
    fn ready_since(at_ms: u64) -> Value {
        let mut snapshot = json!({"metadata": {"generation": 1}});
        let t = Transition::new(Phase::Ready, Reason::Converged, Next::After(60_000));
        snapshot["status"] = render(&snapshot, &t, at_ms, RETRY);
        snapshot
    }

    fn check(snapshot: &Value, now_ms: u64, heartbeat_ms: u64) -> bool {
        let t = Transition::new(Phase::Ready, Reason::Converged, Next::After(60_000));
        let status = render(snapshot, &t, now_ms, RETRY);
        is_quiet(snapshot, &t, &status, now_ms, heartbeat_ms)
    }

    #[test]
    fn a_check_changing_only_the_schedule_is_quiet_until_the_heartbeat() {
        let snapshot = ready_since(0);
        assert!(check(&snapshot, 60_000, 600_000));
        assert!(check(&snapshot, 599_999, 600_000));
        assert!(!check(&snapshot, 600_000, 600_000), "the heartbeat");
        assert!(!check(&snapshot, 60_000, 0), "0: every check writes");
    }

    #[test]
    fn a_check_that_changes_anything_else_or_fails_writes() {
        let mut edited = ready_since(0);
        edited["metadata"]["generation"] = json!(2);
        assert!(!check(&edited, 60_000, 600_000), "new desired state");
        let snapshot = ready_since(0);
        let failed = Transition::new(Phase::Failed, Reason::NotReady, Next::Backoff);
        let status = render(&snapshot, &failed, 60_000, RETRY);
        assert!(!is_quiet(&snapshot, &failed, &status, 60_000, 600_000));
        let mut forged = ready_since(0);
        forged["status"]["nextReconcileTime"] = json!("2999-01-01T00:00:00Z");
        assert!(!check(&forged, 60_000, 600_000), "a later stored time");
        let never = json!({"metadata": {"generation": 1}});
        assert!(!check(&never, 60_000, 600_000), "no status yet");
    }

    #[test]
    fn publish_keeps_acknowledged_state_and_is_due_at_once() {
        let snapshot = json!({
            "metadata": {"generation": 3, "annotations": {crate::config::REQUEST_ANNOTATION: "t2"}},
            "status": {"observedGeneration": 2, "lastHandledRequest": "t1", "retryCount": 4},
        });
        let mut t = Transition::new(Phase::Reconciling, Reason::Reconciling, Next::Now);
        t.acknowledge = false;
        let status = render(&snapshot, &t, 5_000, RETRY);
        assert_eq!(status["observedGeneration"], 2);
        assert_eq!(status["lastHandledRequest"], "t1");
        assert_eq!(
            status["retryCount"], 0,
            "desired state changed: count reset"
        );
        assert_eq!(status["nextReconcileTime"], format_ms(5_000));
    }
}
