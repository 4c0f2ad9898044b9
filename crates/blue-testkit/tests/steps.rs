//! Durable steps through the controller's real rules:
//! what they cost in status writes, what a failure, a conflict, a crash
//! and new desired state do to a run, and what status shows.

#[path = "steps/chain.rs"]
mod chain;
mod common;
#[path = "steps/forged.rs"]
mod forged;
#[path = "steps/names.rs"]
mod names;

use blue_kubernetes::config::LockDomain;
use blue_kubernetes::config::REQUEST_ANNOTATION;
use blue_kubernetes::crd::{self, CrdConfig};
use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes::Package;
use blue_kubernetes::Report;
use blue_kubernetes::{controller, reconcile, Config, Controller};
use blue_kubernetes_client::Client;
use blue_testkit::{Crash, CrashAt, FakeCluster, Fault, Operation};
use chain::{Chain, Ran, Token};
use common::{condition, widgets, NS};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A cluster with the package's CRD installed (so status.workflow must be
/// in its schema to survive), a crash switch in front of the client, and
/// the controller over it.
struct Bed {
    cluster: FakeCluster,
    crash: Crash,
    client: Arc<dyn Client>,
    package: Package,
    controller: Controller,
}

impl Bed {
    fn new(package: Package) -> Self {
        let cluster = FakeCluster::new();
        let definition = crd::generate(&package, &CrdConfig::default()).unwrap();
        cluster.install_crd(&definition, "v1");
        let crash = Crash::new();
        let client = crash.client(Arc::new(cluster.clone()));
        let controller = build(&client, &package);
        Self {
            cluster,
            crash,
            client,
            package,
            controller,
        }
    }

    fn create(&self, spec: Value) {
        self.cluster.create(&widgets(), NS, "w", spec);
    }

    async fn reconcile(&self) -> Report {
        reconcile(&self.controller, &self.package, NS, "w")
            .await
            .unwrap()
    }

    /// A pass the armed crash kills: it must die.
    async fn crash_at(&self, at: CrashAt) {
        self.crash.arm(at.clone());
        let pass = reconcile(&self.controller, &self.package, NS, "w");
        assert!(self.crash.run(pass).await.is_none(), "no crash at {at:?}");
    }

    /// A new process: a controller with nothing in memory.
    fn restart(&mut self) {
        self.controller = build(&self.client, &self.package);
    }

    fn status(&self) -> Value {
        self.cluster.get(&widgets(), NS, "w").unwrap()["status"].clone()
    }

    fn status_writes(&self) -> usize {
        self.cluster.calls().update_status
    }
}

fn build(client: &Arc<dyn Client>, package: &Package) -> Controller {
    let mut config = Config::new(client.clone(), vec![package.clone()]);
    config.namespace = NS.into();
    // Beds of parallel tests share identities: each process its own lock.
    config.lock_domain = LockDomain::new();
    controller(config).unwrap()
}

/// Runs `f` to completion on a fresh current-thread runtime, capturing
/// what the controller logs meanwhile.
fn logged<T>(f: impl std::future::Future<Output = T>) -> (T, Vec<common::log::Line>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    common::log::capture(|| runtime.block_on(f))
}

const READY: Report = Report::Reconciled(Phase::Ready, Reason::Converged);
const FAILED: Report = Report::Reconciled(Phase::Failed, Reason::ExecutionFailed);

#[tokio::test]
async fn a_run_of_n_steps_makes_n_plus_one_status_writes_one_step_none_extra() {
    // The same converge without steps: Reconciling, then Ready.
    let plain = Bed::new(Chain::new().plain_package());
    plain.create(json!({"config": {"value": 1}}));
    assert_eq!(plain.reconcile().await, READY);
    assert_eq!(plain.status_writes(), 2);
    for n in [1, 2, 5] {
        let chain = Chain::new();
        let bed = Bed::new(chain.package(n));
        bed.create(json!({"config": {"value": 1}}));
        assert_eq!(bed.reconcile().await, READY);
        assert_eq!(bed.status_writes(), n + 1, "{n} steps");
        assert_eq!(bed.cluster.calls().update_finalizers, 1);
        assert_eq!(chain.ran().len(), n);
        let workflow = &bed.status()["workflow"];
        assert_eq!(workflow["state"], "Done", "{workflow}");
        let steps = workflow["steps"].as_array().unwrap();
        assert!(steps.iter().all(|s| s["state"] == "Done"), "{workflow}");
        assert_eq!(steps.len(), n);
    }
}

