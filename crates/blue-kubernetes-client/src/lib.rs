//! kubectl transports and the [`Client`] trait for blue-kubernetes.
//!
//! The controller talks to the cluster only through [`Client`]; packages send
//! their own requests through [`RawApi`]. Two transports implement both, and
//! in both kubectl alone reads kubeconfig and credentials; with the `kube`
//! feature a third, `KubeClient`, sends the same requests through a
//! `kube::Client` you already have.
//!
//! # Modules
//! At the root, what both transports share:
//! - `client`, `api`, `transport`: the [`Client`] trait, [`RawApi`] for raw
//!   requests, and [`connect`], which builds either transport.
//! - `descriptor`, `api_path`, `scope`, `names`: which type, which path,
//!   which namespace, and the name checks that keep input out of flags and
//!   paths. `writes`: the bodies of the two guarded writes.
//! - `watch`, `pagination`, `watch_format`, `watch_stream`: pages and watch
//!   streams; `label_selector`: [`LabelSelector`], which objects a selected
//!   list or watch holds. `lease`, `cluster_types`: Leases, discovery,
//!   access checks.
//! - `error`, `http_status`: [`Error`], and the API server's status code and
//!   `reason` as an [`ErrorKind`]. `scratch`: private directories, and the
//!   sweep of those a killed process left.
//! - `typed` (feature `k8s-openapi`): `TypedApi`, typed k8s-openapi
//!   objects over any [`RawApi`]: get, list, create, a replace guarded by
//!   resourceVersion, merge and apply patches, deletes with uid and
//!   resourceVersion preconditions. Self-contained: it only sends
//!   [`ApiRequest`]s.
//! - `layer`: [`Layered`], one generic [`Client`] over another that runs a
//!   [`Hook`] before and after every call: how the controller adds request
//!   metrics and leader-election fencing, and tests add faults or audits,
//!   without forwarding a method by hand.
//!
//! `kubectl/`, [`KubectlClient`]: `options` and `in_cluster` set it up;
//! `resources`, `cluster_calls`, `leases` and `raw` turn operations into
//! argv; `request` and `temp` pass input documents as private files;
//! `runner`, `tokio_runner` and `parent_death` run the process; `classify`
//! and `operation` reduce a failed run to what its error may carry.
//!
//! `rest/`, what the HTTP transports share: `resources`, `cluster_calls`,
//! `leases` and `watch` turn operations into HTTP requests and answers into
//! results or classified errors, over any `HttpTransport` (a transport only
//! carries requests); `rest_client!` implements [`Client`] and [`RawApi`]
//! for one.
//!
//! `proxy/`, [`ProxyClient`]: `options`; `supervisor`, `process` and
//! `socket_dir` keep one `kubectl proxy` running on a private socket;
//! `pool` holds keep-alive connections to it; `watch` gives a streamed
//! answer a connection of its own.
//!
//! `kube/` (feature `kube`), `KubeClient`: carries the same requests through
//! a `kube::Client`; `failure` reduces kube's errors to a fixed phrase and
//! an [`ErrorKind`].
//!
//! # One request
//! The controller calls [`Client::update_status`] on the [`Transport`] that
//! [`connect`] built. Either transport checks the object's name, namespace
//! and resourceVersion and builds the same body (`writes`, `scope`, `names`);
//! then:
//! - [`KubectlClient`] (`kubectl/resources`) asks [`KubectlClient::request`]
//!   for `replace --raw .../NAME/status -f -`, which writes the body to a
//!   private file named in place of `-` and has the [`Runner`] run kubectl
//!   under a deadline. A non-zero exit is an [`Error::Kubectl`] with the
//!   [`ErrorKind`] from `classify` and the verb from `operation`.
//! - [`ProxyClient`] (`rest/resources`) sends a `PUT` to the same path with
//!   [`RawApi::send`]: the `supervisor` hands out the running proxy (starting
//!   it first if need be), the `pool` a connection to its socket. A non-2xx
//!   answer is an [`Error::Http`] with the [`ErrorKind`] from `http_status`.
//! - `KubeClient` builds the same `PUT` in the same code (`rest/resources`)
//!   and hands it to `kube::Client::send`, which adds the server's address
//!   and credentials; the answer is classified the same way.
//!
//! # Transports
//! - [`KubectlClient`] (the default) runs one `kubectl` process per request
//!   through an injectable [`Runner`], with an explicit context (or in-cluster
//!   credentials), request and process deadlines, private input files. Simple
//!   and stateless, but each request costs about 0.1 s of CPU.
//! - [`ProxyClient`] runs one long-lived `kubectl proxy` on a Unix socket in a
//!   private 0700 directory and speaks HTTP/1.1 with keep-alive to it: about a
//!   millisecond per request. Anyone who can reach that socket acts with the
//!   operator's credentials; only our user can. See [`ProxyClient`] for
//!   supervision and cleanup.
//!
//! - `KubeClient` (feature `kube`) wraps a `kube::Client` you built (kube-rs
//!   reads the kubeconfig or in-cluster configuration, does TLS, runs exec
//!   plugins): no kubectl, nothing listening, the proxy's requests and
//!   error classification, and watches.
//!
//! [`TransportKind`] and [`connect`] let a binary offer the choice between
//! the kubectl-based two as a flag. Errors of all are classified the same
//! way ([`ErrorKind`]) and never carry kubectl's output, kube's messages,
//! request or response bodies, or credentials.
//!
//! # Feature `kube`
//! `KubeClient::new(kube_client)` is a [`Transport`]. The feature builds
//! kube-rs's client with rustls (as kube's own default does); like every
//! library on kube, it enables no Kubernetes version of `k8s-openapi`,
//! which kube needs: your binary picks one (`k8s-openapi = { version =
//! "0.29", features = ["v1_33"] }`). It adds about 145 s to a cold build of
//! this crate on two cores; the default build has none of it. `KubeClient`'s documentation
//! (built with the feature) has an example.
//!
//! Besides reading and writing custom resources, both read and write
//! `coordination.k8s.io/v1` [`Lease`]s for optional leader election, with
//! the same resourceVersion guard.
//!
//! # Lists, pages and watches
//! A cache of one resource type is fed by [`Client::list_page`] (pages of
//! [`DEFAULT_PAGE_LIMIT`] with continue tokens, and the list's
//! resourceVersion) and then [`Client::watch`] from that version: a
//! [`WatchStream`] of [`WatchEvent`]s decoded line by line as they arrive.
//! An expired continue token or resourceVersion fails with
//! [`ErrorKind::Gone`]: list again. [`ProxyClient`] and `KubeClient` do both
//! for real, [`ProxyClient`] each watch on a connection of its own. [`KubectlClient`] returns a list as one
//! page without a version and does not watch ([`Error::Unsupported`]): with
//! the per-call transport, callers list periodically instead.
//!
//! A namespace of `""` means every namespace for a list or watch of a
//! namespaced type; a cluster-scoped type
//! ([`ResourceDescriptor::cluster_scoped`]) never names a namespace.
//!
//! ```no_run
//! # async fn example(client: &dyn blue_kubernetes_client::Client) -> Result<(), blue_kubernetes_client::Error> {
//! use blue_kubernetes_client::{PageRequest, ResourceDescriptor, WatchEvent, WatchRequest};
//! use futures::StreamExt;
//! let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
//! let page = client.list_page(&widgets, "", &PageRequest::first(500)).await?;
//! let Some(version) = page.resource_version else { return Ok(()) };
//! let request = WatchRequest { resource_version: version, timeout_seconds: 300, bookmarks: true, ..Default::default() };
//! let mut events = client.watch(&widgets, "", &request).await?;
//! while let Some(event) = events.next().await {
//!     match event? {
//!         WatchEvent::Added(w) | WatchEvent::Modified(w) => println!("{}", w["metadata"]["name"]),
//!         WatchEvent::Deleted(_) | WatchEvent::Bookmark { .. } => {}
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! ```no_run
//! # async fn example() -> Result<(), blue_kubernetes_client::Error> {
//! use blue_kubernetes_client::{kubectl_client, Client, KubectlConfig, ResourceDescriptor};
//! let client = kubectl_client(KubectlConfig::for_context("kind-dev"))?;
//! let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
//! for widget in client.list_resources(&widgets, "default").await? {
//!     println!("{}", widget["metadata"]["name"]);
//! }
//! # Ok(())
//! # }
//! ```

