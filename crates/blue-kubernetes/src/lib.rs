#![doc = include_str!("../README.md")]
//!
//! # Writing a package
//! A package is one type implementing [`Infrastructure`]: its methods are
//! the callbacks (`observe`, `converge` and `delete`; `validate` and
//! `identity` have defaults), its associated types the typed config and
//! outputs, and [`Infrastructure::schema`] declares the rest once (the
//! resource type, a connection Secret, durable steps, references, related
//! kinds), from which the CRD is generated. Every callback gets a
//! [`Context`]: the typed config, the resource's
//! [`Metadata`](resource::Metadata), its
//! [`ManagementPolicy`](resource::ManagementPolicy), the controller's
//! clock, the connection, steps, the references' outputs, the fencing
//! token, a fenced [`Api`](package::Api) handle and the external name. The
//! trait's documentation has one example per optional feature.
//!
//! ```
//! use blue_kubernetes::{
//!     async_trait, CallbackResult, Context, Infrastructure, Observation, Outcome, Package,
//!     ResourceSchema,
//! };
//! use blue_kubernetes_client::ResourceDescriptor;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct SilenceConfig { matcher: String }
//! #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct SilenceOutputs { id: String }
//!
//! struct Silences;
//!
//! #[async_trait]
//! impl Infrastructure for Silences {
//!     type Config = SilenceConfig;
//!     type Outputs = SilenceOutputs;
//!
//!     fn schema() -> ResourceSchema {
//!         ResourceSchema::new(ResourceDescriptor::new("alerts.example.com", "v1", "silences", "Silence"))
//!     }
//!
//!     async fn observe(&self, cx: &Context<SilenceConfig>) -> CallbackResult<Observation<SilenceOutputs>> {
//!         // Found by the ID converge reported (or a user set, to import).
//!         Ok(match cx.external_name() {
//!             Some(id) => Observation::READY.with(SilenceOutputs { id: id.into() }),
//!             None => Observation::ABSENT,
//!         })
//!     }
//!
//!     async fn converge(&self, cx: &Context<SilenceConfig>) -> CallbackResult<Outcome<SilenceOutputs>> {
//!         let _matcher = &cx.config().matcher; // POST /api/v2/silences ...
//!         let id = "5f2e".to_string();
//!         Ok(Outcome::done().with(SilenceOutputs { id: id.clone() }).with_external_name(id))
//!     }
//!
//!     async fn delete(&self, _cx: &Context<SilenceConfig>) -> CallbackResult<Outcome<SilenceOutputs>> {
//!         Ok(Outcome::done())
//!     }
//! }
//!
//! let package = Package::new(Silences).unwrap();
//! assert_eq!(package.descriptor().kind, "Silence");
//! ```
//!
//! Register the [`Package`]s (one per custom resource kind), generate
//! their CRDs with [`crd::generate`] (from a [`ResourceSchema`]: the types
//! alone, no callbacks; [`ResourceSchema::of`] for a trait package), build
//! a [`Controller`] with [`controller`], and either [`reconcile`] one
//! resource or [`start`] the [`Runtime`] (watches where the client can
//! watch, periodic lists otherwise).
//!
//! The closure form, [`Package::builder`] with callbacks receiving the
//! [`CallbackInput`](package::CallbackInput) map, stays: the pass calls it
//! through the same interface a trait package is erased to.
//!
//! # The public modules
//! The root holds what every operator uses; each opt-in feature has a
//! module of its own:
//! - [`package`]: writing a package beyond the root (no outputs, what
//!   `validate` returns, blocking code, the API handle, the closure form);
//! - [`resource`]: the custom resource's contract (intent, metadata,
//!   management policy, phases and reasons, when it is due);
//! - [`config`]: the parts of a [`Config`], and the startup preflight;
//! - [`steps`]: durable steps; [`connection`]: connection Secrets;
//!   [`related`]: related objects and references;
//! - [`replicas`]: leader election, sharding and fencing tokens;
//! - [`crd`]: CRD generation; [`versions`]: older served versions and
//!   their conversion; [`telemetry`]: metrics, stats, health and
//!   their HTTP endpoints;
//! - `runner` (feature `runner`): an operator binary's flags, logging,
//!   signals and `crd` subcommand; with the feature `webhook`, the
//!   admission webhook's HTTPS server (`runner::webhook`).
//! - [`admission`]: the packages' validating admission (the pass's
//!   pre-effect checks judged at `kubectl apply`) and its
//!   ValidatingWebhookConfiguration.
//!
//! The map of the crate's own modules, for its maintainers, is in the
//! README's "Architecture".

pub mod admission;
mod cached;
mod client_stack;
mod clock;
pub mod config;
pub mod connection;
mod controller;
pub mod crd;
mod domain;
mod error;
#[cfg(feature = "http")]
mod http;
mod leader;
mod lock;
mod namespaces;
pub mod package;
mod preflight;
mod reconcile;
mod references;
pub mod related;
pub mod replicas;
pub mod resource;
#[cfg(feature = "runner")]
pub mod runner;
mod runtime;
mod sharding;
pub mod steps;
pub mod telemetry;
pub mod versions;
// The project's own end-to-end and chaos tests pause or kill an operator
// through these: not part of the supported API.
#[doc(hidden)]
pub mod test_hooks;

pub use async_trait::async_trait;
pub use config::Config;
pub use controller::{controller, Controller};
pub use error::Error;
pub use package::context::Context;
pub use package::context::IdentityContext;
pub use package::infrastructure::Infrastructure;
pub use package::observation::Observation;
pub use package::result::Outcome;
pub use package::schema::ResourceSchema;
pub use package::{CallbackResult, Package};
pub use reconcile::{reconcile, Report};
pub use runtime::{start, Runtime};
/// The elector and the identity lock, for the controller's own behaviour
/// tests (the `testing` feature); not part of the supported API.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub use {
    leader::{ElectionStep, LeaseElector},
    lock::is_locked,
};