#[tokio::test]
async fn a_failure_at_step_k_reruns_only_steps_k_to_n() {
    let n = 5;
    for k in 1..=n {
        let chain = Chain::new();
        let bed = Bed::new(chain.package(n));
        bed.create(json!({"config": {"value": 1}}));
        chain.fail(&format!("s{k}"), 1);
        assert_eq!(bed.reconcile().await, FAILED, "step {k} failed");
        let status = bed.status();
        let workflow = &status["workflow"];
        assert_eq!(workflow["steps"][k - 1]["state"], "Failed", "{workflow}");
        assert_eq!(workflow["state"], "Failed");
        assert_eq!(
            condition(&status, "Reconciling")["message"],
            format!("infrastructure work failed at step {k} (s{k}); retrying")
        );
        // The retry (after the backoff) resumes at step k.
        assert_eq!(
            reconcile_after_backoff(&bed).await,
            READY,
            "retry after step {k}"
        );
        let ran = chain.names();
        let mut expected: Vec<String> = (1..=k).map(|i| format!("s{i}")).collect();
        expected.extend((k..=n).map(|i| format!("s{i}")));
        assert_eq!(ran, expected, "failure at step {k}");
        // The retry makes one write per step it runs, plus Ready.
        assert_eq!(bed.status_writes(), n - k + 2);
        // The failed step runs again with its key, told it was interrupted.
        let again: Vec<Ran> = chain.ran_of(&format!("s{k}"));
        assert_eq!(again[0].key, again[1].key);
        assert!(!again[0].interrupted && again[1].interrupted);
    }
}

/// Reconciles once the stored retry time has come (the one-shot
/// `reconcile` goes by the stored `nextReconcileTime`), counting calls
/// from zero.
async fn reconcile_after_backoff(bed: &Bed) -> Report {
    let mut status = bed.status();
    status["nextReconcileTime"] = json!("2000-01-01T00:00:00Z");
    let object = bed.cluster.get(&widgets(), NS, "w").unwrap();
    bed.cluster
        .update_status(&widgets(), &object, &status)
        .await
        .unwrap();
    bed.cluster.reset_calls();
    bed.reconcile().await
}

#[tokio::test]
async fn a_crash_after_a_step_ran_reruns_it_interrupted_with_the_same_key_and_nothing_before_it() {
    let chain = Chain::new();
    let mut bed = Bed::new(chain.package(3));
    bed.create(json!({"config": {"value": 7}}));
    // s2 ran; the write that would record it done never lands.
    bed.crash_at(CrashAt::StepEnded("s2".into())).await;
    let workflow = bed.status()["workflow"].clone();
    assert_eq!(workflow["steps"][1]["state"], "Running", "{workflow}");
    assert_eq!(bed.status()["phase"], "Reconciling");
    bed.restart();
    assert_eq!(bed.reconcile().await, READY);
    assert_eq!(chain.names(), ["s1", "s2", "s2", "s3"]);
    let s2 = chain.ran_of("s2");
    assert_eq!(s2[0].key, s2[1].key);
    assert_eq!((s2[0].interrupted, s2[1].interrupted), (false, true));
    assert_eq!(s2[0].run, s2[1].run);
    assert_eq!(bed.status()["workflow"]["steps"][1]["attempts"], 2);
}

#[tokio::test]
async fn a_crash_right_after_a_step_is_recorded_running_reruns_it_interrupted() {
    let chain = Chain::new();
    let mut bed = Bed::new(chain.package(3));
    bed.create(json!({"config": {"value": 7}}));
    bed.crash_at(CrashAt::StepStarted("s2".into())).await;
    assert_eq!(chain.names(), ["s1"], "s2 never started");
    let status = bed.status();
    assert_eq!(
        condition(&status, "Reconciling")["message"],
        "converging infrastructure: step 2 (s2)"
    );
    bed.restart();
    assert_eq!(bed.reconcile().await, READY);
    let s2 = chain.ran_of("s2");
    assert_eq!(s2.len(), 1);
    assert!(
        s2[0].interrupted,
        "it may have run: the record says Running"
    );
    assert_eq!(chain.ran_of("s1").len(), 1, "done steps are never rerun");
}

