//! FakeCluster's watch streams: replay from a resourceVersion, live
//! changes, 410 Gone behind the history, bookmarks, and every injectable
//! watch fault. Deterministic: a stream with nothing to deliver is seen
//! with `now_or_never`, never by waiting.

use blue_kubernetes_client::{
    Client, Error, ErrorKind, PageRequest, ResourceDescriptor, WatchEvent, WatchRequest,
    WatchStream,
};
use blue_testkit::{FakeCluster, Fault, Operation};
use futures::{FutureExt, StreamExt};
use serde_json::{json, Value};

const NS: &str = "dev";

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

fn request(resource_version: &str, bookmarks: bool) -> WatchRequest {
    WatchRequest {
        resource_version: resource_version.into(),
        timeout_seconds: 300,
        bookmarks,
        label_selector: None,
    }
}

async fn watch(cluster: &FakeCluster, ns: &str, from: &str, bookmarks: bool) -> WatchStream {
    cluster
        .watch(&widgets(), ns, &request(from, bookmarks))
        .await
        .expect("the watch opens")
}

/// The next item, which must be there already.
fn next_now(stream: &mut WatchStream) -> Option<Result<WatchEvent, Error>> {
    stream
        .next()
        .now_or_never()
        .expect("an item (or the end) is ready")
}

fn event(stream: &mut WatchStream) -> WatchEvent {
    next_now(stream).expect("not ended").expect("not an error")
}

fn quiet(stream: &mut WatchStream) -> bool {
    stream.next().now_or_never().is_none()
}

/// `TYPE name@rv` of an event, e.g. `MODIFIED a@3`.
fn show(event: &WatchEvent) -> String {
    let (kind, object): (&str, &Value) = match event {
        WatchEvent::Added(o) => ("ADDED", o),
        WatchEvent::Modified(o) => ("MODIFIED", o),
        WatchEvent::Deleted(o) => ("DELETED", o),
        WatchEvent::Bookmark { resource_version } => return format!("BOOKMARK {resource_version}"),
    };
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let rv = event.resource_version().unwrap_or_default();
    format!("{kind} {name}@{rv}")
}

fn drain(stream: &mut WatchStream) -> Vec<String> {
    let mut seen = Vec::new();
    while let Some(Some(item)) = stream.next().now_or_never() {
        seen.push(show(&item.expect("not an error")));
    }
    seen
}

#[tokio::test]
async fn a_watch_replays_every_write_after_its_version_then_streams_live() {
    let cluster = FakeCluster::new();
    let d = widgets();
    cluster.create(&d, NS, "a", json!({}));
    let from = cluster.revision().to_string();
    let listed = cluster.get_resource(&d, NS, "a").await.unwrap().unwrap();
    // Every kind of write: spec edit, status, finalizers, deletion
    // request, deletion by the last finalizer's removal.
    cluster.edit_spec(&d, NS, "a", |s| s["size"] = json!(2));
    let a = cluster.get(&d, NS, "a").unwrap();
    let a = cluster
        .update_status(&d, &a, &json!({"phase": "Ready"}))
        .await;
    let kept = vec!["x/y".to_owned()];
    let a = cluster.update_finalizers(&d, &a.unwrap(), &kept).await;
    let deleting = cluster.delete(&d, NS, "a").unwrap();
    cluster.update_finalizers(&d, &deleting, &[]).await.unwrap();
    assert_eq!(listed["metadata"]["resourceVersion"], "1");
    assert!(a.is_ok());

    let mut stream = watch(&cluster, NS, &from, false).await;
    assert_eq!(
        drain(&mut stream),
        [
            "MODIFIED a@2",
            "MODIFIED a@3",
            "MODIFIED a@4",
            "MODIFIED a@5",
            "DELETED a@6"
        ]
    );
    assert!(quiet(&mut stream), "caught up, the stream waits");

    cluster.create(&d, NS, "b", json!({}));
    assert_eq!(show(&stream.next().await.unwrap().unwrap()), "ADDED b@7");
    // A delete without finalizers is one DELETED event with a new version.
    cluster.delete(&d, NS, "b");
    assert_eq!(show(&event(&mut stream)), "DELETED b@8");
    assert_eq!(cluster.calls().watch, 1);
    let stats = cluster.watch_stats();
    assert_eq!((stats.opened, stats.open, stats.events), (1, 1, 7));
    drop(stream);
    assert_eq!(cluster.watch_stats().open, 0, "a dropped stream is closed");
}

#[tokio::test]
async fn a_watch_sees_its_namespace_or_all_and_only_its_type() {
    let cluster = FakeCluster::new();
    let d = widgets();
    let gadgets = ResourceDescriptor::new("example.com", "v1", "gadgets", "Gadget");
    let mut dev = watch(&cluster, NS, "0", false).await;
    let mut all = watch(&cluster, "", "0", false).await;
    cluster.create(&d, NS, "a", json!({}));
    cluster.create(&d, "prod", "b", json!({}));
    cluster.create(&gadgets, NS, "g", json!({}));
    assert_eq!(drain(&mut dev), ["ADDED a@1"]);
    assert_eq!(drain(&mut all), ["ADDED a@1", "ADDED b@2"]);
}

