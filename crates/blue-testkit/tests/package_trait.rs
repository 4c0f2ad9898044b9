//! The package trait: a typed `Infrastructure` reaches Ready, and every
//! callback gets its typed context (config, metadata, management policy,
//! the controller's clock, the fenced API handle).

mod common;
mod silences;

use blue_kubernetes::{reconcile, Package, Report, ResourceSchema};

use blue_kubernetes::crd::{self, CrdConfig};

use blue_kubernetes::resource::{ManagementPolicy, Phase, Reason};
use blue_testkit::{FakeClock, FakeCluster};
use common::{build, NS};
use serde_json::{json, Value};
use silences::{silences, AlertManager, Rig};

#[tokio::test]
async fn a_trait_package_reaches_ready_with_its_typed_outputs() {
    let rig = Rig::new();
    rig.cluster.create(
        &silences(),
        NS,
        "quiet",
        json!({"config": {"matcher": "job=db"}}),
    );

    let report = rig.reconcile("quiet").await;

    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(rig.manager.count(), 1);
    assert_eq!(rig.get("quiet")["status"]["outputs"], json!({"id": "s-1"}));
}

#[tokio::test]
async fn callbacks_see_the_metadata_the_policy_and_the_controllers_clock() {
    let rig = Rig::new();
    rig.clock.set(1_900_000_000_000);
    let created = rig.cluster.create_with(
        &silences(),
        json!({
            "metadata": {"name": "quiet", "namespace": NS, "labels": {"team": "db"}},
            "spec": {"config": {"matcher": "job=db"}},
        }),
    );

    rig.reconcile("quiet").await;

    let seen = rig.manager.seen("converge");
    let seen = seen.first().expect("converge ran");
    assert_eq!(seen.metadata.name, "quiet");
    assert_eq!(seen.metadata.namespace, NS);
    assert_eq!(
        seen.metadata.uid,
        created["metadata"]["uid"].as_str().unwrap()
    );
    assert_eq!(seen.metadata.generation, 1);
    assert_eq!(
        seen.metadata.labels.get("team").map(String::as_str),
        Some("db")
    );
    assert_eq!(seen.metadata.created_ms, Some(1_900_000_000_000));
    assert_eq!(seen.policy, ManagementPolicy::Full);
    assert_eq!(
        seen.now_ms,
        rig.clock.now_ms(),
        "the fake clock reaches the package"
    );
    assert!(seen.has_api, "the package has its fenced API handle");
}

#[tokio::test]
async fn the_clock_a_callback_reads_moves_with_the_controllers() {
    let rig = Rig::new();
    rig.cluster.create(
        &silences(),
        NS,
        "quiet",
        json!({"config": {"matcher": "job=db"}}),
    );
    rig.reconcile("quiet").await;
    rig.clock.advance(3_600_000);
    rig.cluster.edit_spec(&silences(), NS, "quiet", |spec| {
        spec["config"]["matcher"] = json!("job=web");
    });

    rig.reconcile("quiet").await;

    let converges = rig.manager.seen("converge");
    assert_eq!(converges.len(), 2);
    assert_eq!(converges[1].now_ms - converges[0].now_ms, 3_600_000);
}

#[tokio::test]
async fn a_config_that_does_not_decode_is_invalid_before_any_trait_callback() {
    let rig = Rig::new();
    rig.cluster
        .create(&silences(), NS, "quiet", json!({"config": {"matcher": 5}}));

    let report = rig.reconcile("quiet").await;

    assert_eq!(
        report,
        Report::Reconciled(Phase::Invalid, Reason::InvalidConfiguration)
    );
    assert!(rig.manager.seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn the_crd_is_derived_from_the_traits_one_declaration() {
    let crd = crd::generate(&ResourceSchema::of::<AlertManager>(), &CrdConfig::default()).unwrap();
    let root = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
    let config = &root["spec"]["properties"]["config"]["properties"];
    assert_eq!(config["matcher"]["type"], "string");
    let outputs = &root["status"]["properties"]["outputs"]["properties"];
    assert_eq!(outputs["id"]["type"], "string");
}

/// Panics in `converge`, inline or on a blocking thread.
struct Panicking {
    on_blocking_thread: bool,
}

#[blue_kubernetes::async_trait]
impl blue_kubernetes::Infrastructure for Panicking {
    type Config = serde_json::Map<String, Value>;
    type Outputs = blue_kubernetes::package::NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(silences())
    }

    async fn observe(
        &self,
        _: &blue_kubernetes::Context<Self::Config>,
    ) -> blue_kubernetes::CallbackResult<blue_kubernetes::Observation<Self::Outputs>> {
        Ok(blue_kubernetes::Observation::ABSENT)
    }

    async fn converge(
        &self,
        _: &blue_kubernetes::Context<Self::Config>,
    ) -> blue_kubernetes::CallbackResult<blue_kubernetes::Outcome<Self::Outputs>> {
        if self.on_blocking_thread {
            blue_kubernetes::package::blocking(|| -> blue_kubernetes::CallbackResult<()> {
                panic!("boom")
            })
            .await?;
        }
        panic!("boom")
    }

    async fn delete(
        &self,
        _: &blue_kubernetes::Context<Self::Config>,
    ) -> blue_kubernetes::CallbackResult<blue_kubernetes::Outcome<Self::Outputs>> {
        Ok(blue_kubernetes::Outcome::done())
    }
}

#[tokio::test]
async fn a_panicking_trait_method_is_a_failed_attempt_not_a_crash() {
    for on_blocking_thread in [false, true] {
        let clock = FakeClock::default();
        let cluster = FakeCluster::new().with_clock(clock.clone());
        let package = Package::new(Panicking { on_blocking_thread }).unwrap();
        let controller = build(&cluster, clock.as_fn(), vec![package.clone()], |_| {});
        cluster.create(&silences(), NS, "quiet", json!({"config": {}}));

        let report = reconcile(&controller, &package, NS, "quiet").await.unwrap();

        assert_eq!(
            report,
            Report::Reconciled(Phase::Failed, Reason::ExecutionFailed),
            "on a blocking thread: {on_blocking_thread}"
        );
    }
}