#[tokio::test]
async fn a_run_that_observe_ends_records_its_cut_short_step_interrupted_not_running() {
    let chain = Chain::new();
    let mut bed = Bed::new(chain.package(3));
    bed.create(json!({"config": {"value": 7}}));
    // The last step ran (the value is applied); its Done never landed.
    bed.crash_at(CrashAt::StepEnded("s3".into())).await;
    bed.restart();
    assert_eq!(bed.reconcile().await, READY);
    assert_eq!(chain.ran_of("s3").len(), 1, "observe found it in place");
    let workflow = bed.status()["workflow"].clone();
    assert_eq!(workflow["state"], "Done", "{workflow}");
    let s3 = &workflow["steps"][2];
    assert_eq!(s3["state"], "Interrupted", "{workflow}");
    assert_eq!(s3["attempts"], 1, "{workflow}");
    assert!(
        s3.get("endTime").is_none(),
        "when it ended is unknown: {s3}"
    );
    assert_eq!(done_steps(&bed.status()), ["s1", "s2"]);
}

#[tokio::test]
async fn every_crash_point_of_a_run_recovers_to_ready_without_rerunning_a_done_step() {
    let n = 3;
    // The run's status writes: the first step with the publish, one per
    // later step, and Ready.
    for write in 1..=n + 1 {
        for lands in [false, true] {
            let chain = Chain::new();
            let mut bed = Bed::new(chain.package(n));
            bed.create(json!({"config": {"value": 1}}));
            let at = match lands {
                true => CrashAt::AfterStatusWrite(write),
                false => CrashAt::BeforeStatusWrite(write),
            };
            bed.crash.arm(at.clone());
            let pass = reconcile(&bed.controller, &bed.package, NS, "w");
            let crashed = bed.crash.run(pass).await.is_none();
            // (The last write landing leaves Ready stored: nothing to redo.)
            assert!(crashed, "{at:?}");
            let done_before: Vec<String> = done_steps(&bed.status());
            let stored_ready = bed.status()["phase"] == "Ready";
            bed.restart();
            let report = bed.reconcile().await;
            let expected = if stored_ready { Report::NotDue } else { READY };
            assert_eq!(report, expected, "{at:?}");
            assert_eq!(chain.applied("dev--w"), Some(json!(1)), "{at:?}");
            for name in &done_before {
                assert_eq!(chain.ran_of(name).len(), 1, "{at:?}: {name} ran again");
            }
            // Every step took effect at least once, in one run.
            let runs: std::collections::BTreeSet<String> =
                chain.ran().iter().map(|r| r.run.clone()).collect();
            assert_eq!(runs.len(), 1, "{at:?}");
            for i in 1..=n {
                assert!(!chain.ran_of(&format!("s{i}")).is_empty(), "{at:?}");
            }
        }
    }
}