#[tokio::test]
async fn a_watch_from_zero_starts_with_the_current_objects() {
    let cluster = FakeCluster::new();
    let d = widgets();
    cluster.create(&d, NS, "b", json!({}));
    cluster.create(&d, NS, "a", json!({}));
    cluster.edit_spec(&d, NS, "b", |s| s["size"] = json!(1));
    let mut stream = watch(&cluster, NS, "0", false).await;
    assert_eq!(drain(&mut stream), ["ADDED a@2", "ADDED b@3"]);
}

#[tokio::test]
async fn a_watch_from_before_the_history_fails_with_gone_first() {
    let cluster = FakeCluster::new();
    let d = widgets();
    cluster.create(&d, NS, "a", json!({}));
    cluster.edit_spec(&d, NS, "a", |s| s["size"] = json!(1));
    cluster.compact_history(2);

    let mut old = watch(&cluster, NS, "1", false).await;
    let err = next_now(&mut old).unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Gone);
    assert!(next_now(&mut old).is_none(), "the error is the last item");

    let mut current = watch(&cluster, NS, "2", false).await;
    assert!(quiet(&mut current));
    assert_eq!(cluster.watch_stats().gone, 1);

    let bad = cluster.watch(&d, NS, &request("x", false)).await;
    assert_eq!(bad.err().map(|e| e.kind()), Some(ErrorKind::Invalid));
}

#[tokio::test]
async fn a_lagging_stream_expires_when_its_history_is_dropped() {
    let cluster = FakeCluster::new();
    let d = widgets();
    cluster.create(&d, NS, "a", json!({}));
    cluster.set_history_limit(2);
    let mut stream = watch(&cluster, NS, "1", false).await;
    for size in 0..3 {
        cluster.edit_spec(&d, NS, "a", |s| s["size"] = json!(size));
    }
    let err = next_now(&mut stream).unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Gone);
}

#[tokio::test]
async fn bookmarks_come_when_caught_up_and_on_demand_if_asked_for() {
    let cluster = FakeCluster::new();
    let d = widgets();
    cluster.create(&d, NS, "a", json!({}));
    let mut marked = watch(&cluster, NS, "0", true).await;
    let mut plain = watch(&cluster, NS, "0", false).await;
    assert_eq!(drain(&mut marked), ["ADDED a@1", "BOOKMARK 1"]);
    assert_eq!(drain(&mut plain), ["ADDED a@1"]);

    // Another type's writes move the bookmark forward.
    let gadgets = ResourceDescriptor::new("example.com", "v1", "gadgets", "Gadget");
    cluster.create(&gadgets, NS, "g", json!({}));
    cluster.send_bookmarks();
    assert_eq!(drain(&mut marked), ["BOOKMARK 2"]);
    assert!(drain(&mut plain).is_empty());

    // Pending changes come before the bookmark.
    cluster.edit_spec(&d, NS, "a", |s| s["size"] = json!(1));
    cluster.send_bookmarks();
    assert_eq!(drain(&mut marked), ["MODIFIED a@3", "BOOKMARK 3"]);
    assert_eq!(cluster.watch_stats().bookmarks, 3);
}

#[tokio::test]
async fn dropped_events_are_skipped_and_a_bookmark_moves_past_them() {
    let cluster = FakeCluster::new();
    let d = widgets();
    let mut stream = watch(&cluster, NS, "0", true).await;
    assert_eq!(drain(&mut stream), ["BOOKMARK 0"]);
    cluster.drop_watch_events(2);
    cluster.create(&d, NS, "a", json!({}));
    cluster.create(&d, NS, "b", json!({}));
    cluster.create(&d, NS, "c", json!({}));
    cluster.send_bookmarks();
    assert_eq!(drain(&mut stream), ["ADDED c@3", "BOOKMARK 3"]);
    assert_eq!(cluster.watch_stats().dropped, 2);
}

#[tokio::test]
async fn duplicated_events_arrive_twice_in_a_row() {
    let cluster = FakeCluster::new();
    let d = widgets();
    let mut stream = watch(&cluster, NS, "0", false).await;
    cluster.duplicate_watch_events(1);
    cluster.create(&d, NS, "a", json!({}));
    cluster.create(&d, NS, "b", json!({}));
    assert_eq!(drain(&mut stream), ["ADDED a@1", "ADDED a@1", "ADDED b@2"]);
}

#[tokio::test]
async fn held_events_arrive_late_and_in_order() {
    let cluster = FakeCluster::new();
    let d = widgets();
    let mut stream = watch(&cluster, NS, "0", false).await;
    cluster.hold_watch_events();
    cluster.create(&d, NS, "a", json!({}));
    cluster.edit_spec(&d, NS, "a", |s| s["size"] = json!(1));
    assert!(quiet(&mut stream));
    let mut late = watch(&cluster, NS, "0", false).await;
    assert!(quiet(&mut late), "new watches are held too");
    cluster.release_watch_events();
    assert_eq!(drain(&mut stream), ["ADDED a@1", "MODIFIED a@2"]);
    assert_eq!(drain(&mut late), ["ADDED a@2"]);
}

