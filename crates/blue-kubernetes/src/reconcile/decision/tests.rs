//! The rules of a pass as a table: a snapshot, what each effect came to,
//! and what the decision said, one line per step. No cluster, no runtime,
//! no clock.

use super::*;
use crate::domain::names::Names;
use crate::package::callback::{Failure, FailureKind};
use crate::package::validation::UserFacingMessage;
use crate::reconcile::protocol::Halt;
use crate::reconcile::references::Resolution;
use serde_json::json;

fn names() -> &'static Names {
    Box::leak(Box::new(Names::default()))
}

/// A Ready resource of generation 1 with our finalizer, its profile and
/// identity recorded: what a periodic check sees.
fn ready() -> Value {
    json!({
        "metadata": {"name": "a", "namespace": "ns", "uid": "u", "generation": 1,
                     "resourceVersion": "7", "finalizers": [names().finalizer]},
        "spec": {"config": {"kind": "A"}},
        "status": {"phase": "Ready", "observedGeneration": 1, "lastHandledRequest": "",
                   "profile": "ns--a", "stateIdentity": "h"},
    })
}

/// A resource just created: no status, no finalizer.
fn created() -> Value {
    let mut r = ready();
    r["metadata"]["finalizers"] = json!([]);
    r.as_object_mut().unwrap().remove("status");
    r
}

/// Being deleted, its infrastructure to be destroyed.
fn deleting(mut r: Value) -> Value {
    r["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    r["spec"]["deletionPolicy"] = json!("Destroy");
    r
}

fn with(mut r: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    r.pointer_mut(parent).unwrap()[key] = value;
    r
}

/// The facts of a pass over `snapshot` of a package with a plain
/// declaration, its identity `ns--a` / `h`.
fn facts(snapshot: &Value) -> Facts<'static> {
    Facts {
        plan: Plan::decide(snapshot, names(), false, None, None),
        identity: Some(("ns--a".into(), "h".into())),
        immutable: &[],
        names: names(),
        stepped: false,
        connection: false,
        expects_effect: false,
    }
}

fn ok() -> Happened {
    Happened::Done(Ok(()))
}

fn wrote() -> Happened {
    Happened::Wrote(Ok(Report::Reconciled(
        Phase::Reconciling,
        Reason::Reconciling,
    )))
}

fn valid() -> Happened {
    Happened::Validated(Some(ValidationErrors::default()))
}

fn seen(o: Observation) -> Happened {
    Happened::Observed(Ok(Some(o)))
}

fn acted() -> Happened {
    Happened::Acted(Ok(Effect::Succeeded))
}

fn conflict() -> Halt {
    Halt::Lost(Report::Conflict)
}

/// Runs the rules over `snapshot`, answering each step with the next of
/// `answers` (a status write lands as written, the finalizer changes as
/// asked), and shows each step.
fn walk(facts: Facts<'static>, snapshot: Value, answers: Vec<Happened>) -> Vec<String> {
    walk_with(Decision::new(facts, None), snapshot, answers).0
}

fn walk_with<'a>(
    mut decision: Decision<'a>,
    mut snapshot: Value,
    answers: Vec<Happened>,
) -> (Vec<String>, Decision<'a>) {
    let (mut shown, mut answers) = (Vec::new(), answers.into_iter());
    let mut happened = Happened::Began;
    loop {
        let next = decision.step(&snapshot, happened);
        shown.push(show(&next));
        let wrote = match next {
            Do::Stop(_) => return (shown, decision),
            Do::SetFinalizer(present) => {
                let ours = json!(names().finalizer);
                let list = snapshot["metadata"]["finalizers"].as_array_mut().unwrap();
                list.retain(|f| *f != ours);
                list.extend(present.then_some(ours));
                None
            }
            Do::Release { .. } => {
                let ours = json!(names().finalizer);
                let list = snapshot["metadata"]["finalizers"].as_array_mut().unwrap();
                list.retain(|f| *f != ours);
                None
            }
            Do::Write(t, _) | Do::Publish(t) => Some(Report::Reconciled(t.phase, t.reason)),
            _ => None,
        };
        happened = match (answers.next(), wrote) {
            (Some(Happened::Wrote(Ok(_))), Some(report)) => Happened::Wrote(Ok(report)),
            (Some(answer), _) => answer,
            (None, _) => panic!("no answer after {shown:?}"),
        };
    }
}

