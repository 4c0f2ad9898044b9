//! kubectl transport and the [`Client`] trait for blue-kubernetes.
//!
//! The controller talks to the cluster only through [`Client`]. The production
//! implementation, [`KubectlClient`], runs `kubectl` through an injectable
//! [`Runner`] with an explicit context (or in-cluster credentials), request and
//! process deadlines, private input files, and errors that never carry
//! kubectl's output. Besides reading and writing custom resources, it reads
//! and writes `coordination.k8s.io/v1` [`Lease`]s for optional leader
//! election, with the same resourceVersion guard.
//!
//! ```no_run
//! # async fn example() -> Result<(), blue_kubernetes_client::Error> {
//! use blue_kubernetes_client::{kubectl_client, Client, KubectlOptions, ResourceDescriptor};
//! let client = kubectl_client(KubectlOptions::for_context("kind-dev"))?;
//! let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
//! for widget in client.list_resources(&widgets, "default").await? {
//!     println!("{}", widget["metadata"]["name"]);
//! }
//! # Ok(())
//! # }
//! ```

mod classify;
mod client;
mod cluster_calls;
mod cluster_types;
mod descriptor;
mod error;
mod in_cluster;
mod kubectl;
mod kubectl_leases;
mod lease;
mod operation;
mod options;
mod parent_death;
mod request;
mod resources;
mod runner;
mod scratch;
mod temp;
mod tokio_runner;

pub use classify::classify_output;
pub use client::Client;
pub use cluster_types::{AccessCheck, ApiResource};
pub use descriptor::ResourceDescriptor;
pub use error::{Error, ErrorKind};
pub use in_cluster::IN_CLUSTER_CONTEXT;
pub use kubectl::{kubectl_client, KubectlClient};
pub use lease::{Lease, LeaseSpec, LEASE_API_VERSION};
pub use operation::operation_of;
pub use options::{KubectlOptions, DEFAULT_SERVICE_ACCOUNT_DIR};
pub use request::{RequestOptions, Response};
pub use runner::{Invocation, Output, Runner};
pub use tokio_runner::TokioRunner;
