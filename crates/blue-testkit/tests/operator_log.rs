//! The operator's log: phase transitions at INFO, callback failures at WARN
//! with the author's text (unless turned off), validation messages at INFO,
//! nothing per idle pass. Each test drives a current-thread runtime inside
//! the shared capture, so every event of the pass lands on this thread.

mod common;

use blue_kubernetes::package::NoOutputs;
use blue_kubernetes::{
    async_trait, CallbackResult, Context, Infrastructure, Observation, Outcome, Report,
    ResourceSchema,
};
use blue_testkit::{Callback, Misbehaviour, PLANTED_SECRET};
use common::log::{capture, Line};
use common::*;
use serde_json::json;
use std::future::Future;
use tracing::Level;

/// Runs `f` to completion on a fresh current-thread runtime, capturing logs.
fn logged<T>(f: impl Future<Output = T>) -> (T, Vec<Line>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    capture(|| runtime.block_on(f))
}

fn with_message<'a>(lines: &'a [Line], message: &str) -> Vec<&'a Line> {
    let needle = format!("message={message} ");
    lines.iter().filter(|(_, l)| l.contains(&needle)).collect()
}

fn all_text(lines: &[Line]) -> String {
    lines
        .iter()
        .map(|(level, l)| format!("{level} {l}\n"))
        .collect()
}

#[test]
fn a_failed_converge_is_logged_with_its_text_resource_attempt_and_retry() {
    let w = World::with(|c| c.event_component = Some("test-operator".into()));
    let web = w.create("web", spec(json!(1)));
    w.infra.script(Callback::Converge, Misbehaviour::Error);
    let (_, lines) = logged(w.reconcile("web"));

    let warnings = with_message(&lines, "callback failed");
    assert_eq!(warnings.len(), 1, "{}", all_text(&lines));
    let (level, line) = warnings[0];
    assert_eq!(*level, Level::WARN);
    let uid = web["metadata"]["uid"].as_str().unwrap();
    for needle in [
        "callback=\"converge\"",
        "failure=\"error\"",
        "attempt=1",
        "namespace=\"dev\"",
        "name=\"web\"",
        "kind=Widget",
        "group=example.com",
        PLANTED_SECRET,
        uid,
    ] {
        assert!(line.contains(needle), "{needle:?} missing from {line}");
    }
    let next = w.status("web")["nextReconcileTime"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(line.contains(&format!("next_retry=\"{next}\"")), "{line}");

    // The text is for the log only: not in status, not in Events.
    assert!(!w.get("web").to_string().contains(PLANTED_SECRET));
    let events = w.cluster.events();
    assert!(!events.is_empty());
    assert!(!serde_json::to_string(&events)
        .unwrap()
        .contains(PLANTED_SECRET));
}

#[test]
fn with_the_switch_off_the_failure_is_logged_without_its_text() {
    let w = World::with(|c| c.log_callback_errors = false);
    w.create("web", spec(json!(1)));
    w.infra.script(Callback::Converge, Misbehaviour::Panic);
    w.create("bad", json!({"config": {"invalid": true}}));
    let (_, lines) = logged(async {
        w.reconcile("web").await;
        w.reconcile("bad").await;
    });

    let failures = with_message(&lines, "callback failed");
    assert_eq!(failures.len(), 1, "{}", all_text(&lines));
    assert!(
        failures[0].1.contains("failure=\"panic\""),
        "{}",
        failures[0].1
    );
    assert_eq!(with_message(&lines, "configuration invalid").len(), 1);
    assert!(
        !all_text(&lines).contains(PLANTED_SECRET),
        "{}",
        all_text(&lines)
    );
}

#[test]
fn validation_messages_are_logged_at_info_when_a_resource_becomes_invalid() {
    let w = World::new();
    w.create("bad", json!({"config": {"invalid": true}}));
    let (_, lines) = logged(w.reconcile("bad"));
    let invalid = with_message(&lines, "configuration invalid");
    assert_eq!(invalid.len(), 1, "{}", all_text(&lines));
    let (level, line) = invalid[0];
    assert_eq!(*level, Level::INFO);
    assert!(line.contains(PLANTED_SECRET), "{line}");
    assert!(!w.get("bad").to_string().contains(PLANTED_SECRET));
}

#[test]
fn each_phase_transition_is_one_info_line_and_an_idle_check_logs_nothing() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    let (_, lines) = logged(w.reconcile("web"));
    let transitions = with_message(&lines, "phase changed");
    assert_eq!(transitions.len(), 2, "{}", all_text(&lines));
    assert!(transitions.iter().all(|(level, _)| *level == Level::INFO));
    assert!(
        transitions[0]
            .1
            .contains("from=\"None\" to=\"Reconciling\""),
        "{}",
        transitions[0].1
    );
    assert!(transitions[1]
        .1
        .contains("from=\"Reconciling\" to=\"Ready\" reason=\"Converged\""));

    // A periodic check of healthy infrastructure: Ready -> Ready, nothing at
    // INFO or above.
    w.clock.advance(60_000);
    let (_, lines) = logged(w.reconcile("web"));
    assert!(
        !lines.iter().any(|(level, _)| *level <= Level::INFO),
        "{}",
        all_text(&lines)
    );
}