fn show(next: &Do) -> String {
    let t = |t: &Transition| format!("{}/{} {:?}", t.phase.as_str(), t.reason.as_str(), t.next);
    match next {
        Do::Validate => "validate".into(),
        Do::RestoreConnection => "restore connection".into(),
        Do::SetFinalizer(true) => "add finalizer".into(),
        Do::SetFinalizer(false) => "remove finalizer".into(),
        Do::Observe(None) => "observe".into(),
        Do::Observe(Some(p)) => format!("observe, publishing {}", t(p)),
        Do::Publish(p) => format!("publish {}", t(p)),
        Do::Act(true) => "converge".into(),
        Do::Act(false) => "delete".into(),
        Do::FinishOpenRun => "finish open run".into(),
        Do::Release {
            finalizer,
            destroyed,
        } => format!("release, finalizer: {finalizer}, destroyed: {destroyed}"),
        Do::Write(w, _) => format!("write {}", t(w)),
        Do::Stop(Ok(report)) => format!("stop {report:?}"),
        Do::Stop(Err(Halt::Lost(report))) => format!("stop, lost: {report:?}"),
        Do::Stop(Err(Halt::Transport(_))) => "stop, transport".into(),
    }
}

#[test]
fn rule_1_releases_a_retained_an_imported_or_an_unfinalized_deleting_resource() {
    let retained = with(deleting(ready()), "/spec/deletionPolicy", json!("Retain"));
    let imported = with(
        deleting(ready()),
        "/spec/managementPolicy",
        json!("Observe"),
    );
    for r in [retained, imported] {
        let steps = walk(facts(&r), r, vec![ok()]);
        let expected = [
            "release, finalizer: true, destroyed: false",
            "stop Released",
        ];
        assert_eq!(steps, expected);
    }
    let unfinalized = with(deleting(ready()), "/metadata/finalizers", json!(["other"]));
    let steps = walk(facts(&unfinalized), unfinalized, vec![ok(), wrote()]);
    let expected = [
        "release, finalizer: false, destroyed: false",
        "write Deleting/Deleting After(60000)",
        "stop Released",
    ];
    assert_eq!(
        steps, expected,
        "another finalizer holds it: deletion is recorded"
    );
}

#[test]
fn rule_2_a_changed_identity_is_invalid_before_any_callback() {
    let r = with(ready(), "/status/stateIdentity", json!("other"));
    let steps = walk(facts(&r), r, vec![wrote()]);
    let expected = [
        "write Invalid/ImmutableStateIdentity OnEdit",
        "stop Reconciled(Invalid, ImmutableStateIdentity)",
    ];
    assert_eq!(steps, expected);
}

#[test]
fn rule_2b_a_changed_immutable_field_is_invalid_and_named_for_users() {
    let declared = vec!["kind".to_string()];
    let digest = immutable::digest(&declared, &json!({"kind": "A"})).unwrap();
    let r = with(ready(), "/status/immutableDigest", json!(digest));
    let edited = with(r.clone(), "/spec/config/kind", json!("B"));
    let declared: &'static [String] = Box::leak(declared.into_boxed_slice());
    let facts = |r: &Value| Facts {
        immutable: declared,
        ..facts(r)
    };
    let decision = Decision::new(facts(&edited), None);
    let (steps, decision) = walk_with(decision, edited, vec![wrote()]);
    assert_eq!(steps[0], "write Invalid/ImmutableField OnEdit");
    assert!(decision
        .user_facing()
        .unwrap()
        .starts_with("config.kind: immutable"));
    let unchanged = walk(
        facts(&r),
        r,
        vec![valid(), seen(Observation::READY), wrote()],
    );
    assert_eq!(unchanged[0], "validate", "the accepted value passes");
}

