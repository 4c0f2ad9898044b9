//! Authoring: typed configs, the generated CRD applied by the fake API
//! server, and configurable names.

mod common;

use blue_kubernetes::{
    controller, crd, CrdOptions, Error, Names, Observation, Package, Phase, Reason, Report,
    WorkflowOutcome,
};
use blue_kubernetes_client::Client;
use blue_testkit::{FakeCluster, Misbehaviour, Step};
use common::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SizeConfig {
    size: u32,
}

/// Sizes by profile, and how many callbacks ran.
#[derive(Clone, Default)]
struct Sizes(Arc<Mutex<(BTreeMap<String, u32>, usize)>>);

impl Sizes {
    fn package(&self) -> Package {
        let (a, b, c, d) = (self.clone(), self.clone(), self.clone(), self.clone());
        Package::builder(widgets())
            .config::<SizeConfig>()
            .validate(move |_c, _o| {
                a.0.lock().unwrap().1 += 1;
                Ok(vec![])
            })
            .identity(|_c, o| Ok(vec![Some(o.profile().into())]))
            .observe(move |c, o| {
                let s = b.0.lock().unwrap();
                let have = s.0.get(o.profile());
                Ok(Observation {
                    exists: have.is_some(),
                    matches: have == Some(&c.size),
                    ready: have.is_some(),
                })
            })
            .converge(move |cfg, o| {
                let mut s = c.0.lock().unwrap();
                s.0.insert(o.profile().into(), cfg.size);
                s.1 += 1;
                Ok(WorkflowOutcome::new())
            })
            .delete(move |_c, o| {
                d.0.lock().unwrap().0.remove(o.profile());
                Ok(WorkflowOutcome::new())
            })
            .build()
            .unwrap()
    }

    fn get(&self, profile: &str) -> Option<u32> {
        self.0.lock().unwrap().0.get(profile).copied()
    }

    fn callbacks(&self) -> usize {
        self.0.lock().unwrap().1
    }
}

#[tokio::test]
async fn config_that_does_not_deserialize_is_invalid_before_any_callback() {
    let sizes = Sizes::default();
    let cluster = FakeCluster::new();
    let package = sizes.package();
    let c = build(
        &cluster,
        cluster.clock().as_fn(),
        vec![package.clone()],
        |_| {},
    );
    let secret = "hunter2-big";
    cluster.create(&widgets(), NS, "web", json!({"config": {"size": secret}}));

    let report = blue_kubernetes::reconcile(&c, &package, NS, "web")
        .await
        .unwrap();
    assert_eq!(
        report,
        Report::Reconciled(Phase::Invalid, Reason::InvalidConfiguration)
    );
    assert_eq!(sizes.callbacks(), 0, "neither validate nor converge ran");
    let object = cluster.get(&widgets(), NS, "web").unwrap();
    assert!(!object["status"].to_string().contains("hunter2"));

    cluster.edit_spec(&widgets(), NS, "web", |s| s["config"]["size"] = json!(3));
    let report = blue_kubernetes::reconcile(&c, &package, NS, "web")
        .await
        .unwrap();
    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(
        sizes.get(&World::profile("web")),
        Some(3),
        "converge got the typed value"
    );
}

#[tokio::test]
async fn reserved_keys_stay_out_of_the_typed_config() {
    let sizes = Sizes::default();
    let cluster = FakeCluster::new();
    let package = sizes.package();
    let c = build(
        &cluster,
        cluster.clock().as_fn(),
        vec![package.clone()],
        |_| {},
    );
    let config = json!({"size": 1, "profile": "p1", "compute-prevent-destroy": false});
    cluster.create(&widgets(), NS, "web", json!({ "config": config }));
    let report = blue_kubernetes::reconcile(&c, &package, NS, "web")
        .await
        .unwrap();
    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(sizes.get("p1"), Some(1));
}

/// The statuses of one lifecycle: Ready, Failed, Suspended, Blocked, released.
async fn lifecycle(cluster: &FakeCluster) -> Vec<Value> {
    let infra = blue_testkit::FakeInfra::new();
    let package = infra.package(widgets());
    let c = build(
        cluster,
        cluster.clock().as_fn(),
        vec![package.clone()],
        |_| {},
    );
    let d = widgets();
    let mut statuses = Vec::new();
    let mut step = |cluster: &FakeCluster| {
        cluster.clock().advance(120_000);
        statuses.push(cluster.get(&d, NS, "web").map(|o| o["status"].clone()));
    };
    let run = || blue_kubernetes::reconcile(&c, &package, NS, "web");
    cluster.create(
        &d,
        NS,
        "web",
        json!({"deletionPolicy": "Destroy", "config": {"value": 1}}),
    );
    run().await.unwrap();
    step(cluster);
    cluster.edit_spec(&d, NS, "web", |s| s["config"]["value"] = json!(2));
    infra.script(Step::Converge, Misbehaviour::Error);
    run().await.unwrap();
    step(cluster);
    cluster.set_annotation(&d, NS, "web", blue_kubernetes::REQUEST_ANNOTATION, "t1");
    cluster.edit_spec(&d, NS, "web", |s| s["suspend"] = json!(true));
    run().await.unwrap();
    step(cluster);
    cluster.edit_spec(&d, NS, "web", |s| {
        s["suspend"] = json!(false);
        s["config"]["compute-prevent-destroy"] = json!(true);
    });
    run().await.unwrap();
    cluster.delete(&d, NS, "web");
    run().await.unwrap();
    step(cluster);
    // Each FakeInfra has its own backend, so identities differ between runs.
    let mut statuses: Vec<Value> = statuses.into_iter().flatten().collect();
    for status in &mut statuses {
        let identity = status
            .as_object_mut()
            .and_then(|s| s.remove("stateIdentity"));
        assert!(identity.is_some_and(|i| i.is_string()));
    }
    statuses
}

