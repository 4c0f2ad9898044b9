//! Immutable config fields declared on the schema, enforced by the
//! controller whatever the API server checks: an edit of one is `Invalid` /
//! `ImmutableField` (the field named in a Warning Event only), nothing runs
//! until it is reverted, Destroy waits for the revert and Retain releases.

mod common;

use blue_kubernetes::crd::{self, CrdConfig};
use blue_kubernetes::package::WorkflowOutcome;
use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes::{reconcile, Observation, Package, Report};
use blue_kubernetes_client::{Client, ResourceDescriptor};
use blue_testkit::{FakeClock, FakeCluster};
use common::{build, condition, finalizers, stretched, NS};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

fn records() -> ResourceDescriptor {
    ResourceDescriptor::new("dns.example.com", "v1", "records", "Record")
}

/// A DNS server: records by profile, each its `kind` and `content`.
#[derive(Clone, Default)]
struct Dns {
    records: Arc<Mutex<HashMap<String, Value>>>,
    converges: Arc<Mutex<usize>>,
}

impl Dns {
    fn record(&self, profile: &str) -> Option<Value> {
        self.records.lock().unwrap().get(profile).cloned()
    }

    fn converges(&self) -> usize {
        *self.converges.lock().unwrap()
    }
}

fn wanted(opts: &blue_kubernetes::package::CallbackInput) -> Value {
    json!({"kind": opts.get("kind"), "content": opts.get("content")})
}

/// A record package whose `kind` is immutable and not part of its
/// identity (the profile is): only the immutable-field rule protects it.
fn package(dns: &Dns) -> Package {
    let (observed, converged, deleted) = (dns.clone(), dns.clone(), dns.clone());
    Package::builder(records())
        .immutable("kind")
        .identity(|opts| Ok(vec![Some(opts.profile().into())]))
        .observe(move |opts| {
            let stored = observed.record(opts.profile());
            let matches = stored.as_ref() == Some(&wanted(opts));
            Ok(Observation::new(stored.is_some(), matches, true))
        })
        .converge(move |opts| {
            *converged.converges.lock().unwrap() += 1;
            let mut records = converged.records.lock().unwrap();
            records.insert(opts.profile().to_string(), wanted(opts));
            Ok(WorkflowOutcome::new())
        })
        .delete(move |opts| {
            deleted.records.lock().unwrap().remove(opts.profile());
            Ok(WorkflowOutcome::new())
        })
        .build()
        .unwrap()
}

struct Rig {
    cluster: FakeCluster,
    clock: FakeClock,
    dns: Dns,
    package: Package,
    controller: blue_kubernetes::Controller,
}

impl Rig {
    fn new() -> Self {
        Self::on(FakeCluster::new())
    }

    fn on(cluster: FakeCluster) -> Self {
        let clock = FakeClock::default();
        let cluster = cluster.with_clock(clock.clone());
        let dns = Dns::default();
        let package = package(&dns);
        let controller = build(&cluster, clock.as_fn(), vec![package.clone()], |c| {
            c.event_component = Some("dns-operator".into());
        });
        Self {
            cluster,
            clock,
            dns,
            package,
            controller,
        }
    }

    async fn reconcile(&self, name: &str) -> Report {
        reconcile(&self.controller, &self.package, NS, name)
            .await
            .expect("no transport failure")
    }

    fn create(&self, name: &str, config: Value, policy: &str) {
        let spec = json!({"config": config, "deletionPolicy": policy});
        self.cluster.create(&records(), NS, name, spec);
    }

    fn set(&self, name: &str, field: &str, value: Value) {
        self.cluster.edit_spec(&records(), NS, name, |s| {
            s["config"][field] = value;
        });
    }

    fn get(&self, name: &str) -> Option<Value> {
        self.cluster.get(&records(), NS, name)
    }

    fn status(&self, name: &str) -> Value {
        self.get(name).expect("exists")["status"].clone()
    }