#[test]
fn rule_3_a_malformed_field_an_undecodable_config_and_references_stop_the_pass() {
    let malformed = with(ready(), "/spec/reconcileInterval", json!("soon"));
    let steps = walk(facts(&malformed), malformed, vec![wrote()]);
    assert_eq!(steps[0], "write Invalid/InvalidConfiguration OnEdit");
    let r = ready();
    let undecodable = Facts {
        plan: Plan::decide(
            &r,
            names(),
            false,
            None,
            Some("missing field `size`".into()),
        ),
        ..facts(&r)
    };
    let steps = walk(undecodable, r.clone(), vec![wrote()]);
    assert_eq!(steps[0], "write Invalid/InvalidConfiguration OnEdit");
    let awaited = crate::reconcile::awaited::Awaited {
        field: "serverRef".into(),
        kind: "Server".into(),
        name: "s".into(),
        missing: true,
    };
    let waiting = Resolution::Waiting(Default::default(), awaited);
    let cases = [
        (Resolution::Cycle, "write Invalid/CyclicReference OnEdit"),
        (waiting, "write Waiting/DependencyNotReady After(60000)"),
    ];
    for (resolution, expected) in cases {
        let plan = Plan::decide(&r, names(), false, Some(&resolution), None);
        let steps = walk(Facts { plan, ..facts(&r) }, r.clone(), vec![wrote()]);
        assert_eq!(steps[0], expected);
        let gone = deleting(r.clone());
        let plan = Plan::decide(&gone, names(), false, Some(&resolution), None);
        assert!(matches!(plan, Plan::Run(Ok(_))), "deleting never waits");
    }
}

#[test]
fn rules_4_and_5_validation_that_fails_or_finds_errors() {
    let r = ready();
    let steps = walk(
        facts(&r),
        r.clone(),
        vec![Happened::Validated(None), wrote()],
    );
    assert_eq!(steps[1], "write Failed/ValidationFailed Backoff");
    let errors: ValidationErrors = [UserFacingMessage::new("size: too big")]
        .into_iter()
        .collect();
    let found = Happened::Validated(Some(errors));
    let (steps, decision) = walk_with(Decision::new(facts(&r), None), r, vec![found, wrote()]);
    assert_eq!(steps[1], "write Invalid/InvalidConfiguration OnEdit");
    assert_eq!(decision.user_facing(), Some("size: too big"));
}

#[test]
fn without_an_identity_nothing_acts_and_a_rejected_identity_is_the_users_to_fix() {
    let r = ready();
    let unidentified = || Facts {
        identity: None,
        ..facts(&r)
    };
    let steps = walk(unidentified(), r.clone(), vec![valid(), wrote()]);
    assert_eq!(steps[1], "write Failed/ExecutionFailed Backoff");
    let rejected = Failure {
        kind: FailureKind::Rejected,
        text: None,
        for_users: Some("no such zone".into()),
    };
    let decision = Decision::new(unidentified(), Some(("identity", rejected)));
    let (steps, decision) = walk_with(decision, r, vec![valid(), wrote()]);
    assert_eq!(steps[1], "write Rejected/InputRejected After(60000)");
    assert_eq!(decision.user_facing(), Some("no such zone"));
}

#[test]
fn rule_6_protection_blocks_destruction_even_while_suspended() {
    let protected = with(
        deleting(ready()),
        &format!("/spec/config/{}", names().destroy_protection_key),
        json!(true),
    );
    let suspended = with(protected.clone(), "/spec/suspend", json!(true));
    for r in [protected, suspended] {
        let steps = walk(facts(&r), r, vec![valid(), wrote()]);
        assert_eq!(steps[1], "write Blocked/DestructionProtected After(60000)");
    }
}

