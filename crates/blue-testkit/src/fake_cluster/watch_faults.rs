//! The test's hand on watch streams: lost, duplicated and delayed events,
//! streams that end, expire or go silent, bookmarks and compaction.
//! Refusing new watches goes through the ordinary faults:
//! [`FakeCluster::inject`] or [`FakeCluster::fail_always`] with
//! [`Operation::Watch`](crate::Operation::Watch).

use super::watches::{SlotState, WatchStats};
use super::FakeCluster;
use blue_kubernetes_client::ResourceDescriptor;

impl FakeCluster {
    fn control(&self, f: impl FnOnce(&mut super::watches::Watches)) {
        let mut state = self.lock();
        f(&mut state.watches);
        state.store.history.ring();
    }

    fn set_open_slots(&self, to: SlotState) {
        self.control(|w| {
            for slot in w.slots.values_mut() {
                slot.state = to;
            }
        });
    }

    /// Counts of what the watches did so far.
    ///
    /// ```
    /// use blue_kubernetes_client::{Client, ResourceDescriptor, WatchEvent, WatchRequest};
    /// use futures::StreamExt;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let from = WatchRequest { resource_version: "0".into(), timeout_seconds: 300, ..Default::default() };
    /// let mut stream = cluster.watch(&d, "default", &from).await.unwrap();
    /// cluster.drop_watch_events(1);
    /// cluster.create(&d, "default", "lost", serde_json::json!({}));
    /// cluster.create(&d, "default", "seen", serde_json::json!({}));
    /// let Some(Ok(WatchEvent::Added(seen))) = stream.next().await else { panic!() };
    /// assert_eq!(seen["metadata"]["name"], "seen");
    /// let stats = cluster.watch_stats();
    /// assert_eq!((stats.opened, stats.open, stats.events, stats.dropped), (1, 1, 1, 1));
    /// # }
    /// ```
    pub fn watch_stats(&self) -> WatchStats {
        *self.lock().watches.stats.borrow()
    }

    /// Waits until the watch counts satisfy `reached`, e.g. until the code
    /// under test has a watch open: no sleeping, no polling.
    ///
    /// ```
    /// use blue_kubernetes_client::{Client, ResourceDescriptor, WatchRequest};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let watcher = cluster.clone();
    /// let task = tokio::spawn(async move {
    ///     let from = WatchRequest { resource_version: "0".into(), timeout_seconds: 1, bookmarks: true, ..Default::default() };
    ///     watcher.watch(&d, "default", &from).await.map(drop)
    /// });
    /// cluster.watch_stats_until(|s| s.opened == 1).await;
    /// task.await.unwrap().unwrap();
    /// # }
    /// ```
    pub async fn watch_stats_until(&self, reached: impl Fn(&WatchStats) -> bool) -> WatchStats {
        let mut stats = self.lock().watches.stats.subscribe();
        let reached = stats.wait_for(|s| reached(s)).await;
        // The sender lives as long as the cluster, which `self` holds.
        reached.map(|s| *s).unwrap_or_default()
    }

    /// The next `n` object events, in delivery order across all streams,
    /// are lost: streams skip them as if they never happened (a later
    /// bookmark even moves past them).
    ///
    /// ```
    /// blue_testkit::FakeCluster::new().drop_watch_events(2);
    /// ```
    pub fn drop_watch_events(&self, n: usize) {
        self.control(|w| w.faults.drop += n);
    }

    /// The next `n` object events, in delivery order across all streams,
    /// are delivered twice in a row.
    ///
    /// ```
    /// blue_testkit::FakeCluster::new().duplicate_watch_events(1);
    /// ```
    pub fn duplicate_watch_events(&self, n: usize) {
        self.control(|w| w.faults.duplicate += n);
    }

    /// Streams (open and new) deliver nothing until
    /// [`FakeCluster::release_watch_events`]; then everything held arrives,
    /// late and in order.
    ///
    /// ```
    /// let cluster = blue_testkit::FakeCluster::new();
    /// cluster.hold_watch_events();
    /// cluster.release_watch_events();
    /// ```
    pub fn hold_watch_events(&self) {
        self.control(|w| w.faults.hold = true);
    }

    /// Ends [`FakeCluster::hold_watch_events`].
    ///
    /// ```
    /// blue_testkit::FakeCluster::new().release_watch_events();
    /// ```
    pub fn release_watch_events(&self) {
        self.control(|w| w.faults.hold = false);
    }