    fn profile(name: &str) -> String {
        format!("{NS}--{name}")
    }

    /// The Warning Events with `reason`: their messages.
    fn warnings(&self, reason: &str) -> Vec<String> {
        let events = self.cluster.events();
        let warnings = events
            .iter()
            .filter(|e| e["type"] == "Warning" && e["reason"] == reason);
        warnings
            .map(|e| e["message"].as_str().unwrap().to_string())
            .collect()
    }
}

const READY: Report = Report::Reconciled(Phase::Ready, Reason::Converged);
const IMMUTABLE: Report = Report::Reconciled(Phase::Invalid, Reason::ImmutableField);

fn www() -> Value {
    json!({"kind": "A", "content": "192.0.2.1"})
}

#[tokio::test]
async fn an_edited_immutable_field_is_invalid_until_the_edit_is_reverted() {
    let rig = Rig::new();
    rig.create("www", www(), "Retain");
    assert_eq!(rig.reconcile("www").await, READY);
    let digest = rig.status("www")["immutableDigest"].clone();
    assert!(digest.is_string(), "the accepted values are recorded");

    rig.set("www", "kind", json!("AAAA"));
    assert_eq!(rig.reconcile("www").await, IMMUTABLE);

    let status = rig.status("www");
    assert_eq!(
        status["immutableDigest"], digest,
        "the accepted digest is kept"
    );
    assert_eq!(condition(&status, "Stalled")["status"], "True");
    assert_eq!(condition(&status, "Ready")["status"], "False");
    let record = rig.dns.record(&Rig::profile("www")).unwrap();
    assert_eq!(record["kind"], "A", "nothing ran with the new kind");
    assert_eq!(rig.dns.converges(), 1);
    // The field is named to the user in a Warning Event, never in status.
    let warnings = rig.warnings("ImmutableField");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("config.kind"), "{warnings:?}");
    assert!(!status.to_string().contains("config.kind"), "{status}");
    assert!(!status.to_string().contains("AAAA"), "{status}");
    let metrics = rig.controller.metrics().encode();
    let stalled =
        r#"blue_stalled_total{controller="records.dns.example.com",reason="ImmutableField"} 1"#;
    assert!(metrics.contains(stalled), "{metrics}");
    // Invalid waits for an edit: no periodic check.
    rig.clock.advance(stretched(60_000));
    assert_eq!(rig.reconcile("www").await, Report::NotDue);

    rig.set("www", "kind", json!("A"));
    assert_eq!(rig.reconcile("www").await, READY);
    assert_eq!(rig.status("www")["immutableDigest"], digest);
    assert_eq!(rig.dns.converges(), 1, "already matching: nothing to do");
}

#[tokio::test]
async fn adding_or_removing_an_immutable_field_is_an_edit_of_it() {
    let rig = Rig::new();
    rig.create("www", json!({"content": "192.0.2.1"}), "Retain");
    assert_eq!(rig.reconcile("www").await, READY);

    rig.set("www", "kind", json!("A"));
    assert_eq!(rig.reconcile("www").await, IMMUTABLE, "added");
    rig.cluster.edit_spec(&records(), NS, "www", |s| {
        s["config"].as_object_mut().unwrap().remove("kind");
    });
    assert_eq!(rig.reconcile("www").await, READY, "removed again");

    rig.create("mail", www(), "Retain");
    assert_eq!(rig.reconcile("mail").await, READY);
    rig.cluster.edit_spec(&records(), NS, "mail", |s| {
        s["config"].as_object_mut().unwrap().remove("kind");
    });
    assert_eq!(rig.reconcile("mail").await, IMMUTABLE, "removed");
}

#[tokio::test]
async fn other_fields_stay_editable() {
    let rig = Rig::new();
    rig.create("www", www(), "Retain");
    rig.reconcile("www").await;

    rig.set("www", "content", json!("192.0.2.7"));
    assert_eq!(rig.reconcile("www").await, READY);
    let record = rig.dns.record(&Rig::profile("www")).unwrap();
    assert_eq!(record["content"], "192.0.2.7");
}

