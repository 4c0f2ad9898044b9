//! Typed configs: decoded once per pass, refused as Invalid before any
//! callback when they do not deserialize, logged without values.

mod common;

use blue_kubernetes::{Observation, Package, Phase, Reason, Report, WorkflowOutcome};
use blue_testkit::FakeCluster;
use common::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SizeConfig {
    size: u32,
}

/// Sizes by profile, and how many callbacks ran. Identity locks are
/// process-wide, so each test uses its own resource name.
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
                Ok(Observation::new(
                    have.is_some(),
                    have == Some(&c.size),
                    have.is_some(),
                ))
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
    cluster.create(
        &widgets(),
        NS,
        "undecodable",
        json!({"config": {"size": secret}}),
    );

    let report = blue_kubernetes::reconcile(&c, &package, NS, "undecodable")
        .await
        .unwrap();
    assert_eq!(
        report,
        Report::Reconciled(Phase::Invalid, Reason::InvalidConfiguration)
    );
    assert_eq!(sizes.callbacks(), 0, "neither validate nor converge ran");
    let object = cluster.get(&widgets(), NS, "undecodable").unwrap();
    assert!(!object["status"].to_string().contains("hunter2"));

    cluster.edit_spec(&widgets(), NS, "undecodable", |s| {
        s["config"]["size"] = json!(3)
    });
    let report = blue_kubernetes::reconcile(&c, &package, NS, "undecodable")
        .await
        .unwrap();
    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(
        sizes.get(&World::profile("undecodable")),
        Some(3),
        "converge got the typed value"
    );
}

#[test]
fn a_config_decode_failure_is_logged_at_info_without_the_value() {
    let sizes = Sizes::default();
    let cluster = FakeCluster::new();
    let package = sizes.package();
    let c = build(
        &cluster,
        cluster.clock().as_fn(),
        vec![package.clone()],
        |_| {},
    );
    cluster.create(
        &widgets(),
        NS,
        "logged",
        json!({"config": {"size": "hunter2"}}),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (report, lines) =
        log::capture(|| runtime.block_on(blue_kubernetes::reconcile(&c, &package, NS, "logged")));
    assert_eq!(
        report.unwrap(),
        Report::Reconciled(Phase::Invalid, Reason::InvalidConfiguration)
    );
    let logged: Vec<_> = lines
        .iter()
        .filter(|(_, l)| l.contains("config type"))
        .collect();
    assert_eq!(logged.len(), 1, "{lines:?}");
    let (level, line) = logged[0];
    assert_eq!(*level, tracing::Level::INFO);
    assert!(
        line.contains("error=invalid type: string \"...\", expected u32")
            && line.contains("name=\"logged\""),
        "{line}"
    );
    assert!(
        !lines.iter().any(|(_, l)| l.contains("hunter2")),
        "{lines:?}"
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
    cluster.create(&widgets(), NS, "reserved", json!({ "config": config }));
    let report = blue_kubernetes::reconcile(&c, &package, NS, "reserved")
        .await
        .unwrap();
    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(sizes.get("p1"), Some(1));
}
