//! A referrer and the resource it references, deleted together: the
//! referrer's identity never depends on the referenced resource's outputs
//! (they are gone while that resource is deleted), so neither deletion is
//! held by a changed identity.

mod common;

use blue_kubernetes::package::WorkflowOutcome;
use blue_kubernetes::resource::Phase;
use blue_kubernetes::{reconcile, Observation, Package, Report, ResourceSchema};
use blue_kubernetes_client::ResourceDescriptor;
use blue_testkit::{FakeClock, FakeCluster, FakeInfra};
use common::{build, NS};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn zones() -> ResourceDescriptor {
    ResourceDescriptor::new("dns.example.com", "v1", "zones", "Zone")
}

fn record_sets() -> ResourceDescriptor {
    ResourceDescriptor::new("dns.example.com", "v1", "recordsets", "RecordSet")
}

/// A record set whose identity tries to name the zone by the id the zone
/// reports, as a new user's first package did. The closure form's
/// `identity` is handed options without the references' outputs (a trait
/// package's cannot even ask: `IdentityContext` has no accessor), so the
/// identity is the same before, during and after the zone's deletion.
/// `exists` is the record set on the DNS server.
fn record_set_package(exists: &Arc<AtomicBool>) -> Package {
    let (seen, made, gone) = (exists.clone(), exists.clone(), exists.clone());
    Package::builder(ResourceSchema::new(record_sets()).reference("zoneRef", zones()))
        .identity(|opts| {
            let zone_id = opts.referenced("zoneRef").map(Value::to_string);
            Ok(vec![
                Some("records".into()),
                zone_id,
                Some(opts.profile().into()),
            ])
        })
        .observe(move |_| {
            let exists = seen.load(Ordering::SeqCst);
            Ok(Observation::exists(exists).matching(exists).ready(exists))
        })
        .converge(move |_| {
            made.store(true, Ordering::SeqCst);
            Ok(WorkflowOutcome::new())
        })
        .delete(move |_| {
            gone.store(false, Ordering::SeqCst);
            Ok(WorkflowOutcome::new())
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_referrer_and_its_referenced_resource_deleted_together_are_both_released() {
    let (cluster, infra) = (FakeCluster::new(), FakeInfra::new());
    let zones_package = infra.package(zones());
    let record_exists = Arc::new(AtomicBool::new(false));
    let records_package = record_set_package(&record_exists);
    let packages = vec![zones_package.clone(), records_package.clone()];
    let c = build(&cluster, FakeClock::default().as_fn(), packages, |_| {});
    infra.set_outputs(&format!("{NS}--example-org"), json!({"id": "example.org."}));
    let destroy = |config: Value| json!({"deletionPolicy": "Destroy", "config": config});
    cluster.create(&zones(), NS, "example-org", destroy(json!({"value": 1})));
    let record = json!({"value": 2, "zoneRef": {"name": "example-org"}});
    cluster.create(&record_sets(), NS, "www", destroy(record));
    let ready = |r: Report| matches!(r, Report::Reconciled(Phase::Ready, _));
    assert!(ready(
        reconcile(&c, &zones_package, NS, "example-org")
            .await
            .unwrap()
    ));
    assert!(ready(
        reconcile(&c, &records_package, NS, "www").await.unwrap()
    ));

    // Deleted together; the zone goes first, so the record set's pass
    // sees no Ready zone (and no outputs) any more.
    cluster.delete(&zones(), NS, "example-org");
    cluster.delete(&record_sets(), NS, "www");
    let zone = reconcile(&c, &zones_package, NS, "example-org")
        .await
        .unwrap();
    let record = reconcile(&c, &records_package, NS, "www").await.unwrap();
    assert_eq!((zone, record), (Report::Released, Report::Released));
    assert_eq!(cluster.get(&zones(), NS, "example-org"), None);
    assert_eq!(cluster.get(&record_sets(), NS, "www"), None);
    assert!(
        !record_exists.load(Ordering::SeqCst),
        "the record set was destroyed"
    );
}