#[test]
fn rule_7_suspension_holds_everything_but_deletion() {
    let r = with(ready(), "/spec/suspend", json!(true));
    let steps = walk(facts(&r), r, vec![valid(), wrote()]);
    assert_eq!(steps[1], "write Suspended/Suspended OnEdit");
    let r = deleting(with(ready(), "/spec/suspend", json!(true)));
    let steps = walk(facts(&r), r, vec![valid(), seen(Observation::ABSENT), ok()]);
    assert_eq!(
        steps[2], "release, finalizer: true, destroyed: true",
        "a suspended resource is still destroyed"
    );
}

#[test]
fn rule_8_a_new_resource_gets_our_finalizer_publishes_while_observing_and_converges() {
    let r = created();
    let answers = vec![
        valid(),
        ok(),
        seen(Observation::ABSENT),
        acted(),
        seen(Observation::READY),
        wrote(),
    ];
    let steps = walk(facts(&r), r, answers);
    let expected = [
        "validate",
        "add finalizer",
        "observe, publishing Reconciling/Reconciling Now",
        "converge",
        "observe",
        "write Ready/Converged After(60000)",
        "stop Reconciled(Ready, Converged)",
    ];
    assert_eq!(steps, expected);
}

#[test]
fn rule_8_a_periodic_check_publishes_only_before_an_effect() {
    let r = ready();
    let matching = vec![valid(), seen(Observation::READY), wrote()];
    let steps = walk(facts(&r), r.clone(), matching);
    assert_eq!(
        steps,
        [
            "validate",
            "observe",
            "write Ready/Converged After(60000)",
            "stop Reconciled(Ready, Converged)"
        ]
    );
    let drifted = vec![
        valid(),
        seen(Observation::ABSENT),
        wrote(),
        acted(),
        seen(Observation::READY),
        wrote(),
    ];
    let steps = walk(facts(&r), r.clone(), drifted);
    assert_eq!(
        steps[1..4],
        ["observe", "publish Reconciling/Reconciling Now", "converge"]
    );
    let repair = Facts {
        expects_effect: true,
        ..facts(&r)
    };
    let steps = walk(repair, r, vec![valid(), seen(Observation::READY), wrote()]);
    assert_eq!(steps[1], "observe, publishing Reconciling/Reconciling Now");
}

#[test]
fn rule_8_failed_observes_unready_and_failed_effects_fail_the_pass() {
    let r = ready();
    let failed_observe = Happened::Observed(Ok(None));
    let unready = Observation::new(true, true, false);
    let cases: Vec<(Vec<Happened>, &str)> = vec![
        (
            vec![valid(), failed_observe],
            "write Failed/ExecutionFailed Backoff",
        ),
        // Matching but unready: observed again next pass, never converged.
        (
            vec![valid(), seen(unready.clone())],
            "write Failed/NotReady Backoff",
        ),
        (
            vec![
                valid(),
                seen(Observation::ABSENT),
                wrote(),
                acted(),
                seen(unready),
            ],
            "write Failed/NotReady Backoff",
        ),
        (
            vec![
                valid(),
                seen(Observation::ABSENT),
                wrote(),
                acted(),
                Happened::Observed(Ok(None)),
            ],
            "write Failed/ExecutionFailed Backoff",
        ),
        (
            vec![
                valid(),
                seen(Observation::ABSENT),
                wrote(),
                Happened::Acted(Ok(Effect::Failed(Reason::ExecutionFailed))),
            ],
            "write Failed/ExecutionFailed Backoff",
        ),
        (
            vec![
                valid(),
                seen(Observation::ABSENT),
                wrote(),
                Happened::Acted(Ok(Effect::Failed(Reason::InvalidStep))),
            ],
            "write Failed/InvalidStep Backoff",
        ),
    ];
    for (mut answers, expected) in cases {
        answers.push(wrote());
        let steps = walk(facts(&r), r.clone(), answers);
        assert_eq!(steps[steps.len() - 2], expected, "{steps:?}");
        assert!(!steps.contains(&"write Ready/Converged After(60000)".to_string()));
    }
}

