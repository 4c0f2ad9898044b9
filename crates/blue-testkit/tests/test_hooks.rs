//! Test hooks for real processes: the hook string, and a `pause` at each
//! boundary holding the pass exactly where the boundary says (seen through
//! the marker file and what the cluster and the package hold meanwhile).
//! `kill` ends the process, so the postgres e2e tests it on a real one.

#[allow(dead_code)]
#[path = "steps/chain.rs"]
mod chain;
mod common;

use blue_kubernetes::config::LockDomain;
use blue_kubernetes::crd::{self, CrdConfig};
use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes::test_hooks::{Action, Boundary, Hook, TestHooks, TestHooksError};
use blue_kubernetes::Report;
use blue_kubernetes::{controller, reconcile, Config, Package};
use blue_testkit::FakeCluster;
use chain::Chain;
use common::{finalizers, widgets, NS};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

const READY: Report = Report::Reconciled(Phase::Ready, Reason::Converged);

#[test]
fn a_hook_string_parses_into_its_hooks_in_order() {
    let dir = PathBuf::from("/tmp/markers");
    let spec = "pause:before-step:s2, kill:after-step:role,pause:after-converge,kill:before-finalizer-release";
    let hooks = TestHooks::parse(spec, Some(dir.clone())).unwrap();
    let hook = |action, boundary| Hook { action, boundary };
    assert_eq!(
        hooks.hooks(),
        [
            hook(Action::Pause, Boundary::BeforeStep("s2".into())),
            hook(Action::Kill, Boundary::AfterStep("role".into())),
            hook(Action::Pause, Boundary::AfterConverge),
            hook(Action::Kill, Boundary::BeforeFinalizerRelease),
        ]
    );
    assert_eq!(hooks.dir(), Some(dir.as_path()));
    // A kill needs no directory: its marker is only written when there is one.
    assert!(TestHooks::parse("kill:after-converge", None).is_ok());
}

#[test]
fn a_bad_hook_string_is_refused_naming_the_wrong_part() {
    let dir = Some(PathBuf::from("/tmp/markers"));
    let refused = |spec: &str| TestHooks::parse(spec, dir.clone()).unwrap_err().to_string();
    for (spec, said) in [
        ("pause:after-converge,stop:after-converge", "test hook `stop:after-converge`: unknown action `stop` (pause or kill)"),
        ("pause", "test hook `pause`: want ACTION:BOUNDARY, e.g. pause:after-step:NAME"),
        ("kill:after-step:Role", "test hook `kill:after-step:Role`: step name `Role` is not [a-z0-9-]{1,63}"),
        ("kill:after-step:", "test hook `kill:after-step:`: step name `` is not [a-z0-9-]{1,63}"),
        ("kill:during-step:a", "test hook `kill:during-step:a`: unknown boundary `during-step:a` (before-step:NAME, after-step:NAME, after-converge, before-finalizer-release)"),
        ("kill:after-converge:x", "test hook `kill:after-converge:x`: unknown boundary `after-converge:x` (before-step:NAME, after-step:NAME, after-converge, before-finalizer-release)"),
        ("kill:after-converge,", "test hook ``: want ACTION:BOUNDARY, e.g. pause:after-step:NAME"),
    ] {
        assert_eq!(refused(spec), said, "{spec}");
    }
    let err = TestHooks::parse("kill:after-converge,pause:after-step:a", None).unwrap_err();
    assert_eq!(
        err,
        TestHooksError::NoDirectory("pause:after-step:a".into())
    );
    assert!(err.to_string().contains("BLUE_TEST_HOOKS_DIR"), "{err}");
}

#[test]
fn a_marker_names_the_boundary_and_the_resource() {
    let step = Boundary::AfterStep("role".into());
    assert_eq!(step.marker("dev", "db"), "after-step:role@dev.db");
    assert_eq!(step.marker("", "db"), "after-step:role@db");
    let release = Boundary::BeforeFinalizerRelease;
    assert_eq!(
        release.marker("dev", "db"),
        "before-finalizer-release@dev.db"
    );
}

/// A cluster with the chain's CRD installed and a controller with `hooks`
/// whose markers go to a directory of its own.
struct Bed {
    cluster: FakeCluster,
    chain: Chain,
    package: Package,
    controller: blue_kubernetes::Controller,
    dir: tempfile::TempDir,
}

impl Bed {
    fn new(hooks: &str) -> Self {
        let chain = Chain::new();
        let package = chain.package(3);
        let cluster = FakeCluster::new();
        cluster.install_crd(
            &crd::generate(&package, &CrdConfig::default()).unwrap(),
            "v1",
        );
        let dir = tempfile::tempdir().unwrap();
        let hooks = TestHooks::parse(hooks, Some(dir.path().into())).unwrap();
        let config = Config::new(Arc::new(cluster.clone()), vec![package.clone()])
            .with_namespace(NS.into())
            .with_test_hooks(hooks)
            .with_lock_domain(LockDomain::new());
        let controller = controller(config).unwrap();
        cluster.create(
            &widgets(),
            NS,
            "w",
            json!({"deletionPolicy": "Destroy", "config": {"value": 7}}),
        );
        Self {
            cluster,
            chain,
            package,
            controller,
            dir,
        }
    }

