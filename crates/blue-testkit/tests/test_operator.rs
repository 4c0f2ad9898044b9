//! The package test harness: its own identity lock, crashes with restarts,
//! passes until Ready or released.

use blue_kubernetes::Report;

use blue_kubernetes::config::LockDomain;

use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes_client::ResourceDescriptor;
use blue_testkit::{Callback, CrashAt, FakeCluster, FakeInfra, Misbehaviour, TestOperator};
use serde_json::json;

const READY: Report = Report::Reconciled(Phase::Ready, Reason::Converged);

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

#[tokio::test]
async fn each_operator_has_its_own_identity_lock_unless_told_to_share() {
    let infra = FakeInfra::new();
    let a = TestOperator::new(infra.package(widgets()));
    let apart = TestOperator::new(infra.package(widgets()));
    let sharing = TestOperator::new(infra.package(widgets())).with_lock_domain(a.lock_domain());
    assert!(!a.lock_domain().same_as(&LockDomain::process()));
    for op in [&a, &apart, &sharing] {
        op.create("db", json!({"config": {"value": 1}}));
    }
    infra.hold_effects();
    let (first, (second, busy)) = tokio::join!(a.reconcile("db"), async {
        infra.effects_started(1).await;
        let busy = sharing.reconcile("db").await;
        let (second, ()) = tokio::join!(apart.reconcile("db"), async {
            infra.effects_started(2).await;
            infra.release(2);
        });
        (second, busy)
    });
    assert_eq!((first, second, busy), (READY, READY, Report::Busy));
}

#[tokio::test]
async fn a_restart_keeps_a_shared_lock_domain_and_renews_an_own_one() {
    let shared = LockDomain::new();
    let infra = FakeInfra::new();
    let mut own = TestOperator::new(infra.package(widgets()));
    let mut told = TestOperator::new(infra.package(widgets())).with_lock_domain(shared.clone());
    let before = own.lock_domain();
    own.restart();
    told.restart();
    assert!(!own.lock_domain().same_as(&before), "a new process");
    assert!(told.lock_domain().same_as(&shared));
}

#[tokio::test]
async fn crash_at_kills_the_pass_there_and_the_next_process_resumes_the_run() {
    let infra = FakeInfra::new();
    let mut op = TestOperator::new(infra.stepped_package(widgets())).with_crds();
    op.create("w", json!({"config": {"value": 4}}));
    let at = blue_testkit::CONVERGE_STEPS[1];
    op.crash_at(CrashAt::StepEnded(at.into()), "w").await;
    let workflow = &op.status("w")["workflow"];
    assert_eq!(workflow["steps"][1]["state"], "Running", "{workflow}");
    assert_eq!(op.reconcile("w").await, READY);
    let reruns: Vec<_> = infra
        .step_runs()
        .into_iter()
        .filter(|r| r.name == at)
        .map(|r| r.interrupted)
        .collect();
    assert_eq!(reruns, [false, true]);
}

#[tokio::test]
#[should_panic(expected = "no crash at")]
async fn crash_at_a_point_the_pass_never_reaches_fails_the_test() {
    let mut op = TestOperator::new(FakeInfra::new().package(widgets()));
    op.create("w", json!({"config": {"value": 1}}));
    op.crash_at(CrashAt::StepStarted("none".into()), "w").await;
}

#[tokio::test]
async fn expect_crash_drives_a_pass_the_backend_kills() {
    let infra = FakeInfra::new();
    let cluster = FakeCluster::new();
    let mut op = TestOperator::on(&cluster, vec![infra.package(widgets())]);
    let crash = op.crash().clone();
    infra.hold_effects();
    op.create("w", json!({"config": {"value": 1}}));
    let killed = async {
        infra.effects_started(1).await;
        crash.now();
    };
    let ((), ()) = tokio::join!(op.expect_crash("w"), killed);
    infra.release(1);
    assert_eq!(op.reconcile("w").await, READY);
}