#[tokio::test]
async fn the_generated_crd_keeps_every_status_field_the_controller_writes() {
    let plain = lifecycle(&FakeCluster::new()).await;
    let with_crd = FakeCluster::new();
    let infra_package = blue_testkit::FakeInfra::new().package(widgets());
    with_crd.install_crd(&crd(&infra_package, &CrdOptions::default()).unwrap(), "v1");
    let admitted = lifecycle(&with_crd).await;
    let phases: Vec<_> = admitted.iter().map(|s| s["phase"].clone()).collect();
    assert_eq!(phases, ["Ready", "Failed", "Suspended", "Blocked"]);
    assert_eq!(admitted[2]["lastHandledRequest"], "t1");
    assert_eq!(admitted, plain, "nothing pruned, nothing refused");
}

#[tokio::test]
async fn a_status_schema_without_fields_prunes_every_status_write() {
    let w = World::new();
    let mut definition = crd(&w.package, &CrdOptions::default()).unwrap();
    let status = "/spec/versions/0/schema/openAPIV3Schema/properties/status";
    *definition.pointer_mut(status).unwrap() = json!({"type": "object"});
    w.cluster.install_crd(&definition, "v1");
    w.create("web", spec(json!(1)));
    // The controller believes it wrote Ready...
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    // ...but the server kept none of it, exactly like a real one.
    assert_eq!(w.status("web"), json!({}));
}

#[tokio::test]
async fn a_status_write_the_schema_refuses_is_an_invalid_error() {
    let w = World::new();
    let mut definition = crd(&w.package, &CrdOptions::default()).unwrap();
    let phase = "/spec/versions/0/schema/openAPIV3Schema/properties/status/properties/phase";
    *definition.pointer_mut(phase).unwrap() = json!({"type": "string", "enum": ["Ready"]});
    w.cluster.install_crd(&definition, "v1");
    w.create("web", spec(json!(1)));
    let err = blue_kubernetes::reconcile(&w.controller, &w.package, NS, "web")
        .await
        .unwrap_err();
    let Error::Transport(e) = err else {
        panic!("{err}")
    };
    assert_eq!(e.kind(), blue_kubernetes_client::ErrorKind::Invalid);
}

#[test]
fn the_crd_defaults_common_fields_and_refuses_bad_ones() {
    let w = World::new();
    w.cluster
        .install_crd(&crd(&w.package, &CrdOptions::default()).unwrap(), "v1");
    let created = w.create(
        "web",
        json!({"config": {"value": 1, "extra": {"kept": true}}}),
    );
    assert_eq!(created["spec"]["reconcileInterval"], "60s");
    assert_eq!(created["spec"]["deletionPolicy"], "Retain");
    assert_eq!(
        created["spec"]["config"]["extra"]["kept"], true,
        "untyped config stays open"
    );
    for bad in [
        json!({"reconcileInterval": "1.5s"}),
        json!({"deletionPolicy": "Delete"}),
        json!({"config": {"compute-prevent-destroy": "yes"}}),
    ] {
        let object = json!({"metadata": {"name": "x"}, "spec": bad});
        assert!(w.cluster.admit(&widgets(), object).is_err(), "{bad}");
    }
}

fn custom() -> Names {
    Names {
        finalizer: "widgets.example.com/infrastructure".into(),
        request_annotation: "widgets.example.com/reconcile".into(),
        destroy_protection_key: "keep".into(),
    }
}

#[tokio::test]
async fn custom_names_replace_the_reference_ones() {
    let w = World::with(|c| c.names = custom());
    w.create(
        "web",
        json!({"deletionPolicy": "Destroy", "config": {"value": 1}}),
    );
    w.reconcile("web").await;
    assert_eq!(
        finalizers(&w.get("web")),
        ["widgets.example.com/infrastructure"]
    );

    // Only our request annotation asks for an early check.
    w.cluster.set_annotation(
        &widgets(),
        NS,
        "web",
        blue_kubernetes::REQUEST_ANNOTATION,
        "t1",
    );
    assert_eq!(w.reconcile("web").await, Report::NotDue);
    w.cluster
        .set_annotation(&widgets(), NS, "web", "widgets.example.com/reconcile", "t1");
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(w.status("web")["lastHandledRequest"], "t1");

    // Only our protection key blocks destruction.
    w.edit("web", |s| {
        s["config"]["compute-prevent-destroy"] = json!(true);
        s["config"]["keep"] = json!(true);
    });
    w.reconcile("web").await;
    w.cluster.delete(&widgets(), NS, "web");
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Blocked, Reason::DestructionProtected)
    );
    w.edit("web", |s| s["config"]["keep"] = json!(false));
    assert_eq!(w.reconcile("web").await, Report::Released);
    assert!(!w.exists("web"));
}

#[test]
fn unusable_names_are_refused_by_name() {
    let cluster = FakeCluster::new();
    let client: Arc<dyn Client> = Arc::new(cluster);
    let mut config = blue_kubernetes::Config::new(client, vec![Sizes::default().package()]);
    config.names.finalizer = "no-domain".into();
    let err = controller(config).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidConfig {
                field: "names.finalizer",
                ..
            }
        ),
        "{err}"
    );
}
