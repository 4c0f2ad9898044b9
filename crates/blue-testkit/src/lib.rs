//! Test support for operators built on blue-kubernetes.
//!
//! - [`FakeClock`]: a clock in milliseconds that moves only when told to.
//! - [`FakeCluster`]: an in-memory cluster implementing
//!   [`Client`](blue_kubernetes_client::Client) with the API server's
//!   resourceVersion, generation, finalizer and deletion rules, paginated
//!   lists and watch streams over a bounded change history, Leases with
//!   guarded updates (for leader election), fault injection (watch faults
//!   included), latency and call accounting.
//! - [`FakeKubectl`]: a [`Runner`](blue_kubernetes_client::Runner) that
//!   answers the kubectl command lines of the transport from a [`FakeCluster`],
//!   so the real kubectl client can be tested without a server.
//! - [`FakeInfra`]: fake infrastructure and recording packages over it,
//!   with scripted failures, panics, drift and held effects.
//! - [`edits`]: user edits and fault sequences for model-based tests.
//! - [`strategies`]: proptest strategies for names, configs and specs, and
//!   for your own config type from its CRD schema.
//!
//! **Start with the [`guide`]: testing your own package.**
//!
//! ```
//! use blue_kubernetes_client::{Client, ResourceDescriptor};
//! use blue_testkit::{FakeCluster, Fault, Operation};
//! use serde_json::json;
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
//! let cluster = FakeCluster::new();
//! cluster.create(&widgets, "default", "a", json!({"state": "running"}));
//! cluster.inject(Operation::List, Fault::Unavailable);
//! assert!(cluster.list_resources(&widgets, "default").await.is_err());
//! assert_eq!(cluster.list_resources(&widgets, "default").await.unwrap().len(), 1);
//! # }
//! ```

mod clock;
pub mod edits;
mod fake_cluster;
mod fake_kubectl;
pub mod guide;
mod recording;
pub mod strategies;

pub use clock::{rfc3339, FakeClock, DEFAULT_START_MS};
pub use edits::UserEdit;
pub use fake_cluster::{Call, CallCounts, FakeCluster, Fault, Operation, WatchStats};
pub use fake_kubectl::FakeKubectl;
pub use recording::{desired, FakeInfra, Misbehaviour, Record, Step, PLANTED_SECRET};