    /// The API server's watch cache stops following the store: cached
    /// reads ([`get_resource_cached`](blue_kubernetes_client::Client::get_resource_cached))
    /// answer with the objects as they are now, so an object created from
    /// here on is missing from them and an edited one is old, as with a
    /// real server's watch cache a few milliseconds behind etcd. Lists,
    /// plain reads and watches are unaffected.
    ///
    /// ```
    /// use blue_kubernetes_client::{Client, ResourceDescriptor};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// let cluster = blue_testkit::FakeCluster::new();
    /// cluster.lag_watch_cache();
    /// cluster.create(&d, "default", "new", serde_json::json!({}));
    /// assert!(cluster.get_resource_cached(&d, "default", "new").await.unwrap().is_none());
    /// assert!(cluster.get_resource(&d, "default", "new").await.unwrap().is_some());
    /// cluster.catch_up_watch_cache();
    /// assert!(cluster.get_resource_cached(&d, "default", "new").await.unwrap().is_some());
    /// # }
    /// ```
    pub fn lag_watch_cache(&self) {
        let mut state = self.lock();
        state.lagging_cache = Some(state.store.objects());
    }

    /// Ends [`FakeCluster::lag_watch_cache`].
    ///
    /// ```
    /// blue_testkit::FakeCluster::new().catch_up_watch_cache();
    /// ```
    pub fn catch_up_watch_cache(&self) {
        self.lock().lagging_cache = None;
    }

    /// Ends [`FakeCluster::drop_watch_events`],
    /// [`FakeCluster::duplicate_watch_events`] and
    /// [`FakeCluster::hold_watch_events`] (held events are delivered).
    /// Streams already stalled, closed or expired stay so.
    ///
    /// ```
    /// let cluster = blue_testkit::FakeCluster::new();
    /// cluster.drop_watch_events(3);
    /// cluster.clear_watch_faults();
    /// ```
    pub fn clear_watch_faults(&self) {
        self.control(|w| {
            let timeouts = w.faults.timeouts;
            w.faults = Default::default();
            w.faults.timeouts = timeouts;
        });
    }

    /// Every open stream ends cleanly at its next read, as when the server
    /// or the connection closes it; what it had not delivered is lost to
    /// it (a new watch from the last resourceVersion seen gets it again).
    ///
    /// ```
    /// blue_testkit::FakeCluster::new().close_watches();
    /// ```
    pub fn close_watches(&self) {
        self.set_open_slots(SlotState::Closing);
    }

    /// Every open stream's next item is a `410 Gone` error, its last.
    ///
    /// ```
    /// blue_testkit::FakeCluster::new().expire_watches();
    /// ```
    pub fn expire_watches(&self) {
        self.set_open_slots(SlotState::Expiring);
    }

    /// Every open stream silently stops: it stays open and delivers nothing
    /// more, ever (until closed or expired). New watches are not affected.
    ///
    /// ```
    /// blue_testkit::FakeCluster::new().stall_watches();
    /// ```
    pub fn stall_watches(&self) {
        self.set_open_slots(SlotState::Stalled);
    }

    /// Like [`FakeCluster::stall_watches`], for the open streams of type
    /// `d` only (same group and plural): one type's watch goes silent
    /// while the others keep delivering.
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// let config_maps = ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap");
    /// blue_testkit::FakeCluster::new().stall_watches_of(&config_maps);
    /// ```
    pub fn stall_watches_of(&self, d: &ResourceDescriptor) {
        self.control(|w| {
            for slot in w.slots.values_mut() {
                if slot.descriptor.group == d.group && slot.descriptor.plural == d.plural {
                    slot.state = SlotState::Stalled;
                }
            }
        });
    }

    /// Every open stream that asked for bookmarks gets one when it next
    /// catches up, at the cluster's current revision. (Each also gets one
    /// when it first catches up after opening.)
    ///
    /// ```
    /// blue_testkit::FakeCluster::new().send_bookmarks();
    /// ```
    pub fn send_bookmarks(&self) {
        self.control(|w| {
            for slot in w.slots.values_mut() {
                slot.bookmark_due = true;
            }
        });
    }

    /// Makes streams end at their `timeout_seconds`, measured with
    /// `tokio::time` (so paused test time applies). Off by default: streams
    /// end only when the test says so.
    ///
    /// ```
    /// blue_testkit::FakeCluster::new().honour_watch_timeouts(true);
    /// ```
    pub fn honour_watch_timeouts(&self, on: bool) {
        self.control(|w| w.faults.timeouts = on);
    }

    /// Forgets the history up to and including `revision`: watches from an
    /// older resourceVersion, continue tokens of older lists and open
    /// streams that have not read past it fail with `410 Gone`.
    ///
    /// ```
    /// let cluster = blue_testkit::FakeCluster::new();
    /// cluster.compact_history(cluster.revision());
    /// ```
    pub fn compact_history(&self, revision: u64) {
        self.lock().store.history.compact(revision);
    }

    /// Keeps at most `changes` object writes of history (default 1,000);
    /// older ones are compacted away as new ones come.
    ///
    /// ```
    /// blue_testkit::FakeCluster::new().set_history_limit(10);
    /// ```
    pub fn set_history_limit(&self, changes: usize) {
        self.lock().store.history.set_limit(changes);
    }
}
