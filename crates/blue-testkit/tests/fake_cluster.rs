//! FakeCluster behaves like the API server where the controller can tell.

use blue_kubernetes_client::{Client, ErrorKind, ResourceDescriptor};
use blue_testkit::{CallCounts, FakeClock, FakeCluster, Fault, Operation, RecordedCall};
use serde_json::{json, Value};
use std::time::Duration;

const NS: &str = "default";
const FINALIZER: &str = "colors.getcolors.ai/infrastructure";

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

fn rv(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion is a string")
        .parse()
        .expect("resourceVersion is a number")
}

fn generation(object: &Value) -> u64 {
    object["metadata"]["generation"]
        .as_u64()
        .expect("generation")
}

fn finalizers(list: &[&str]) -> Vec<String> {
    list.iter().map(|f| (*f).to_owned()).collect()
}

#[test]
fn created_objects_carry_server_metadata() {
    let clock = FakeClock::new(blue_testkit::DEFAULT_START_MS + 61_000);
    let cluster = FakeCluster::new().with_clock(clock);
    let a = cluster.create(&widgets(), NS, "a", json!({"size": 1}));
    let b = cluster.create(&widgets(), NS, "b", json!({}));
    assert_eq!(a["apiVersion"], "example.com/v1");
    assert_eq!(a["kind"], "Widget");
    assert_eq!(a["metadata"]["name"], "a");
    assert_eq!(a["metadata"]["namespace"], NS);
    assert_eq!(a["metadata"]["generation"], 1);
    assert_eq!(a["metadata"]["creationTimestamp"], "2024-01-01T00:01:01Z");
    assert_eq!(a["spec"], json!({"size": 1}));
    assert_ne!(a["metadata"]["uid"], b["metadata"]["uid"]);
    assert!(rv(&b) > rv(&a));
}

#[test]
#[should_panic(expected = "create_with")]
fn creating_an_existing_object_panics() {
    let cluster = FakeCluster::new();
    cluster.create(&widgets(), NS, "a", json!({}));
    cluster.create(&widgets(), NS, "a", json!({}));
}

#[tokio::test]
async fn stale_write_is_conflict() {
    let cluster = FakeCluster::new();
    let snapshot = cluster.create(&widgets(), NS, "a", json!({}));
    cluster.set_annotation(&widgets(), NS, "a", "k", "v");

    let status = cluster
        .update_status(&widgets(), &snapshot, &json!({"phase": "Ready"}))
        .await
        .unwrap_err();
    assert_eq!(status.kind(), ErrorKind::Conflict);
    assert_eq!(
        status.to_string(),
        "kubectl replace failed with exit code 1 (conflict)"
    );
    let patch = cluster
        .update_finalizers(&widgets(), &snapshot, &finalizers(&[FINALIZER]))
        .await
        .unwrap_err();
    assert_eq!(patch.kind(), ErrorKind::Conflict);
    assert!(patch.to_string().starts_with("kubectl patch"));

    let stored = cluster.get(&widgets(), NS, "a").unwrap();
    assert!(stored.get("status").is_none());
    assert!(stored["metadata"].get("finalizers").is_none());
}

#[tokio::test]
async fn writes_to_a_recreated_or_missing_object_fail() {
    let cluster = FakeCluster::new();
    let old = cluster.create(&widgets(), NS, "a", json!({}));
    cluster.delete(&widgets(), NS, "a");
    let missing = cluster
        .update_status(&widgets(), &old, &json!({}))
        .await
        .unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound);

    cluster.create(&widgets(), NS, "a", json!({}));
    // Same name, new uid: even a matching resourceVersion would not do.
    let mut forged = old.clone();
    forged["metadata"]["resourceVersion"] =
        cluster.get(&widgets(), NS, "a").unwrap()["metadata"]["resourceVersion"].clone();
    let recreated = cluster
        .update_finalizers(&widgets(), &forged, &[])
        .await
        .unwrap_err();
    assert_eq!(recreated.kind(), ErrorKind::Conflict);
}

