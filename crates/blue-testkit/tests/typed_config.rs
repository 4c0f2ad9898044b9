//! Typed configs: decoded once per pass, refused as Invalid before any
//! callback when they do not deserialize, logged without values.

mod common;

use blue_kubernetes::{
    async_trait, CallbackResult, Context, IdentityContext, Infrastructure, Observation, Outcome,
    Package, Report, ResourceSchema,
};

use blue_kubernetes::package::{NoOutputs, ValidationErrors};

use blue_kubernetes::resource::{Phase, Reason};
use blue_testkit::FakeCluster;
use common::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
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
        Package::new(self.clone()).unwrap()
    }

    fn get(&self, profile: &str) -> Option<u32> {
        self.0.lock().unwrap().0.get(profile).copied()
    }

    fn callbacks(&self) -> usize {
        self.0.lock().unwrap().1
    }
}

type Cx = Context<SizeConfig>;

#[async_trait]
impl Infrastructure for Sizes {
    type Config = SizeConfig;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(widgets())
    }

    async fn validate(&self, _: &Cx) -> CallbackResult<ValidationErrors> {
        self.0.lock().unwrap().1 += 1;
        Ok(ValidationErrors::new())
    }

    async fn identity(
        &self,
        cx: &IdentityContext<SizeConfig>,
    ) -> CallbackResult<Vec<Option<String>>> {
        Ok(vec![Some(cx.profile().into())])
    }

    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<NoOutputs>> {
        let s = self.0.lock().unwrap();
        let have = s.0.get(cx.profile());
        let matches = have == Some(&cx.config().size);
        Ok(Observation::new(have.is_some(), matches, have.is_some()))
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let mut s = self.0.lock().unwrap();
        s.0.insert(cx.profile().into(), cx.config().size);
        s.1 += 1;
        Ok(Outcome::done())
    }

    async fn delete(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        self.0.lock().unwrap().0.remove(cx.profile());
        Ok(Outcome::done())
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
        line.contains("error=spec.config.size: invalid type: string \"...\", expected u32")
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

/// How often a `Counted` config was decoded (this test's own type).
static DECODES: AtomicUsize = AtomicUsize::new(0);

/// A config that counts its decodes.
#[derive(schemars::JsonSchema)]
struct Counted {
    #[allow(dead_code)]
    size: u32,
}

impl<'de> serde::Deserialize<'de> for Counted {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Raw {
            size: u32,
        }
        DECODES.fetch_add(1, Ordering::SeqCst);
        Raw::deserialize(d).map(|raw| Counted { size: raw.size })
    }
}

/// A package of `Counted` configs that counts its callbacks.
#[derive(Clone, Default)]
struct Calls(Arc<AtomicUsize>);

impl Calls {
    fn count(&self) -> CallbackResult<()> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[async_trait]
impl Infrastructure for Calls {
    type Config = Counted;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(widgets())
    }

    async fn validate(&self, _: &Context<Counted>) -> CallbackResult<ValidationErrors> {
        self.count().map(|()| ValidationErrors::new())
    }

    async fn identity(&self, cx: &IdentityContext<Counted>) -> CallbackResult<Vec<Option<String>>> {
        self.count().map(|()| vec![Some(cx.profile().into())])
    }

    async fn observe(&self, _: &Context<Counted>) -> CallbackResult<Observation<NoOutputs>> {
        let made = self.0.load(Ordering::SeqCst) > 3;
        self.count().map(|()| Observation::new(made, made, made))
    }

    async fn converge(&self, _: &Context<Counted>) -> CallbackResult<Outcome<NoOutputs>> {
        self.count().map(|()| Outcome::done())
    }

    async fn delete(&self, _: &Context<Counted>) -> CallbackResult<Outcome<NoOutputs>> {
        self.count().map(|()| Outcome::done())
    }
}

#[tokio::test]
async fn a_pass_decodes_the_config_once_not_once_per_callback() {
    let cluster = FakeCluster::new();
    let calls = Calls::default();
    let package = Package::new(calls.clone()).unwrap();
    let c = build(
        &cluster,
        cluster.clock().as_fn(),
        vec![package.clone()],
        |_| {},
    );
    cluster.create(&widgets(), NS, "counted", json!({"config": {"size": 1}}));
    let before = DECODES.load(Ordering::SeqCst);

    let report = blue_kubernetes::reconcile(&c, &package, NS, "counted")
        .await
        .unwrap();

    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    let (decodes, callbacks) = (
        DECODES.load(Ordering::SeqCst) - before,
        calls.0.load(Ordering::SeqCst),
    );
    assert!(
        callbacks >= 5,
        "identity, validate, observe, converge, observe: {callbacks}"
    );
    // The one-shot pass reads the resource twice (as listed, and again
    // under its lock): one decode for each snapshot, none per callback.
    assert!(decodes <= 2, "{decodes} decodes for {callbacks} callbacks");
}
