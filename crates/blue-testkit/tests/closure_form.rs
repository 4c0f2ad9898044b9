//! The closure form's contract (`Package::builder`): its callbacks get the
//! options map (`spec.config` with the `profile`, `blue/event` and
//! `blue.kubernetes/resource` keys) and return a workflow outcome map, in
//! which a non-zero `blue/exit` is a failure; a panic is a failed attempt.
//!
//! The rest of the form's coverage stays with the behaviour it is about:
//! synchronous closures on blocking threads (`sync_callbacks_do_not_block_polling`
//! in runtime.rs, `panicking_sync_callback_is_a_failed_attempt` in
//! failures.rs, `sync_callbacks_run_the_same_lifecycle` in lifecycle.rs, the
//! stepped synchronous package in steps.rs, the blocking converge in
//! fences.rs), outputs checked against a declared type at run time
//! (outputs.rs), `blue/external-name` (external_name.rs), the references'
//! outputs in the options but not in `identity` (references.rs,
//! deleted_together.rs) and `CallbackInput::fencing_token`
//! (fencing_tokens.rs).

mod common;

use blue_kubernetes::package::{CallbackInput, WorkflowOutcome, EVENT_KEY, RESOURCE_KEY};
use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes::{Observation, Package, Report};
use blue_testkit::{Callback, Misbehaviour, PLANTED_SECRET};
use common::*;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};

type Seen = Arc<Mutex<Vec<(&'static str, Map<String, Value>)>>>;

/// A closure package that records the options map of every call, over
/// infrastructure that always matches.
fn recording(seen: &Seen) -> Package {
    let record = |name: &'static str, seen: &Seen| {
        let seen = seen.clone();
        move |o: &CallbackInput| seen.lock().unwrap().push((name, o.as_map().clone()))
    };
    let (observed, converged, deleted) = (
        record("observe", seen),
        record("converge", seen),
        record("delete", seen),
    );
    Package::builder(widgets())
        .identity(|o| Ok(vec![Some(o.profile().into())]))
        .observe(move |o| {
            observed(o);
            Ok(Observation::READY)
        })
        .converge(move |o| {
            converged(o);
            Ok(WorkflowOutcome::new())
        })
        .delete(move |o| {
            deleted(o);
            Ok(WorkflowOutcome::new())
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn closure_callbacks_get_the_config_profile_event_and_snapshot_as_option_keys() {
    let seen = Seen::default();
    let w = World::of(|_| recording(&seen), |_| {});
    let created = w.create("web", json!({"config": {"value": 1, EVENT_KEY: "forged"}}));
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    let (callback, options) = seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(callback, "observe");
    assert_eq!(options["value"], 1);
    assert_eq!(options["profile"], "dev--web", "the default profile");
    assert_eq!(options[EVENT_KEY], "create", "the controller's key wins");
    let snapshot = &options[RESOURCE_KEY];
    assert_eq!(snapshot["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(snapshot["spec"]["config"]["value"], 1);

    w.edit("web", |s| {
        s["state"] = json!("stopped");
        s["config"]["profile"] = json!("dev--web");
    });
    w.reconcile("web").await;
    let events: Vec<Value> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(_, o)| o[EVENT_KEY].clone())
        .collect();
    assert_eq!(events.last().unwrap(), "stop");
}

#[tokio::test]
async fn a_non_zero_blue_exit_is_a_failed_attempt_and_its_outcome_stays_out_of_status() {
    let w = World::of(|infra| infra.closure_package(widgets()), |_| {});
    w.create("web", spec(json!(1)));
    w.infra.script(Callback::Converge, Misbehaviour::Exit(3));
    let report = w.reconcile("web").await;
    assert_eq!(
        report,
        Report::Reconciled(Phase::Failed, Reason::ExecutionFailed)
    );
    let status = w.status("web");
    assert!(!status.to_string().contains(PLANTED_SECRET));
    assert_eq!(status["retryCount"], 1);
    assert_eq!(w.infra.get(&World::profile("web")), None, "no effect");
    assert_eq!(
        w.infra.count(Callback::Observe),
        1,
        "a failure, not a success observed again"
    );

    w.clock.advance(1000);
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(w.infra.get(&World::profile("web")), Some(json!(1)));
}

#[tokio::test]
async fn a_panicking_async_closure_is_a_failed_attempt() {
    let w = World::of(|infra| infra.closure_package(widgets()), |_| {});
    w.create("web", spec(json!(1)));
    w.infra.script(Callback::Converge, Misbehaviour::Panic);
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Failed, Reason::ExecutionFailed)
    );
    assert!(!w.status("web").to_string().contains(PLANTED_SECRET));
    w.clock.advance(1000);
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
}