#[tokio::test]
async fn every_write_bumps_the_resource_version() {
    let cluster = FakeCluster::new();
    let d = widgets();
    let mut last = rv(&cluster.create(&d, NS, "a", json!({"size": 1})));
    let mut check = |object: Value| {
        let now = rv(&object);
        assert!(now > last, "{now} after {last}");
        assert_eq!(now, cluster.revision(), "a global counter");
        last = now;
    };
    check(cluster.edit_spec(&d, NS, "a", |s| s["size"] = json!(2)));
    check(cluster.edit_spec(&d, NS, "a", |_| {}));
    check(cluster.set_annotation(&d, NS, "a", "k", "v"));
    let fresh = cluster.get(&d, NS, "a").unwrap();
    check(
        cluster
            .update_status(&d, &fresh, &json!({"phase": "Ready"}))
            .await
            .unwrap(),
    );
    let fresh = cluster.get(&d, NS, "a").unwrap();
    check(
        cluster
            .update_finalizers(&d, &fresh, &finalizers(&[FINALIZER]))
            .await
            .unwrap(),
    );
    check(cluster.delete(&d, NS, "a").unwrap());
    // Another object shares the counter.
    check(cluster.create(&d, NS, "b", json!({})));
}

#[tokio::test]
async fn generation_bumps_on_spec_edits_only() {
    let cluster = FakeCluster::new();
    let d = widgets();
    cluster.create_with(
        &d,
        json!({"metadata": {"name": "a", "finalizers": ["other/x"]}, "spec": {"size": 1}}),
    );
    assert_eq!(
        generation(&cluster.set_annotation(&d, NS, "a", "k", "v")),
        1
    );
    assert_eq!(
        generation(&cluster.edit_spec(&d, NS, "a", |s| s["size"] = json!(1))),
        1
    );
    let fresh = cluster.get(&d, NS, "a").unwrap();
    let status = cluster
        .update_status(&d, &fresh, &json!({"phase": "Ready"}))
        .await;
    assert_eq!(generation(&status.unwrap()), 1);
    let fresh = cluster.get(&d, NS, "a").unwrap();
    let fin = cluster
        .update_finalizers(&d, &fresh, &finalizers(&["other/x", FINALIZER]))
        .await;
    assert_eq!(generation(&fin.unwrap()), 1);
    assert_eq!(generation(&cluster.delete(&d, NS, "a").unwrap()), 1);

    // Spec edits bump it, also on a deleting object.
    assert_eq!(
        generation(&cluster.edit_spec(&d, NS, "a", |s| s["size"] = json!(2))),
        2
    );
    let edited = cluster.edit(&d, NS, "a", |o| {
        o["spec"]["size"] = json!(3);
        o["status"] = json!({"phase": "forged"});
        o["metadata"]["generation"] = json!(99);
    });
    assert_eq!(generation(&edited), 3);
    assert_eq!(edited["status"]["phase"], "Ready", "status is not editable");
}

#[tokio::test]
async fn status_write_does_not_change_spec_or_finalizers() {
    let cluster = FakeCluster::new();
    let d = widgets();
    let created = cluster.create_with(
        &d,
        json!({"metadata": {"name": "a", "finalizers": ["other/x"], "annotations": {"k": "v"}},
               "spec": {"size": 1}}),
    );
    let mut forged = created.clone();
    forged["spec"] = json!({"size": 100});
    forged["metadata"]["finalizers"] = json!([]);
    let updated = cluster
        .update_status(&d, &forged, &json!({"phase": "Ready"}))
        .await
        .unwrap();
    assert_eq!(updated["spec"], json!({"size": 1}));
    assert_eq!(updated["metadata"]["finalizers"], json!(["other/x"]));
    assert_eq!(updated["metadata"]["annotations"], json!({"k": "v"}));
    assert_eq!(updated["status"], json!({"phase": "Ready"}));
    assert_eq!(
        cluster.get(&d, NS, "a").unwrap(),
        updated,
        "returns the stored object"
    );

    // The status is replaced, not merged.
    let replaced = cluster
        .update_status(&d, &updated, &json!({"retryCount": 1}))
        .await
        .unwrap();
    assert_eq!(replaced["status"], json!({"retryCount": 1}));
}