#[test]
fn rule_8_destroy_removes_our_finalizer_only_once_absence_is_observed() {
    let r = deleting(ready());
    let destroyed = vec![
        valid(),
        seen(Observation::READY),
        acted(),
        seen(Observation::ABSENT),
        ok(),
    ];
    let steps = walk(facts(&r), r.clone(), destroyed);
    let expected = [
        "validate",
        "observe, publishing Deleting/Deleting Now",
        "delete",
        "observe",
        "release, finalizer: true, destroyed: true",
        "stop Released",
    ];
    assert_eq!(steps, expected);
    let lingering = vec![
        valid(),
        seen(Observation::READY),
        acted(),
        seen(Observation::READY),
        wrote(),
    ];
    let steps = walk(facts(&r), r.clone(), lingering);
    assert_eq!(steps[4], "write Failed/ExecutionFailed Backoff");
    let absent = vec![valid(), seen(Observation::ABSENT), ok()];
    let steps = walk(facts(&r), r, absent);
    let released = "release, finalizer: true, destroyed: true";
    assert_eq!(steps[2], released, "nothing to delete");
}

#[test]
fn rule_8_import_observes_only_and_is_ready_or_fails() {
    let r = with(created(), "/spec/managementPolicy", json!("Observe"));
    let answers = vec![
        valid(),
        ok(),
        seen(Observation::new(true, false, true)),
        wrote(),
    ];
    let steps = walk(facts(&r), r.clone(), answers);
    let expected = [
        "validate",
        "add finalizer",
        "observe",
        "write Ready/Converged After(60000)",
        "stop Reconciled(Ready, Converged)",
    ];
    assert_eq!(
        steps, expected,
        "an import need not match, and publishes nothing"
    );
    let steps = walk(
        facts(&r),
        r,
        vec![valid(), ok(), seen(Observation::exists(true)), wrote()],
    );
    assert_eq!(steps[3], "write Failed/NotReady Backoff");
}

#[test]
fn a_rejected_effect_is_the_users_to_fix_never_retried_with_backoff() {
    let r = ready();
    let mut decision = Decision::new(facts(&r), None);
    let failure = Failure {
        kind: FailureKind::Rejected,
        text: None,
        for_users: Some("quota exceeded".into()),
    };
    decision.failed("converge", failure);
    let failed = Happened::Acted(Ok(Effect::Failed(Reason::ExecutionFailed)));
    let answers = vec![valid(), seen(Observation::ABSENT), wrote(), failed, wrote()];
    let (steps, _) = walk_with(decision, r, answers);
    assert_eq!(steps[4], "write Rejected/InputRejected After(60000)");
}

#[test]
fn the_connection_secret_is_put_back_before_rule_8() {
    let r = ready();
    let declared = || Facts {
        connection: true,
        ..facts(&r)
    };
    let restored = vec![
        valid(),
        Happened::Restored(Ok(true)),
        seen(Observation::READY),
        wrote(),
    ];
    assert_eq!(
        walk(declared(), r.clone(), restored)[1..3],
        ["restore connection", "observe"]
    );
    let lost = vec![valid(), Happened::Restored(Ok(false)), wrote()];
    assert_eq!(
        walk(declared(), r.clone(), lost)[2],
        "write Failed/ExecutionFailed Backoff"
    );
    let unavailable = blue_kubernetes_client::Error::kubectl(
        "connection",
        blue_kubernetes_client::ErrorKind::Unavailable,
    );
    let down = vec![
        valid(),
        Happened::Restored(Err(Halt::Transport(unavailable))),
    ];
    assert_eq!(walk(declared(), r, down)[2], "stop, transport");
}