#[tokio::test]
async fn settle_moves_the_clock_through_retries_until_ready_then_until_released() {
    let infra = FakeInfra::new();
    let op = TestOperator::new(infra.package(widgets()));
    for _ in 0..3 {
        infra.script(Callback::Converge, Misbehaviour::Error);
    }
    op.create(
        "w",
        json!({"config": {"value": 1}, "deletionPolicy": "Destroy"}),
    );
    let start = op.clock().now_ms();
    assert_eq!(op.settle("w").await, READY);
    assert_eq!(infra.count(Callback::Converge), 4);
    // Backoffs of 1, 2 and 4 seconds.
    assert!(op.clock().now_ms() - start >= 7_000);
    op.delete("w");
    assert_eq!(op.settle("w").await, Report::Released);
    assert!(op.get("w").is_none());
}

#[tokio::test]
#[should_panic(expected = "neither Ready nor released after 20 passes")]
async fn settle_gives_up_after_its_bound_naming_the_reports() {
    let infra = FakeInfra::new();
    let op = TestOperator::new(infra.package(widgets()));
    for _ in 0..30 {
        infra.script(Callback::Converge, Misbehaviour::Error);
    }
    op.create("w", json!({"config": {"value": 1}}));
    op.settle("w").await;
}

/// A typed package (its CRD prunes unknown config keys) whose
/// infrastructure is always there, matching and ready.
struct Always;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AlwaysConfig {
    #[allow(dead_code)]
    value: u32,
}

#[blue_kubernetes::async_trait]
impl blue_kubernetes::Infrastructure for Always {
    type Config = AlwaysConfig;
    type Outputs = blue_kubernetes::package::NoOutputs;
    fn schema() -> blue_kubernetes::ResourceSchema {
        blue_kubernetes::ResourceSchema::new(widgets())
    }
    async fn observe(
        &self,
        _: &blue_kubernetes::Context<AlwaysConfig>,
    ) -> blue_kubernetes::CallbackResult<blue_kubernetes::Observation<Self::Outputs>> {
        Ok(blue_kubernetes::Observation::READY)
    }
    async fn converge(
        &self,
        _: &blue_kubernetes::Context<AlwaysConfig>,
    ) -> blue_kubernetes::CallbackResult<blue_kubernetes::Outcome<Self::Outputs>> {
        Ok(blue_kubernetes::Outcome::done())
    }
    async fn delete(
        &self,
        _: &blue_kubernetes::Context<AlwaysConfig>,
    ) -> blue_kubernetes::CallbackResult<blue_kubernetes::Outcome<Self::Outputs>> {
        Ok(blue_kubernetes::Outcome::done())
    }
}

/// A CRD generated with other names than the controller's declares another
/// destroy-protection key: the fake would prune the one the controller
/// reads, and a protected resource would be released in the test.
#[tokio::test]
async fn crds_are_generated_with_the_operators_names_so_protection_holds() {
    use blue_kubernetes::config::Names;
    use blue_kubernetes::crd::CrdConfig;
    let names = Names::for_domain("widgets.example.com");
    let blocked = Report::Reconciled(Phase::Blocked, Reason::DestructionProtected);
    let always = || blue_kubernetes::Package::new(Always).unwrap();
    let named = {
        let names = names.clone();
        move |c: blue_kubernetes::Config| c.with_names(names.clone())
    };
    let crds_first = TestOperator::new(always())
        .with_crds()
        .configure(named.clone());
    let names_first = TestOperator::new(always())
        .configure(named.clone())
        .with_crds();
    // Explicit options with the reference's names: the operator's win.
    let explicit = TestOperator::new(always())
        .configure(named)
        .with_crd_config(CrdConfig::default().with_names(Names::reference()));
    for op in [&crds_first, &names_first, &explicit] {
        let spec = json!({
            "deletionPolicy": "Destroy",
            "config": {"value": 1, "prevent-destroy": true},
        });
        op.create("db", spec);
        assert_eq!(op.settle("db").await, READY);
        assert_eq!(
            op.get("db").unwrap()["spec"]["config"]["prevent-destroy"],
            true
        );
        op.delete("db");
        assert_eq!(op.reconcile("db").await, blocked);
    }
}
