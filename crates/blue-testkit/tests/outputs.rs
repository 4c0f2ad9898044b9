//! Outputs: recorded in `status.outputs` by the status
//! write a pass makes anyway, the latest of the pass winning, kept when a
//! pass reports none, bounded, and described by the generated CRD.

mod common;

use blue_kubernetes::{Observation, Package, Report, ResourceSchema};

use blue_kubernetes::config::LockDomain;

use blue_kubernetes::package::MAX_OUTPUTS_BYTES;

use blue_kubernetes::crd::{self, CrdConfig};
use blue_kubernetes::package::outcome_with_outputs;
use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes::{controller, reconcile, Config};
use blue_kubernetes_client::Client;
use blue_testkit::{FakeClock, FakeCluster, FakeInfra};
use common::{spec, widgets, World, NS};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Endpoint {
    host: String,
    port: u16,
}

/// What the package's callbacks hand over, settable by the test.
#[derive(Clone, Default)]
struct Script {
    exists: Arc<Mutex<bool>>,
    observed: Arc<Mutex<Option<Value>>>,
    converged: Arc<Mutex<Option<Value>>>,
}

fn package(script: &Script) -> Package {
    let (o, c) = (script.clone(), script.clone());
    Package::builder(ResourceSchema::new(widgets()).outputs::<Endpoint>())
        .validate(|opts| {
            Ok(match opts.get("value") {
                Some(v) if v == "bad" => vec!["value must not be bad".into()],
                _ => vec![],
            })
        })
        .identity(|opts| Ok(vec![Some(opts.profile().into())]))
        .observe(move |_| {
            let exists = *o.exists.lock().unwrap();
            let seen = Observation::new(exists, exists, exists);
            Ok(match &*o.observed.lock().unwrap() {
                Some(outputs) => seen.with_outputs(outputs),
                None => seen,
            })
        })
        .converge(move |_| {
            *c.exists.lock().unwrap() = true;
            match &*c.converged.lock().unwrap() {
                Some(outputs) => outcome_with_outputs(outputs),
                None => Ok(Default::default()),
            }
        })
        .delete(|_| Ok(Default::default()))
        .build()
        .unwrap()
}

struct Rig {
    cluster: FakeCluster,
    script: Script,
    package: Package,
    controller: blue_kubernetes::Controller,
}

fn rig() -> Rig {
    let clock = FakeClock::default();
    let cluster = FakeCluster::new().with_clock(clock.clone());
    let script = Script::default();
    let package = package(&script);
    // The CRD the operator ships: a status field it did not declare would
    // be pruned here as on a real server.
    cluster.install_crd(
        &crd::generate(&package, &CrdConfig::default()).unwrap(),
        "v1",
    );
    let client: Arc<dyn Client> = Arc::new(cluster.clone());
    // Rigs of parallel tests share identities: each has its own lock.
    let config = Config::new(client, vec![package.clone()])
        .with_namespace(NS.into())
        .with_clock(clock.as_fn())
        .with_lock_domain(LockDomain::new());
    let controller = controller(config).unwrap();
    Rig {
        cluster,
        script,
        package,
        controller,
    }
}

impl Rig {
    async fn reconcile(&self) -> Report {
        reconcile(&self.controller, &self.package, NS, "w")
            .await
            .unwrap()
    }

    fn status(&self) -> Value {
        self.cluster.get(&widgets(), NS, "w").unwrap()["status"].clone()
    }
}

fn endpoint(port: u16) -> Value {
    json!({"host": "db.internal", "port": port})
}

#[tokio::test]
async fn converge_outputs_are_recorded_by_the_ready_write_at_no_extra_request() {
    // The same pass without outputs, for the request count.
    let plain = rig();
    plain.cluster.create(&widgets(), NS, "w", spec(json!(1)));
    plain.reconcile().await;
    let without = plain.cluster.calls();

    let r = rig();
    *r.script.converged.lock().unwrap() = Some(endpoint(5432));
    r.cluster.create(&widgets(), NS, "w", spec(json!(1)));
    let report = r.reconcile().await;

    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(r.status()["outputs"], endpoint(5432));
    assert_eq!(r.cluster.calls(), without, "outputs cost no request");
}

