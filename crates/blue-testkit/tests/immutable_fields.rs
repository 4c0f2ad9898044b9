//! Immutable config fields declared on the schema, enforced by the
//! controller whatever the API server checks: an edit of one is `Invalid` /
//! `ImmutableField` (the field named in a Warning Event only), nothing runs
//! until it is reverted, Destroy waits for the revert and Retain releases.

mod common;
mod records;

use blue_kubernetes::crd::{self, CrdConfig};
use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes::Report;
use blue_kubernetes_client::{Client, ResourceDescriptor};
use blue_testkit::FakeCluster;
use common::{condition, finalizers, stretched, warnings, World, NS};
use records::{records_of, Dns};
use serde_json::{json, Value};

fn records() -> ResourceDescriptor {
    records_of("dns.example.com")
}

struct Rig {
    world: World,
    dns: Dns,
}

impl Rig {
    fn new() -> Self {
        Self::on(FakeCluster::new())
    }

    fn on(cluster: FakeCluster) -> Self {
        let dns = Dns::default();
        let package = |_: &_| dns.package("dns.example.com");
        let world = World::on(cluster, package, |c| {
            c.event_component = Some("dns-operator".into());
        });
        Self { world, dns }
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

    fn profile(name: &str) -> String {
        World::profile(name)
    }

    /// The Warning Events with `reason`: their messages.
    fn warnings(&self, reason: &str) -> Vec<String> {
        warnings(&self.cluster, reason)
    }
}

impl std::ops::Deref for Rig {
    type Target = World;

    fn deref(&self) -> &World {
        &self.world
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
    let crd = crd::generate(
        &Dns::default().package("dns.example.com"),
        &CrdConfig::default(),
    );
    let crd = crd.unwrap();
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
