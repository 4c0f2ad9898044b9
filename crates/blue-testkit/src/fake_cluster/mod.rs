//! An in-memory cluster implementing [`Client`](blue_kubernetes_client::Client).
//!
//! Two faces: the [`Client`](blue_kubernetes_client::Client) the code under
//! test uses (counted, fault-injectable, optionally slow), and a user-side API
//! ([`FakeCluster::create`], [`FakeCluster::edit_spec`], [`FakeCluster::delete`]...)
//! that plays the human applying YAML: never counted, never faulted.

mod calls;
mod client;
mod crd;
mod extras;
mod faults;
mod history;
mod leases;
mod metadata;
mod pages;
mod raw;
mod schema;
mod store;
mod user;
mod watch_faults;
mod watches;

pub use calls::{CallCounts, RecordedCall};
pub use faults::{Fault, Operation};
pub use watches::WatchStats;

use crate::FakeClock;
use blue_kubernetes_client::Lease;
use extras::Extras;
use faults::Faults;
use leases::Leases;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use store::Store;
use watches::Watches;

#[derive(Debug, Default)]
struct State {
    store: Store,
    leases: Leases,
    faults: Faults,
    log: Vec<RecordedCall>,
    latency: Duration,
    clock: FakeClock,
    extras: Extras,
    watches: Watches,
    /// `get_resource_cached` calls since the last [`FakeCluster::reset_calls`].
    cached_reads: usize,
    /// While the API server's watch cache lags: the objects it holds.
    lagging_cache: Option<std::collections::BTreeMap<history::Key, serde_json::Value>>,
}

/// An in-memory Kubernetes API for one or more custom resource types, with
/// the server's resourceVersion, generation, finalizer and deletion rules.
///
/// Every object write is kept in a bounded history (default 1,000 writes,
/// [`FakeCluster::set_history_limit`]) that watch streams replay and
/// continued list pages are served from; see [`FakeCluster::watch_stats`]
/// and the watch faults ([`FakeCluster::drop_watch_events`] and its
/// neighbours) for testing a list-and-watch cache.
///
/// # Raw requests
///
/// As a [`RawApi`](blue_kubernetes_client::RawApi) (what packages use for
/// their own objects) it answers any object path like kube-apiserver:
/// `/api/v1[/namespaces/NS]/PLURAL[/NAME]` and
/// `/apis/GROUP/VERSION[/namespaces/NS]/PLURAL[/NAME]`, plus `NAME/status`.
///
/// - `GET` an object (`404 NotFound` when absent) or a collection (a
///   `KindList` with `items` and `metadata.resourceVersion`; equality
///   `labelSelector`s apply; without `namespaces/NS`, every namespace).
/// - `POST` creates: uid, resourceVersion, creationTimestamp and namespace
///   assigned, `metadata.generateName` honoured, `409 AlreadyExists`
///   (kind `Other`) when the name is taken.
/// - `PUT` replaces: a stale `metadata.resourceVersion` or `uid` is `409
///   Conflict`; without a resourceVersion the update is unconditional.
/// - `PATCH` with a merge patch; a resourceVersion in it is a precondition.
///   A server-side apply patch creates the object if absent, else merges
///   like a merge patch (no field ownership: no apply conflicts, no removal
///   of fields a manager stopped applying). JSON and strategic patches are
///   `415`.
/// - `DELETE`, with optional `DeleteOptions` `preconditions` (`409` when
///   they do not hold); finalizers hold the object (`202`) as usual.
/// - Secrets: `stringData` is merged into `data` (base64); `data` values
///   must be base64 (`422 Invalid`).
///
/// Objects of a managed custom resource type are the very objects of the
/// [`Client`](blue_kubernetes_client::Client) face; core types get no
/// `metadata.generation`. Failures are [`Error::Http`](blue_kubernetes_client::Error::Http)
/// as the proxy transport returns them; [`Operation::RAW`] faults fail
/// requests, which are in [`FakeCluster::call_log`] but not in
/// [`CallCounts`]. Not emulated: garbage collection of owned objects,
/// watches over raw paths, `deletecollection`. Leases are the elector's
/// (`GET`, `POST` and `PUT` of one are answered, the rest is
/// `Unsupported`); Events keep their own calls (raw: `Unsupported`). The
/// user side: [`FakeCluster::objects`], [`FakeCluster::get_object`],
/// [`FakeCluster::create_object`], [`FakeCluster::edit_object`],
/// [`FakeCluster::delete_object`].
///
/// Clones share one cluster. The lock is a std mutex never held across an
/// await point.
///
/// ```
/// use blue_kubernetes_client::{Client, ResourceDescriptor};
/// use blue_testkit::FakeCluster;
/// use serde_json::json;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
/// let cluster = FakeCluster::new();
/// let created = cluster.create(&widgets, "default", "a", json!({"size": 1}));
///
/// // A write from a stale snapshot loses the race.
/// cluster.edit_spec(&widgets, "default", "a", |spec| spec["size"] = json!(2));
/// let stale = cluster.update_status(&widgets, &created, &json!({"phase": "Ready"})).await;
/// assert!(stale.unwrap_err().is_conflict());
///
/// let fresh = cluster.get_resource(&widgets, "default", "a").await.unwrap().unwrap();
/// assert_eq!(fresh["metadata"]["generation"], 2);
/// cluster.update_status(&widgets, &fresh, &json!({"phase": "Ready"})).await.unwrap();
/// assert_eq!(cluster.calls().total(), 3);
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct FakeCluster {
    state: Arc<Mutex<State>>,
}