    fn marker(&self, boundary: &str) -> PathBuf {
        let hook = TestHooks::parse(&format!("kill:{boundary}"), None).unwrap();
        self.dir
            .path()
            .join(hook.hooks()[0].boundary.marker(NS, "w"))
    }

    fn object(&self) -> Value {
        self.cluster.get(&widgets(), NS, "w").unwrap()
    }

    /// Step states as stored: `[("s1", "Done"), ...]`.
    fn stored_steps(&self) -> Vec<(String, String)> {
        let steps = self.object()["status"]["workflow"]["steps"].clone();
        let text = |s: &Value, k: &str| s[k].as_str().unwrap_or_default().to_string();
        let steps = steps.as_array().cloned().unwrap_or_default();
        steps
            .iter()
            .map(|s| (text(s, "name"), text(s, "state")))
            .collect()
    }

    fn phase(&self) -> Value {
        self.object()["status"]["phase"].clone()
    }

    /// One pass, while `look` runs once the pass paused at `boundary`;
    /// the marker's removal lets the pass go on.
    async fn paused_at(&self, boundary: &str, look: impl FnOnce(&Self)) -> Report {
        let marker = self.marker(boundary);
        let pass = reconcile(&self.controller, &self.package, NS, "w");
        let observer = async {
            appears(&marker).await;
            look(self);
            std::fs::remove_file(&marker).unwrap();
        };
        let (report, ()) = tokio::join!(pass, observer);
        report.unwrap()
    }

    fn markers(&self) -> usize {
        std::fs::read_dir(self.dir.path()).unwrap().count()
    }
}

/// Waits (in real time: the pass polls the file) until `marker` exists.
async fn appears(marker: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            marker.display()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn steps(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[tokio::test]
async fn a_pause_before_a_step_holds_it_after_its_running_record_and_before_its_closure() {
    let bed = Bed::new("pause:before-step:s2");
    let report = bed
        .paused_at("before-step:s2", |bed| {
            assert_eq!(bed.chain.names(), ["s1"]);
            let stored = steps(&[("s1", "Done"), ("s2", "Running")]);
            assert_eq!(bed.stored_steps(), stored);
            let marker = std::fs::read_to_string(bed.marker("before-step:s2")).unwrap();
            assert_eq!(marker, "pause:before-step:s2 dev/w\n");
        })
        .await;
    assert_eq!(report, READY);
    assert_eq!(bed.chain.names(), ["s1", "s2", "s3"]);
}

#[tokio::test]
async fn a_pause_after_a_step_holds_it_after_its_closure_and_before_its_done_record() {
    let bed = Bed::new("pause:after-step:s2");
    let report = bed
        .paused_at("after-step:s2", |bed| {
            assert_eq!(bed.chain.names(), ["s1", "s2"]);
            let stored = steps(&[("s1", "Done"), ("s2", "Running")]);
            assert_eq!(bed.stored_steps(), stored);
        })
        .await;
    assert_eq!(report, READY);
    let done = steps(&[("s1", "Done"), ("s2", "Done"), ("s3", "Done")]);
    assert_eq!(bed.stored_steps(), done);
}

#[tokio::test]
async fn a_pause_after_converge_holds_the_pass_after_its_effect_and_before_ready() {
    let bed = Bed::new("pause:after-converge");
    let report = bed
        .paused_at("after-converge", |bed| {
            assert_eq!(bed.chain.names(), ["s1", "s2", "s3"]);
            assert_eq!(bed.chain.applied("dev--w"), Some(json!(7)));
            assert_eq!(bed.phase(), "Reconciling");
            let stored = steps(&[("s1", "Done"), ("s2", "Done"), ("s3", "Running")]);
            assert_eq!(bed.stored_steps(), stored);
        })
        .await;
    assert_eq!(report, READY);
    assert_eq!(bed.phase(), "Ready");
}

#[tokio::test]
async fn a_pause_before_finalizer_release_holds_it_after_the_destroy_and_before_the_release() {
    let bed = Bed::new("pause:before-finalizer-release");
    let pass = reconcile(&bed.controller, &bed.package, NS, "w");
    assert_eq!(
        pass.await.unwrap(),
        READY,
        "no finalizer released: no pause"
    );
    bed.cluster.delete(&widgets(), NS, "w");
    let report = bed
        .paused_at("before-finalizer-release", |bed| {
            assert_eq!(bed.chain.names(), ["s1", "s2", "s3", "d1", "d2"]);
            assert_eq!(bed.chain.applied("dev--w"), None, "destroyed");
            assert_eq!(finalizers(&bed.object()).len(), 1, "still held");
        })
        .await;
    assert_eq!(report, Report::Released);
    assert!(bed.cluster.get(&widgets(), NS, "w").is_none());
}

#[tokio::test]
async fn hooks_naming_other_boundaries_never_pause_a_pass() {
    let bed = Bed::new("pause:before-step:s9,pause:after-step:d9");
    let pass = reconcile(&bed.controller, &bed.package, NS, "w");
    assert_eq!(pass.await.unwrap(), READY);
    bed.cluster.delete(&widgets(), NS, "w");
    let pass = reconcile(&bed.controller, &bed.package, NS, "w");
    assert_eq!(pass.await.unwrap(), Report::Released);
    assert_eq!(bed.markers(), 0);
}