fn done_steps(status: &Value) -> Vec<String> {
    status["workflow"]["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["state"] == "Done")
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_conflict_on_a_step_record_stops_the_pass_before_the_next_step() {
    let chain = Chain::new();
    let bed = Bed::new(chain.package(3));
    bed.create(json!({"config": {"value": 1}}));
    // The first write (the publish, with s1 Running) loses a race.
    bed.cluster.inject(Operation::UpdateStatus, Fault::Conflict);
    assert_eq!(bed.reconcile().await, Report::Conflict);
    assert!(chain.ran().is_empty(), "no step after a lost publish");
    // A user labels the object while s1 runs: the write recording s1 Done
    // and s2 Running loses, and s2 never starts.
    let (cluster, labelled) = (bed.cluster.clone(), Arc::new(AtomicBool::new(false)));
    let once = labelled.clone();
    chain.on_step("s1", move || {
        if !once.swap(true, Ordering::SeqCst) {
            cluster.edit(&widgets(), NS, "w", |o| {
                o["metadata"]["labels"] = json!({"team": "db"});
            });
        }
    });
    assert_eq!(bed.reconcile().await, Report::Conflict);
    assert_eq!(chain.names(), ["s1"], "s2 never started");
    // The next pass reruns s1 (its Done was lost with the write).
    assert_eq!(bed.reconcile().await, READY);
    assert_eq!(chain.names(), ["s1", "s1", "s2", "s3"]);
    assert!(chain.ran_of("s1")[1].interrupted);
}

#[tokio::test]
async fn new_desired_state_starts_a_new_run_with_new_keys() {
    let chain = Chain::new();
    let bed = Bed::new(chain.package(2));
    bed.create(json!({"config": {"value": 1}}));
    chain.fail("s2", 1);
    assert_eq!(bed.reconcile().await, FAILED);
    let first_run = bed.status()["workflow"]["run"].clone();
    // The user edits the spec: a new generation is a new run.
    bed.cluster
        .edit_spec(&widgets(), NS, "w", |s| s["config"]["value"] = json!(2));
    assert_eq!(bed.reconcile().await, READY);
    let s1 = chain.ran_of("s1");
    assert_eq!(s1.len(), 2, "s1 runs again in the new run");
    assert_ne!(s1[0].key, s1[1].key);
    assert_ne!(s1[0].run, s1[1].run);
    assert!(!s1[1].interrupted, "a new run starts fresh");
    let workflow = bed.status()["workflow"].clone();
    assert_ne!(workflow["run"], first_run);
    assert_eq!(workflow["generation"], 2);
    assert_eq!(workflow["sequence"], 2);
    // So does a new request token, once the run is done and drifted.
    chain.drift("dev--w");
    bed.cluster
        .set_annotation(&widgets(), NS, "w", REQUEST_ANNOTATION, "again");
    assert_eq!(bed.reconcile().await, READY);
    let s1 = chain.ran_of("s1");
    assert_eq!(s1.len(), 3);
    assert_ne!(s1[1].key, s1[2].key);
    assert_eq!(bed.status()["workflow"]["sequence"], 3);
}

#[tokio::test]
async fn drift_after_a_finished_run_is_repaired_by_a_new_run() {
    let chain = Chain::new();
    let bed = Bed::new(chain.package(2));
    bed.create(json!({"config": {"value": 1}, "reconcileInterval": "1s"}));
    assert_eq!(bed.reconcile().await, READY);
    chain.drift("dev--w");
    let report = reconcile_after_backoff(&bed).await;
    assert_eq!(report, READY);
    assert_eq!(chain.ran().len(), 4, "both steps again, not skipped");
    let keys: std::collections::BTreeSet<String> =
        chain.ran().iter().map(|r| r.key.clone()).collect();
    assert_eq!(keys.len(), 4, "new keys for the new run");
    assert_eq!(chain.applied("dev--w"), Some(json!(1)));
}

#[tokio::test]
async fn deletion_starts_the_delete_run_whatever_converge_recorded() {
    let chain = Chain::new();
    let bed = Bed::new(chain.package(2));
    bed.create(json!({"config": {"value": 1}, "deletionPolicy": "Destroy"}));
    chain.fail("s2", 1);
    assert_eq!(bed.reconcile().await, FAILED);
    let converge_run = bed.status()["workflow"]["run"].clone();
    bed.cluster.delete(&widgets(), NS, "w");
    // Deleting: the chain's delete runs d1, d2.
    chain.set_applied("dev--w", json!(1));
    assert_eq!(bed.reconcile().await, Report::Released);
    assert_eq!(chain.names(), ["s1", "s2", "d1", "d2"]);
    let d1 = chain.ran_of("d1");
    assert_eq!(d1.len(), 1);
    assert_ne!(json!(d1[0].run), converge_run);
    assert!(!d1[0].interrupted);
    assert!(bed.cluster.get(&widgets(), NS, "w").is_none());
}

#[tokio::test]
async fn recorded_results_come_back_typed_when_a_step_is_skipped() {
    let chain = Chain::new();
    let mut bed = Bed::new(chain.package(3));
    bed.create(json!({"config": {"value": 5}}));
    bed.crash_at(CrashAt::StepEnded("s2".into())).await;
    bed.restart();
    assert_eq!(bed.reconcile().await, READY);
    assert_eq!(chain.names(), ["s1", "s2", "s2", "s3"]);
    // Each step saw the token of the one before it, recorded or not.
    for ran in chain.ran().iter().filter(|r| r.name != "s1") {
        let before: u32 = ran.name[1..].parse::<u32>().unwrap() - 1;
        let token = Token {
            step: before,
            value: 5,
        };
        assert_eq!(ran.previous, Some(token), "{}", ran.name);
    }
}

#[tokio::test]
async fn a_step_that_breaks_the_rules_fails_the_pass_as_invalid_step() {
    for (name, big) in [("Bad_Name", false), ("big", true)] {
        let chain = Chain::new();
        let bed = Bed::new(chain.rule_breaker(name, big));
        bed.create(json!({"config": {"value": 1}}));
        let report = bed.reconcile().await;
        let invalid = Report::Reconciled(Phase::Failed, Reason::InvalidStep);
        assert_eq!(report, invalid, "{name}");
        assert_eq!(chain.errors().len(), 1, "{name}: the step said why");
        let status = bed.status();
        assert_eq!(condition(&status, "Ready")["reason"], "InvalidStep");
    }
}

#[tokio::test]
async fn steps_exist_only_in_converge_and_delete_of_a_package_that_declares_them() {
    let chain = Chain::new();
    let bed = Bed::new(chain.undeclared_package());
    bed.create(json!({"config": {"value": 1}}));
    assert_eq!(bed.reconcile().await, READY);
    assert_eq!(
        chain.errors(),
        [
            "durable steps run only inside converge and delete, while they run",
            "the package does not declare durable steps (ResourceSchema::steps)",
            "durable steps run only inside converge and delete, while they run",
        ]
    );
    assert!(
        bed.status().get("workflow").is_none(),
        "no record without steps"
    );
}

#[tokio::test]
async fn a_panicking_step_fails_the_pass_and_reruns_interrupted() {
    let chain = Chain::new();
    let bed = Bed::new(chain.package(2));
    bed.create(json!({"config": {"value": 1}}));
    chain.panic_once("s2");
    assert_eq!(bed.reconcile().await, FAILED);
    assert_eq!(bed.status()["workflow"]["steps"][1]["state"], "Failed");
    assert_eq!(reconcile_after_backoff(&bed).await, READY);
    let s2 = chain.ran_of("s2");
    assert_eq!(s2.len(), 2);
    assert!(s2[1].interrupted);
}

#[tokio::test]
async fn sync_steps_record_and_resume_like_async_ones() {
    let infra = blue_testkit::FakeInfra::new();
    let mut bed = Bed::new(infra.stepped_sync_package(widgets()));
    bed.create(json!({"config": {"value": 4}}));
    bed.crash_at(CrashAt::StepStarted("apply".into())).await;
    bed.restart();
    assert_eq!(bed.reconcile().await, READY);
    let ran: Vec<(String, bool)> = infra
        .step_runs()
        .into_iter()
        .map(|r| (r.name, r.interrupted))
        .collect();
    let expected = [("prepare", false), ("apply", true), ("verify", false)];
    let expected: Vec<(String, bool)> = expected.map(|(n, i)| (n.to_string(), i)).into();
    assert_eq!(ran, expected);
    assert_eq!(infra.get("dev--w"), Some(json!(4)));
}

#[test]
fn the_crd_describes_status_workflow_only_for_a_package_with_steps() {
    let status = |package: &Package| {
        let definition = crd::generate(package, &CrdConfig::default()).unwrap();
        definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
            ["properties"]
            .clone()
    };
    let chain = Chain::new();
    assert!(status(&chain.plain_package()).get("workflow").is_none());
    let workflow = status(&chain.package(1))["workflow"].clone();
    assert_eq!(workflow["properties"]["steps"]["maxItems"], 24);
    // Any JSON result survives the API server's pruning.
    let cluster = FakeCluster::new();
    let package = chain.package(1);
    cluster.install_crd(
        &crd::generate(&package, &CrdConfig::default()).unwrap(),
        "v1",
    );
    for result in [
        json!("id-1"),
        json!(7),
        json!([1, 2]),
        json!({"a": {"b": true}}),
    ] {
        let object = json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": NS},
            "spec": {},
            "status": {"workflow": {"run": "r", "sequence": 1, "generation": 1,
                "event": "create", "state": "Done", "startTime": "2025-01-01T00:00:00Z",
                "steps": [{"name": "s1", "state": "Done", "key": "s1-k", "attempts": 1,
                           "startTime": "2025-01-01T00:00:00Z", "result": result}]}},
        });
        let admitted = cluster.admit(&widgets(), object).unwrap();
        assert_eq!(admitted["status"]["workflow"]["steps"][0]["result"], result);
    }
}