impl FakeCluster {
    /// An empty cluster whose timestamps come from a [`FakeClock::default`].
    ///
    /// ```
    /// let cluster = blue_testkit::FakeCluster::new();
    /// assert_eq!(cluster.revision(), 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes `creationTimestamp` and `deletionTimestamp` from `clock`.
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// use blue_testkit::{FakeClock, FakeCluster};
    /// let clock = FakeClock::new(0);
    /// let cluster = FakeCluster::new().with_clock(clock.clone());
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// let a = cluster.create(&d, "default", "a", serde_json::json!({}));
    /// assert_eq!(a["metadata"]["creationTimestamp"], "1970-01-01T00:00:00Z");
    /// ```
    pub fn with_clock(self, clock: FakeClock) -> Self {
        self.lock().clock = clock;
        self
    }

    /// The clock timestamps come from.
    ///
    /// ```
    /// let cluster = blue_testkit::FakeCluster::new();
    /// cluster.clock().advance(1_000);
    /// assert_eq!(cluster.clock().now_ms(), blue_testkit::DEFAULT_START_MS + 1_000);
    /// ```
    pub fn clock(&self) -> FakeClock {
        self.lock().clock.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn now(&self) -> String {
        self.lock().clock.rfc3339()
    }

    /// The cluster-wide resourceVersion counter: the resourceVersion of the
    /// latest write, `0` before any. Equal readings mean nothing was written.
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// cluster.create(&d, "default", "a", serde_json::json!({}));
    /// assert_eq!(cluster.revision(), 1);
    /// ```
    pub fn revision(&self) -> u64 {
        self.lock().store.revision()
    }

    /// Makes the next call of `operation` fail with `fault`, without effect
    /// on the store. Faults queue up: each applies to one call, in order, and
    /// before any standing fault set with [`FakeCluster::fail_always`].
    ///
    /// ```
    /// use blue_testkit::{Fault, FakeCluster, Operation};
    /// let cluster = FakeCluster::new();
    /// cluster.inject(Operation::List, Fault::Unavailable);
    /// ```
    pub fn inject(&self, operation: Operation, fault: Fault) {
        self.lock().faults.inject(operation, fault);
    }

    /// Makes every call of `operation` fail with `fault` until called again
    /// with `None`.
    ///
    /// ```
    /// use blue_testkit::{Fault, FakeCluster, Operation};
    /// let cluster = FakeCluster::new();
    /// cluster.fail_always(Operation::Get, Some(Fault::Unavailable));
    /// cluster.fail_always(Operation::Get, None);
    /// ```
    pub fn fail_always(&self, operation: Operation, fault: Option<Fault>) {
        self.lock().faults.set_always(operation, fault);
    }

    /// Drops every queued and standing fault.
    ///
    /// ```
    /// use blue_testkit::{Fault, FakeCluster, Operation};
    /// let cluster = FakeCluster::new();
    /// cluster.inject(Operation::List, Fault::Conflict);
    /// cluster.clear_faults();
    /// ```
    pub fn clear_faults(&self) {
        self.lock().faults.clear();
    }

    /// Waits `latency` (with `tokio::time::sleep`, so paused test time
    /// applies) at the start of every [`Client`](blue_kubernetes_client::Client) call.
    ///
    /// ```
    /// let cluster = blue_testkit::FakeCluster::new();
    /// cluster.set_latency(std::time::Duration::from_millis(100));
    /// ```
    pub fn set_latency(&self, latency: Duration) {
        self.lock().latency = latency;
    }

    /// Counts of the [`Client`](blue_kubernetes_client::Client) calls made so
    /// far, faulted ones included.
    ///
    /// ```
    /// use blue_kubernetes_client::{Client, ResourceDescriptor};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// cluster.list_resources(&d, "default").await.unwrap();
    /// assert_eq!(cluster.calls().list, 1);
    /// # }
    /// ```
    pub fn calls(&self) -> CallCounts {
        CallCounts::of(&self.lock().log)
    }

    /// Every [`Client`](blue_kubernetes_client::Client) call so far, in order.
    ///
    /// ```
    /// use blue_kubernetes_client::{Client, ResourceDescriptor};
    /// use blue_testkit::{RecordedCall, Operation};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// cluster.get_resource(&d, "default", "a").await.unwrap();
    /// assert_eq!(
    ///     cluster.call_log(),
    ///     [RecordedCall::new(Operation::Get, "widgets.example.com", "default", Some("a"))],
    /// );
    /// # }
    /// ```
    pub fn call_log(&self) -> Vec<RecordedCall> {
        self.lock().log.clone()
    }

    /// Forgets the calls made so far.
    ///
    /// ```
    /// let cluster = blue_testkit::FakeCluster::new();
    /// cluster.reset_calls();
    /// assert!(cluster.call_log().is_empty());
    /// ```
    pub fn reset_calls(&self) {
        let mut state = self.lock();
        state.log.clear();
        state.cached_reads = 0;
    }

    /// How many of the counted `get` calls since the last
    /// [`reset_calls`](FakeCluster::reset_calls) were
    /// [`get_resource_cached`](blue_kubernetes_client::Client::get_resource_cached)
    /// (the fake has one version of each object, so both read the same).
    ///
    /// ```
    /// let cluster = blue_testkit::FakeCluster::new();
    /// assert_eq!(cluster.cached_reads(), 0);
    /// ```
    pub fn cached_reads(&self) -> usize {
        self.lock().cached_reads
    }

    /// The Lease `namespace/name` as stored, read on the user side (not
    /// counted, never faulted).
    ///
    /// ```
    /// let cluster = blue_testkit::FakeCluster::new();
    /// assert!(cluster.lease("default", "op").is_none());
    /// ```
    pub fn lease(&self, namespace: &str, name: &str) -> Option<Lease> {
        self.lock().leases.get(namespace, name)
    }

    /// Writes `lease` on the user side, unconditionally (another elector or
    /// a human with `kubectl edit`): the stored version gets a new
    /// resourceVersion, so guarded updates from older reads conflict, and
    /// keeps its uid (a new Lease gets a new one).
    ///
    /// ```
    /// use blue_kubernetes_client::{Lease, LeaseSpec};
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let stored = cluster.put_lease(&Lease::new("default", "op", LeaseSpec::default()));
    /// assert_eq!(stored.resource_version.as_deref(), Some("1"));
    /// ```
    pub fn put_lease(&self, lease: &Lease) -> Lease {
        let mut state = self.lock();
        let State { store, leases, .. } = &mut *state;
        leases.put(store, lease)
    }

    /// Deletes the Lease `namespace/name` on the user side (a human's
    /// `kubectl delete lease`), returning it as it was; the next create of
    /// that name makes a new object.
    ///
    /// ```
    /// use blue_kubernetes_client::{Lease, LeaseSpec};
    /// let cluster = blue_testkit::FakeCluster::new();
    /// cluster.put_lease(&Lease::new("default", "op", LeaseSpec::default()));
    /// assert!(cluster.delete_lease("default", "op").is_some());
    /// assert!(cluster.lease("default", "op").is_none());
    /// ```
    pub fn delete_lease(&self, namespace: &str, name: &str) -> Option<Lease> {
        self.lock().leases.delete(namespace, name)
    }
}