#[tokio::test]
async fn deleting_with_finalizers_waits_for_the_last_one() {
    let clock = FakeClock::new(blue_testkit::DEFAULT_START_MS);
    let cluster = FakeCluster::new().with_clock(clock.clone());
    let d = widgets();
    cluster.create_with(
        &d,
        json!({"metadata": {"name": "a", "finalizers": ["other/x", FINALIZER]}}),
    );
    clock.advance(5_000);
    let deleting = cluster.delete(&d, NS, "a").expect("kept by finalizers");
    assert_eq!(
        deleting["metadata"]["deletionTimestamp"],
        "2024-01-01T00:00:05Z"
    );

    // Deleting again changes nothing.
    clock.advance(5_000);
    assert_eq!(cluster.delete(&d, NS, "a").unwrap(), deleting);

    // No new finalizer may be added to a deleting object.
    let added = cluster
        .update_finalizers(
            &d,
            &deleting,
            &finalizers(&["other/x", FINALIZER, "new/one"]),
        )
        .await
        .unwrap_err();
    assert_eq!(added.kind(), ErrorKind::Invalid);

    let one_left = cluster
        .update_finalizers(&d, &deleting, &finalizers(&["other/x"]))
        .await
        .unwrap();
    assert_eq!(one_left["metadata"]["finalizers"], json!(["other/x"]));
    assert!(cluster.get(&d, NS, "a").is_some());

    let last = cluster.update_finalizers(&d, &one_left, &[]).await.unwrap();
    assert!(last["metadata"].get("finalizers").is_none());
    assert_eq!(
        last["metadata"]["deletionTimestamp"],
        "2024-01-01T00:00:05Z"
    );
    assert!(cluster.get(&d, NS, "a").is_none());
    assert!(cluster.list_resources(&d, NS).await.unwrap().is_empty());
}

#[tokio::test]
async fn deleting_without_finalizers_removes_immediately() {
    let cluster = FakeCluster::new();
    let d = widgets();
    cluster.create(&d, NS, "a", json!({}));
    assert!(cluster.delete(&d, NS, "a").is_none());
    assert!(cluster.get(&d, NS, "a").is_none());
    assert_eq!(cluster.get_resource(&d, NS, "a").await.unwrap(), None);
    assert!(
        cluster.delete(&d, NS, "a").is_none(),
        "deleting twice is harmless"
    );
}