#[tokio::test]
async fn the_last_observe_of_a_pass_wins_over_converge() {
    let r = rig();
    *r.script.converged.lock().unwrap() = Some(endpoint(1));
    *r.script.observed.lock().unwrap() = Some(endpoint(2));
    r.cluster.create(&widgets(), NS, "w", spec(json!(1)));
    r.reconcile().await;
    assert_eq!(r.status()["outputs"], endpoint(2));
}

#[tokio::test]
async fn recorded_outputs_stay_when_later_passes_report_none_or_the_resource_turns_invalid() {
    let r = rig();
    *r.script.observed.lock().unwrap() = Some(endpoint(5432));
    r.cluster.create(&widgets(), NS, "w", spec(json!(1)));
    r.reconcile().await;
    *r.script.observed.lock().unwrap() = None;
    r.cluster
        .edit_spec(&widgets(), NS, "w", |s| s["config"]["value"] = json!(2));
    assert_eq!(
        r.reconcile().await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(r.status()["outputs"], endpoint(5432));

    r.cluster
        .edit_spec(&widgets(), NS, "w", |s| s["config"]["value"] = json!("bad"));
    assert_eq!(
        r.reconcile().await,
        Report::Reconciled(Phase::Invalid, Reason::InvalidConfiguration)
    );
    assert_eq!(r.status()["outputs"], endpoint(5432));
}

#[tokio::test]
async fn outputs_over_the_bound_fail_the_pass_and_record_nothing_of_them() {
    let r = rig();
    let huge = "x".repeat(MAX_OUTPUTS_BYTES);
    *r.script.converged.lock().unwrap() = Some(json!({"host": huge, "port": 1}));
    r.cluster.create(&widgets(), NS, "w", spec(json!(1)));
    let report = r.reconcile().await;
    assert_eq!(
        report,
        Report::Reconciled(Phase::Failed, Reason::InvalidOutputs)
    );
    let status = r.status();
    assert!(status.get("outputs").is_none(), "{status}");
    assert_eq!(status["retryCount"], 1, "retried with backoff");
}

#[tokio::test]
async fn outputs_that_are_not_the_declared_type_fail_the_pass() {
    let r = rig();
    *r.script.observed.lock().unwrap() = Some(json!({"host": 5}));
    r.cluster.create(&widgets(), NS, "w", spec(json!(1)));
    let report = r.reconcile().await;
    assert_eq!(
        report,
        Report::Reconciled(Phase::Failed, Reason::InvalidOutputs)
    );
    assert!(r.status().get("outputs").is_none());
}

#[test]
fn the_generated_crd_describes_status_outputs_with_the_declared_type() {
    let declared = crd::generate(&package(&Script::default()), &CrdConfig::default()).unwrap();
    let status = &declared["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
        ["status"]["properties"];
    assert_eq!(status["outputs"]["properties"]["port"]["type"], "integer");

    let undeclared =
        crd::generate(&FakeInfra::new().package(widgets()), &CrdConfig::default()).unwrap();
    let status = &undeclared["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
        ["status"]["properties"];
    assert_eq!(
        status["outputs"]["x-kubernetes-preserve-unknown-fields"],
        true
    );
}

#[tokio::test]
async fn a_recording_package_reports_the_outputs_set_on_its_infrastructure() {
    let w = World::new();
    w.infra
        .set_outputs(&World::profile("w"), json!({"version": "15"}));
    w.create("w", spec(json!(1)));
    w.reconcile("w").await;
    assert_eq!(w.status("w")["outputs"], json!({"version": "15"}));
}