mod api;
mod api_path;
mod client;
mod cluster_types;
mod descriptor;
mod error;
mod http_status;
#[cfg(feature = "kube")]
mod kube;
mod kubectl;
mod label_selector;
mod layer;
mod lease;
mod names;
mod pagination;
mod proxy;
mod rest;
mod scope;
mod scratch;
mod transport;
#[cfg(feature = "k8s-openapi")]
pub mod typed;
mod watch;
mod watch_format;
mod watch_stream;
mod writes;

pub use api::{ApiRequest, ApiResponse, Method, PatchType, RawApi, Transport};

// The README's examples compile (the typed one needs the feature).
#[cfg(all(doctest, feature = "k8s-openapi"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
pub use api_path::ApiPath;

pub use client::Client;
#[cfg(feature = "mock")]
pub use client::MockClient;
pub use cluster_types::{AccessCheck, ApiResource};
pub use descriptor::ResourceDescriptor;
pub use error::{Error, ErrorKind};
// Internals for the workspace's own tests and benches, not a stable API.
#[cfg(feature = "kube")]
pub use crate::kube::KubeClient;
#[cfg(feature = "testing")]
pub use kubectl::{classify_output, operation_of};
pub use kubectl::{kubectl_client, KubectlClient, IN_CLUSTER_CONTEXT};
pub use kubectl::{Invocation, Output, Runner, TokioRunner};
pub use kubectl::{KubectlConfig, RequestParams, Response, DEFAULT_SERVICE_ACCOUNT_DIR};
pub use label_selector::LabelSelector;
pub use layer::{Answer, Call, Hook, Layered};
pub use lease::{Lease, LeaseSpec, LEASE_API_VERSION};
pub use proxy::{proxy_client, ProxyClient, ProxyConfig, ProxyStats};
pub use transport::{connect, TransportKind};
pub use watch::{ListPage, PageRequest, WatchEvent, WatchRequest, WatchStream, DEFAULT_PAGE_LIMIT};