/// A runtime over `cluster` with paused tokio time as its clock.
fn runtime(cluster: &FakeCluster, package: &Package) -> blue_kubernetes::Runtime {
    let mut config = Config::new(Arc::new(cluster.clone()), vec![package.clone()]);
    config.namespace = NS.into();
    config.now = common::tokio_clock();
    config.poll_ms = 500;
    blue_kubernetes::start(controller(config).unwrap()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn stop_waits_for_the_running_step_records_it_and_leaves_the_next_to_the_next_process() {
    let (cluster, infra) = (FakeCluster::new(), blue_testkit::FakeInfra::new());
    let package = infra.stepped_package(widgets());
    infra.hold_effects();
    let first = runtime(&cluster, &package);
    cluster.create(&widgets(), NS, "w", json!({"config": {"value": 3}}));
    infra.effects_started(1).await;
    // `prepare` is held: stop waits for it, never cancels it.
    let stopping = tokio::spawn(first.stop());
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert!(!stopping.is_finished(), "stop waits for the running step");
    infra.release(1);
    let limit = std::time::Duration::from_secs(60);
    let stopped = tokio::time::timeout(limit, stopping).await;
    assert!(
        stopped.is_ok(),
        "stop waited for more than the running step"
    );
    let names = |infra: &blue_testkit::FakeInfra| -> Vec<String> {
        infra.step_runs().into_iter().map(|r| r.name).collect()
    };
    assert_eq!(names(&infra), ["prepare"], "no step after stop");
    let status = cluster.get(&widgets(), NS, "w").unwrap()["status"].clone();
    assert_eq!(status["phase"], "Reconciling");
    assert_eq!(
        done_steps(&status),
        ["prepare"],
        "the running step is recorded"
    );
    // The next process resumes at `apply`.
    infra.release(100);
    let second = runtime(&cluster, &package);
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    second.stop().await;
    assert_eq!(names(&infra), ["prepare", "apply", "verify"]);
    let status = cluster.get(&widgets(), NS, "w").unwrap()["status"].clone();
    assert_eq!(status["phase"], "Ready");
    assert_eq!(infra.get("dev--w"), Some(json!(3)));
}

#[tokio::test]
async fn a_step_started_inside_another_fails_instead_of_waiting_forever() {
    let chain = Chain::new();
    let bed = Bed::new(chain.nested_package());
    bed.create(json!({"config": {"value": 1}}));
    assert_eq!(bed.reconcile().await, READY);
    assert_eq!(
        chain.errors(),
        ["a step was started while another one ran; steps run one at a time"]
    );
}

#[tokio::test(start_paused = true)]
async fn after_a_restart_the_run_a_dead_process_left_running_is_resumed_before_healthy_checks() {
    let (cluster, infra) = (FakeCluster::new(), blue_testkit::FakeInfra::new());
    let package = infra.stepped_package(widgets());
    // Listed before `w`, and due at once (never checked).
    for name in ["a0", "a1", "a2"] {
        cluster.create(&widgets(), NS, name, json!({"config": {"value": 1}}));
    }
    cluster.create(&widgets(), NS, "w", json!({"config": {"value": 2}}));
    let crash = Crash::new();
    let dead = build(&crash.client(Arc::new(cluster.clone())), &package);
    crash.arm(CrashAt::StepEnded("apply".into()));
    let pass = reconcile(&dead, &package, NS, "w");
    assert!(crash.run(pass).await.is_none(), "the pass died in `apply`");
    let before = infra.records().len();
    // The next process, one worker: the order it looks in is the order
    // its callbacks run.
    let mut config = Config::new(Arc::new(cluster.clone()), vec![package.clone()]);
    config.namespace = NS.into();
    config.now = common::tokio_clock();
    config.workers = 1;
    let next = blue_kubernetes::start(controller(config).unwrap()).unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    next.stop().await;
    let order: Vec<String> = infra.records()[before..]
        .iter()
        .filter(|r| r.callback == blue_testkit::Callback::Observe)
        .map(|r| r.profile.clone())
        .collect();
    assert_eq!(
        order.first().map(String::as_str),
        Some("dev--w"),
        "{order:?}"
    );
    let status = cluster.get(&widgets(), NS, "w").unwrap()["status"].clone();
    assert_eq!(status["phase"], "Ready");
    assert_eq!(status["workflow"]["state"], "Done");
}