#[test]
fn with_durable_steps_the_first_step_publishes_and_an_open_run_ends_at_ready() {
    let r = created();
    let stepped = || Facts {
        stepped: true,
        ..facts(&r)
    };
    let answers = vec![
        valid(),
        ok(),
        seen(Observation::ABSENT),
        acted(),
        seen(Observation::READY),
        ok(),
        wrote(),
    ];
    let steps = walk(stepped(), r.clone(), answers);
    let expected = [
        "validate",
        "add finalizer",
        "observe",
        "converge",
        "observe",
        "finish open run",
        "write Ready/Converged After(60000)",
        "stop Reconciled(Ready, Converged)",
    ];
    assert_eq!(steps, expected);
    // Interrupted at a step boundary (the runtime stops): the boundary's
    // write was the last.
    let boundary = Halt::Lost(Report::Reconciled(Phase::Reconciling, Reason::Reconciling));
    let answers = vec![
        valid(),
        ok(),
        seen(Observation::ABSENT),
        Happened::Acted(Err(boundary)),
    ];
    let steps = walk(stepped(), r, answers);
    assert_eq!(
        steps.last().unwrap(),
        "stop, lost: Reconciled(Reconciling, Reconciling)"
    );
}

#[test]
fn a_conflict_on_any_write_ends_the_pass_with_nothing_after_it() {
    let new = (
        created(),
        vec![
            valid(),
            ok(),
            seen(Observation::ABSENT),
            acted(),
            seen(Observation::READY),
            wrote(),
        ],
    );
    let drift = (
        ready(),
        vec![
            valid(),
            seen(Observation::ABSENT),
            wrote(),
            acted(),
            seen(Observation::READY),
            wrote(),
        ],
    );
    let destroy = (
        deleting(ready()),
        vec![
            valid(),
            seen(Observation::READY),
            acted(),
            seen(Observation::ABSENT),
            ok(),
        ],
    );
    let linger = with(
        deleting(ready()),
        "/metadata/finalizers",
        json!([names().finalizer, "other"]),
    );
    let released = (
        linger,
        vec![valid(), seen(Observation::ABSENT), ok(), wrote()],
    );
    let mut lost = 0;
    for (r, answers) in [new, drift, destroy, released] {
        let writes: Vec<usize> = walk(facts(&r), r.clone(), clone_all(&answers))
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.starts_with("write")
                    || s.starts_with("publish")
                    || s.contains("finalizer")
                    || s.contains("publishing")
            })
            .map(|(i, _)| i)
            .collect();
        for at in writes {
            let mut answers = clone_all(&answers);
            answers[at] = match &answers[at] {
                Happened::Done(_) => Happened::Done(Err(conflict())),
                Happened::Observed(_) => Happened::Observed(Err(conflict())),
                _ => Happened::Wrote(Err(conflict())),
            };
            let steps = walk(facts(&r), r.clone(), answers);
            assert_eq!(steps.len(), at + 2, "{steps:?}");
            assert_eq!(steps[at + 1], "stop, lost: Conflict");
            lost += 1;
        }
    }
    assert_eq!(lost, 10, "every write of the four passes was lost once");
}

/// `Happened` holds no handle: a script can be replayed.
fn clone_all(answers: &[Happened]) -> Vec<Happened> {
    answers
        .iter()
        .map(|a| match a {
            Happened::Began => Happened::Began,
            Happened::Done(Ok(())) => ok(),
            Happened::Wrote(Ok(r)) => Happened::Wrote(Ok(*r)),
            Happened::Validated(Some(e)) if e.is_empty() => valid(),
            Happened::Observed(Ok(o)) => Happened::Observed(Ok(o.clone())),
            Happened::Acted(Ok(e)) => Happened::Acted(Ok(*e)),
            _ => unreachable!("scripts replay successes only"),
        })
        .collect()
}