#[test]
fn every_callback_that_fails_is_named_in_its_line() {
    for (step, name) in [
        (Callback::Validate, "validate"),
        (Callback::Identity, "identity"),
        (Callback::Observe, "observe"),
    ] {
        let w = World::new();
        w.create("web", spec(json!(1)));
        // Identity runs twice a pass (listed, then re-read): fail both.
        w.infra.script(step, Misbehaviour::Error);
        w.infra.script(step, Misbehaviour::Error);
        let (_, lines) = logged(w.reconcile("web"));
        let failures = with_message(&lines, "callback failed");
        assert_eq!(failures.len(), 1, "{name}: {}", all_text(&lines));
        assert!(
            failures[0].1.contains(&format!("callback=\"{name}\"")),
            "{}",
            failures[0].1
        );
    }
}

#[test]
fn an_identity_failure_that_no_status_records_is_still_logged() {
    let w = World::new();
    w.create("web", spec(json!(1)));
    // Only the first call fails: the pass sees the identity change and stops.
    w.infra.script(Callback::Identity, Misbehaviour::Error);
    let (report, lines) = logged(w.reconcile("web"));
    assert_eq!(report, Report::Changed);
    let failures = with_message(&lines, "callback failed");
    assert_eq!(failures.len(), 1, "{}", all_text(&lines));
    assert!(
        failures[0].1.contains("next_retry=\"next poll\""),
        "{}",
        failures[0].1
    );
    assert!(failures[0].1.contains(PLANTED_SECRET), "{}", failures[0].1);
}

/// An error that names only what failed and keeps why in `source()`, as
/// tokio-postgres's `db error` does.
#[derive(Debug)]
struct Layered(&'static str, Option<Box<Layered>>);

impl std::fmt::Display for Layered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Layered {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.1.as_deref().map(|e| e as _)
    }
}

fn db_error() -> Layered {
    let inner = Layered("password authentication failed for user \"app\"", None);
    let middle = Layered("connecting to db-1:5432", Some(Box::new(inner)));
    Layered("db error", Some(Box::new(middle)))
}

/// A package whose `converge` fails with [`db_error`].
struct Failing;

type Cx = Context<serde_json::Map<String, serde_json::Value>>;

#[async_trait]
impl Infrastructure for Failing {
    type Config = serde_json::Map<String, serde_json::Value>;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(widgets())
    }

    async fn observe(&self, _: &Cx) -> CallbackResult<Observation<NoOutputs>> {
        Ok(Observation::ABSENT)
    }

    async fn converge(&self, _: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        Err(db_error().into())
    }

    async fn delete(&self, _: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }
}

#[test]
fn the_warn_line_carries_the_whole_source_chain_of_a_callback_error() {
    let plain = World::new();
    let package = blue_kubernetes::Package::new(Failing).unwrap();
    for with_text in [true, false] {
        let controller = build(
            &plain.cluster,
            plain.clock.as_fn(),
            vec![package.clone()],
            |c| c.log_callback_errors = with_text,
        );
        let name = if with_text { "db" } else { "quiet-db" };
        plain.create(name, spec(json!(1)));
        let (_, lines) = logged(async {
            blue_kubernetes::reconcile(&controller, &package, NS, name)
                .await
                .unwrap()
        });
        let failures = with_message(&lines, "callback failed");
        assert_eq!(failures.len(), 1, "{}", all_text(&lines));
        let chain = "db error: connecting to db-1:5432: password authentication failed";
        let line = &failures[0].1;
        assert_eq!(line.contains(chain), with_text, "{line}");
        assert_eq!(line.contains("password"), with_text, "{line}");
        assert!(!plain.get(name).to_string().contains("password"));
    }
}