#[tokio::test]
async fn closed_streams_end_cleanly_and_a_rewatch_loses_nothing() {
    let cluster = FakeCluster::new();
    let d = widgets();
    let mut stream = watch(&cluster, NS, "0", false).await;
    cluster.create(&d, NS, "a", json!({}));
    assert_eq!(drain(&mut stream), ["ADDED a@1"]);
    cluster.create(&d, NS, "b", json!({}));
    cluster.close_watches();
    assert!(next_now(&mut stream).is_none(), "ended, b undelivered");
    assert_eq!(cluster.watch_stats().open, 0);

    let mut again = watch(&cluster, NS, "1", false).await;
    assert_eq!(drain(&mut again), ["ADDED b@2"]);
}

#[tokio::test]
async fn expired_streams_end_with_gone() {
    let cluster = FakeCluster::new();
    let mut stream = watch(&cluster, NS, "0", false).await;
    cluster.expire_watches();
    let err = next_now(&mut stream).unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Gone);
    assert!(next_now(&mut stream).is_none());
}

#[tokio::test]
async fn a_stalled_stream_stays_open_and_silent() {
    let cluster = FakeCluster::new();
    let d = widgets();
    let mut stream = watch(&cluster, NS, "0", true).await;
    assert_eq!(drain(&mut stream), ["BOOKMARK 0"]);
    cluster.stall_watches();
    cluster.create(&d, NS, "a", json!({}));
    cluster.send_bookmarks();
    assert!(quiet(&mut stream));
    assert_eq!(cluster.watch_stats().open, 1);

    let mut fresh = watch(&cluster, NS, "0", false).await;
    assert_eq!(drain(&mut fresh), ["ADDED a@1"], "new watches work");
    cluster.close_watches();
    assert!(next_now(&mut stream).is_none(), "closing still ends it");
}

#[tokio::test]
async fn refused_watches_leave_listing_as_the_way() {
    let cluster = FakeCluster::new();
    let d = widgets();
    cluster.fail_always(Operation::Watch, Some(Fault::Unavailable));
    let refused = cluster.watch(&d, NS, &request("0", false)).await;
    assert_eq!(
        refused.err().map(|e| e.kind()),
        Some(ErrorKind::Unavailable)
    );
    cluster
        .list_page(&d, NS, &PageRequest::first(10))
        .await
        .unwrap();
    assert_eq!(cluster.calls().watch, 1);
    assert_eq!(cluster.watch_stats().opened, 0);
    cluster.fail_always(Operation::Watch, None);
    let _open = watch(&cluster, NS, "0", false).await;
    assert_eq!(cluster.watch_stats().opened, 1);
}

#[tokio::test(start_paused = true)]
async fn streams_end_at_their_timeout_only_when_asked_to() {
    let cluster = FakeCluster::new();
    let mut endless = watch(&cluster, NS, "0", false).await;
    cluster.honour_watch_timeouts(true);
    let mut timed = watch(&cluster, NS, "0", false).await;
    let started = tokio::time::Instant::now();
    assert!(timed.next().await.is_none());
    assert_eq!(started.elapsed().as_secs(), 300);
    assert!(quiet(&mut endless));
}

#[tokio::test]
async fn a_test_can_wait_for_a_consumer_to_see_its_events() {
    let cluster = FakeCluster::new();
    let d = widgets();
    let mut stream = watch(&cluster, NS, "0", false).await;
    let consumer = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(Ok(event)) = stream.next().await {
            seen.push(show(&event));
        }
        seen
    });
    cluster.create(&d, NS, "a", json!({}));
    cluster.create(&d, NS, "b", json!({}));
    let stats = cluster.watch_stats_until(|s| s.events == 2).await;
    assert_eq!((stats.opened, stats.open), (1, 1));
    cluster.close_watches();
    assert_eq!(consumer.await.unwrap(), ["ADDED a@1", "ADDED b@2"]);
    assert_eq!(cluster.watch_stats_until(|s| s.open == 0).await.events, 2);
}

#[tokio::test]
async fn cleared_watch_faults_deliver_again_but_stalled_streams_stay_silent() {
    let cluster = FakeCluster::new();
    let d = widgets();
    let mut stalled = watch(&cluster, NS, "0", false).await;
    cluster.stall_watches();
    let mut stream = watch(&cluster, NS, "0", false).await;
    cluster.drop_watch_events(5);
    cluster.duplicate_watch_events(5);
    cluster.hold_watch_events();
    cluster.clear_watch_faults();
    cluster.create(&d, NS, "a", json!({}));
    assert_eq!(drain(&mut stream), ["ADDED a@1"]);
    assert!(quiet(&mut stalled));
}