#[tokio::test]
async fn injected_fault_applies_once_and_has_no_effect() {
    let cluster = FakeCluster::new();
    let d = widgets();
    let a = cluster.create(&d, NS, "a", json!({}));
    let before = cluster.revision();

    cluster.inject(Operation::UpdateStatus, Fault::Unavailable);
    let err = cluster
        .update_status(&d, &a, &json!({"phase": "Ready"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(cluster.revision(), before, "nothing was written");
    assert!(cluster.get(&d, NS, "a").unwrap().get("status").is_none());

    cluster.inject(
        Operation::UpdateFinalizers,
        Fault::Kind(ErrorKind::Forbidden),
    );
    cluster.inject(Operation::UpdateFinalizers, Fault::Conflict);
    let fins = finalizers(&[FINALIZER]);
    let first = cluster.update_finalizers(&d, &a, &fins).await.unwrap_err();
    let second = cluster.update_finalizers(&d, &a, &fins).await.unwrap_err();
    assert_eq!(
        (first.kind(), second.kind()),
        (ErrorKind::Forbidden, ErrorKind::Conflict)
    );
    assert_eq!(cluster.revision(), before);

    // Faults were used up: the same snapshot now writes.
    cluster
        .update_status(&d, &a, &json!({"phase": "Ready"}))
        .await
        .unwrap();
    assert_eq!(cluster.revision(), before + 1);
}

#[tokio::test]
async fn fail_always_until_cleared() {
    let cluster = FakeCluster::new();
    let d = widgets();
    cluster.create(&d, NS, "a", json!({}));
    cluster.fail_always(Operation::List, Some(Fault::Unavailable));
    for _ in 0..3 {
        let err = cluster.list_resources(&d, NS).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unavailable);
    }
    assert!(
        cluster.get_resource(&d, NS, "a").await.unwrap().is_some(),
        "other operations work"
    );
    cluster.fail_always(Operation::List, None);
    assert_eq!(cluster.list_resources(&d, NS).await.unwrap().len(), 1);

    cluster.fail_always(Operation::Get, Some(Fault::Conflict));
    cluster.inject(Operation::List, Fault::Conflict);
    cluster.clear_faults();
    assert!(cluster.get_resource(&d, NS, "a").await.is_ok());
    assert!(cluster.list_resources(&d, NS).await.is_ok());
}

#[tokio::test]
async fn calls_are_counted_and_logged_including_faulted_ones() {
    let cluster = FakeCluster::new();
    let d = widgets();
    let a = cluster.create(&d, NS, "a", json!({}));
    cluster.get(&d, NS, "a");
    cluster.list(&d, NS);
    assert_eq!(
        cluster.calls(),
        CallCounts::default(),
        "user-side reads are free"
    );

    cluster.inject(Operation::List, Fault::Unavailable);
    let _ = cluster.list_resources(&d, NS).await;
    cluster.list_resources(&d, NS).await.unwrap();
    cluster.get_resource(&d, NS, "a").await.unwrap();
    let a = cluster.update_status(&d, &a, &json!({})).await.unwrap();
    cluster.update_finalizers(&d, &a, &[]).await.unwrap();
    assert_eq!(
        cluster.calls(),
        CallCounts {
            list: 2,
            get: 1,
            update_status: 1,
            update_finalizers: 1,
            leases: 0,
            ..CallCounts::default()
        }
    );
    let plural = "widgets.example.com";
    assert_eq!(
        cluster.call_log(),
        [
            RecordedCall::new(Operation::List, plural, NS, None),
            RecordedCall::new(Operation::List, plural, NS, None),
            RecordedCall::new(Operation::Get, plural, NS, Some("a")),
            RecordedCall::new(Operation::UpdateStatus, plural, NS, Some("a")),
            RecordedCall::new(Operation::UpdateFinalizers, plural, NS, Some("a")),
        ]
    );
    cluster.reset_calls();
    assert_eq!(cluster.calls().total(), 0);
    assert!(cluster.call_log().is_empty());
}

#[tokio::test]
async fn lists_are_sorted_by_name_scoped_and_deep_copies() {
    let cluster = FakeCluster::new();
    let d = widgets();
    let gadgets = ResourceDescriptor::new("example.com", "v1", "gadgets", "Gadget");
    for name in ["c", "a", "b"] {
        cluster.create(&d, NS, name, json!({"n": name}));
    }
    cluster.create(&d, "other", "a", json!({}));
    cluster.create(&gadgets, NS, "z", json!({}));
    let mut items = cluster.list_resources(&d, NS).await.unwrap();
    let names: Vec<&str> = items
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b", "c"]);

    items[0]["spec"]["n"] = json!("mutated");
    assert_eq!(cluster.get(&d, NS, "a").unwrap()["spec"]["n"], "a");
}

#[tokio::test(start_paused = true)]
async fn latency_is_honoured_under_paused_time() {
    let cluster = FakeCluster::new();
    let d = widgets();
    cluster.create(&d, NS, "a", json!({}));
    cluster.set_latency(Duration::from_millis(250));
    let start = tokio::time::Instant::now();
    cluster.list_resources(&d, NS).await.unwrap();
    cluster.get_resource(&d, NS, "a").await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(500));

    // A call in flight has been counted but has not yet taken effect.
    let a = cluster.get(&d, NS, "a").unwrap();
    let writer = {
        let cluster = cluster.clone();
        let d = d.clone();
        tokio::spawn(async move {
            cluster
                .update_status(&d, &a, &json!({"phase": "Ready"}))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(cluster.calls().update_status, 1);
    assert!(cluster.get(&d, NS, "a").unwrap().get("status").is_none());
    writer.await.unwrap().unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(750));
    assert_eq!(
        cluster.get(&d, NS, "a").unwrap()["status"]["phase"],
        "Ready"
    );
}

#[tokio::test]
async fn clones_share_one_cluster() {
    let cluster = FakeCluster::new();
    let other = cluster.clone();
    other.create(&widgets(), NS, "a", json!({}));
    cluster.list_resources(&widgets(), NS).await.unwrap();
    assert_eq!(other.calls().list, 1);
    assert!(cluster.get(&widgets(), NS, "a").is_some());
}

#[tokio::test]
async fn writes_without_a_resource_version() {
    let cluster = FakeCluster::new();
    let d = widgets();
    cluster.create(&d, NS, "a", json!({}));
    let bare = json!({"metadata": {"name": "a", "namespace": NS}});
    // A replace must carry one; a merge patch need not.
    let err = cluster
        .update_status(&d, &bare, &json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid);
    let patched = cluster
        .update_finalizers(&d, &bare, &finalizers(&[FINALIZER]))
        .await
        .unwrap();
    assert_eq!(patched["metadata"]["finalizers"], json!([FINALIZER]));
}
