//! The package under the controller's real rules, following the testkit's
//! guide: the fake API server applies the generated CRD and holds the
//! ConfigMaps the package writes through its API handle, and a fake clock
//! moves time.

use crate::package::{crd_options, descriptor, LocalConfigMaps};
use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes::{controller, reconcile, Config, Controller, Package, Report, ResourceSchema};
use blue_testkit::strategies::{arb_config_from_crd, arb_spec_with};
use blue_testkit::{FakeClock, FakeCluster};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::Arc;

const NS: &str = "dev";

/// The CRD `crd` prints (`cel: false`: `crd --no-cel`).
fn crd(cel: bool) -> Result<Value, blue_kubernetes::Error> {
    let schema = ResourceSchema::of::<LocalConfigMaps>();
    blue_kubernetes::crd::generate(&schema, &crd_options().with_cel(cel))
}

struct World {
    cluster: FakeCluster,
    clock: FakeClock,
    package: Package,
    controller: Controller,
}

impl World {
    /// With the generated CRD installed, or (`crd: false`) a bare server.
    fn new(with_crd: bool) -> Self {
        let clock = FakeClock::default();
        let cluster = FakeCluster::new().with_clock(clock.clone());
        if with_crd {
            cluster.install_crd(&crd(false).unwrap(), "v1alpha1");
        }
        let package = Package::new(LocalConfigMaps::default()).unwrap();
        let mut config = Config::new(Arc::new(cluster.clone()), vec![package.clone()]);
        config.namespace = NS.into();
        config.names = super::names();
        config.now = clock.as_fn();
        let controller = controller(config).unwrap();
        World {
            cluster,
            clock,
            package,
            controller,
        }
    }

    async fn reconcile(&self, name: &str) -> Report {
        reconcile(&self.controller, &self.package, NS, name)
            .await
            .unwrap()
    }

    /// The data of the ConfigMap named `name`, if it exists.
    fn data(&self, name: &str) -> Option<Value> {
        let path = format!("/api/v1/namespaces/{NS}/configmaps/{name}");
        self.cluster.get_object(&path).map(|cm| cm["data"].clone())
    }

    fn status(&self, name: &str) -> Value {
        self.cluster.get(&descriptor(), NS, name).unwrap()["status"].clone()
    }
}

#[tokio::test]
async fn a_resource_converges_and_drift_is_repaired_under_the_generated_crd() {
    let w = World::new(true);
    let created = w.cluster.create(
        &descriptor(),
        NS,
        "drifting",
        json!({"config": {"data": {"k": "v"}}}),
    );
    assert_eq!(created["spec"]["reconcileInterval"], "60s", "CRD default");
    assert_eq!(
        w.reconcile("drifting").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(w.status("drifting")["phase"], "Ready");
    assert_eq!(w.data("drifting"), Some(json!({"k": "v"})));

    let path = format!("/api/v1/namespaces/{NS}/configmaps/drifting");
    w.cluster.edit_object(&path, |cm| cm["data"] = json!({}));
    assert_eq!(w.reconcile("drifting").await, Report::NotDue);
    // The interval, stretched by under a tenth from the uid.
    w.clock.advance(66_000);
    w.reconcile("drifting").await;
    assert_eq!(w.data("drifting"), Some(json!({"k": "v"})));
}

#[tokio::test]
async fn a_mistyped_config_is_refused_by_the_crd_and_invalid_without_it() {
    let spec = json!({"config": {"data": {"k": 1}}});
    let with_crd = World::new(true);
    let object = json!({"metadata": {"name": "mistyped"}, "spec": spec});
    assert!(with_crd.cluster.admit(&descriptor(), object).is_err());

    let bare = World::new(false);
    bare.cluster.create(&descriptor(), NS, "mistyped", spec);
    assert_eq!(
        bare.reconcile("mistyped").await,
        Report::Reconciled(Phase::Invalid, Reason::InvalidConfiguration)
    );
    let log = bare.cluster.call_log();
    assert!(
        !log.iter().any(|call| call.resource == "configmaps"),
        "no ConfigMap request for an invalid config: {log:?}"
    );
}

// Each test names its resource differently: the identity lock is process
// wide, and parallel tests sharing an identity would find it held (Busy).
proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Every spec the CRD admits decodes into `LocalConfigMapConfig`, passes
    /// validation and converges: the CRD and the type agree.
    #[test]
    fn every_config_the_crd_admits_converges(spec in arb_spec_with(arb_config_from_crd(&crd(false).unwrap()))) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let w = World::new(true);
        w.cluster.create(&descriptor(), NS, "admitted", spec.clone());
        let report = runtime.block_on(w.reconcile("admitted"));
        let expected = if spec["suspend"] == true {
            Report::Reconciled(Phase::Suspended, Reason::Suspended)
        } else {
            Report::Reconciled(Phase::Ready, Reason::Converged)
        };
        prop_assert_eq!(report, expected, "{}", spec);
    }
}