#[tokio::test]
async fn destroy_waits_for_the_revert_of_an_immutable_field() {
    let rig = Rig::new();
    rig.create("www", www(), "Destroy");
    rig.reconcile("www").await;
    rig.set("www", "kind", json!("CNAME"));
    rig.cluster.delete(&records(), NS, "www");

    assert_eq!(rig.reconcile("www").await, IMMUTABLE);
    assert!(
        rig.dns.record(&Rig::profile("www")).is_some(),
        "not deleted"
    );
    let object = rig.get("www").expect("held by our finalizer");
    assert_eq!(finalizers(&object).len(), 1);

    rig.set("www", "kind", json!("A"));
    assert_eq!(rig.reconcile("www").await, Report::Released);
    assert!(rig.dns.record(&Rig::profile("www")).is_none(), "deleted");
    assert!(rig.get("www").is_none());
}

#[tokio::test]
async fn retain_releases_a_resource_with_an_edited_immutable_field() {
    let rig = Rig::new();
    rig.create("www", www(), "Retain");
    rig.reconcile("www").await;
    rig.set("www", "kind", json!("CNAME"));
    assert_eq!(rig.reconcile("www").await, IMMUTABLE);
    rig.cluster.delete(&records(), NS, "www");

    assert_eq!(rig.reconcile("www").await, Report::Released);
    assert!(rig.get("www").is_none());
    let record = rig.dns.record(&Rig::profile("www")).unwrap();
    assert_eq!(record["kind"], "A", "retained as it was");
}

#[tokio::test]
async fn a_resource_without_a_digest_gets_one_at_its_next_pass() {
    let rig = Rig::new();
    rig.create("www", www(), "Retain");
    rig.reconcile("www").await;
    // As a controller before digests left it.
    let object = rig.get("www").unwrap();
    let mut old = object["status"].clone();
    old.as_object_mut().unwrap().remove("immutableDigest");
    rig.cluster
        .update_status(&records(), &object, &old)
        .await
        .unwrap();
    assert!(rig.status("www").get("immutableDigest").is_none());

    rig.clock.advance(stretched(60_000));
    assert_eq!(
        rig.reconcile("www").await,
        READY,
        "never refused for lacking one"
    );
    assert!(rig.status("www")["immutableDigest"].is_string());

    rig.set("www", "kind", json!("AAAA"));
    assert_eq!(
        rig.reconcile("www").await,
        IMMUTABLE,
        "and enforced from then on"
    );
}

#[tokio::test]
async fn with_cel_the_crd_carries_the_same_rule_and_the_controller_decides_the_same() {
    let dns = Dns::default();
    let crd = crd::generate(&package(&dns), &CrdConfig::default()).unwrap();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let config = &schema["properties"]["spec"]["properties"]["config"];
    let rules = config["x-kubernetes-validations"].as_array().unwrap();
    let kind = rules.iter().find(|r| r["message"] == "kind is immutable");
    assert_eq!(
        kind.expect("the declared field has its CEL rule")["rule"],
        "has(self.kind) == has(oldSelf.kind) && (!has(self.kind) || self.kind == oldSelf.kind)"
    );
    let status = &schema["properties"]["status"]["properties"];
    assert_eq!(status["immutableDigest"]["type"], "string");

    // An edit that reached the object anyway (this fake, like a server
    // before 1.25, evaluates no CEL): the controller refuses it alike.
    let cluster = FakeCluster::new();
    cluster.install_crd(&crd, "v1");
    let rig = Rig::on(cluster);
    rig.create("www", www(), "Retain");
    assert_eq!(rig.reconcile("www").await, READY);
    rig.set("www", "kind", json!("AAAA"));
    assert_eq!(rig.reconcile("www").await, IMMUTABLE);
    rig.set("www", "kind", json!("A"));
    assert_eq!(rig.reconcile("www").await, READY);
}
