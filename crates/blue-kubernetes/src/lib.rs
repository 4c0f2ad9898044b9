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
//!   their conversion; [`migration`]: storage migrated to the stored
//!   version and the old versions retired; [`telemetry`]: metrics, stats, health and
//!   their HTTP endpoints;
//! - `runner` (feature `runner`): an operator binary's flags, logging,
//!   signals and `crd` subcommand; with the feature `webhook`, the
//!   admission webhook's HTTPS server (`runner::webhook`).
//! - [`admission`]: the packages' validating admission (the pass's
//!   pre-effect checks judged at `kubectl apply`) and its
//!   ValidatingWebhookConfiguration.
//!
//! The map of the crate's own modules, for its maintainers, is in the
//! README's "Architecture"; the walk of one resource through them follows.
//!
//! # One resource's path
//! Every file of this crate that defines a function called on the way,
//! in the order a reader first enters it, from the watch event of a new
//! resource (the local-configmap example: a trait package with a related
//! kind and an immutable field) to its Ready status write and back to the
//! next decision; the package's own code and the client crate aside.
//! Several are entered again later (the dispatcher as the pass begins
//! and ends, the domain rules at each write).
//!
//! 1. `runtime/reflector.rs`: a watch event arrives;
//! 2. `runtime/dispatch.rs`: routes it to the book, acts on its decisions;
//! 3. `runtime/key.rs`: the resource's key, its namespace interned;
//! 4. `controller.rs`: the due rule applied with the controller's clock;
//! 5. `clock.rs`: the system clock read;
//! 6. `domain/due.rs`: the due rule (later: times, stretch, retry delay);
//! 7. `domain/resource.rs`: the snapshot's metadata and common spec read;
//! 8. `steps/record.rs`: whether a durable-steps run was left running;
//! 9. `runtime/book.rs`: keeps the copy and decides: due now, queue it;
//! 10. `runtime/backoff.rs`: write backoff, forgotten on an edit;
//! 11. `runtime/cache.rs`: the resource's entry recorded;
//! 12. `runtime/cache/entry.rs`: its hold, phase slot, versions seen;
//! 13. `runtime/token.rs`: its uid and resourceVersion packed;
//! 14. `runtime/queue.rs`: holds the work until a worker takes it;
//! 15. `runtime/mod.rs`: whether this replica dispatches, the log subject;
//! 16. `runtime/worker.rs`: runs a pass on the book's copy, counts it;
//! 17. `reconcile/prepare.rs`: due check, options, plan, identity, lease;
//! 18. `package/options.rs`: the callbacks' input, from the snapshot;
//! 19. `package/erased.rs`: the package bound to the resource's config;
//! 20. `package/typed.rs`: that config decoded, once for the pass;
//! 21. `package/schema.rs`: the package's declaration read;
//! 22. `reconcile/plan.rs`: what happens before any package code runs;
//! 23. `package/callback.rs`: each callback run, panics caught, timed;
//! 24. `telemetry/metrics.rs`: the callback's time observed;
//! 25. `package/context.rs`: the context a callback gets;
//! 26. `package/infrastructure.rs`: the default `identity`; `Outcome` read;
//! 27. `lock.rs`: the identity lock taken;
//! 28. `reconcile/driver.rs`: performs each effect the decision names;
//! 29. `reconcile/pass.rs`: the guarded writes, the external name first;
//! 30. `package/api.rs`: the fenced API handle a callback gets;
//! 31. `reconcile/decision.rs`: the ordered rules: what to do next;
//! 32. `reconcile/protocol.rs`: what they say; how a pass ends (`Report`);
//! 33. `domain/immutable.rs`: the immutable field checked;
//! 34. `package/validation.rs`: what `validate` answered, bounded;
//! 35. `telemetry/request_metrics.rs`: every request counted and timed;
//! 36. `cached/own_writes.rs`: each write marked for the cached reads;
//! 37. `domain/names.rs`: the names we own (the external-name annotation);
//! 38. `reconcile/steps.rs`: `converge` run without durable steps, settled;
//! 39. `steps/mod.rs`: the steps handle of a package without steps;
//! 40. `cached/mod.rs`: the package's cached reads of its ConfigMap;
//! 41. `package/observation.rs`: what `observe` reported; outputs checked;
//! 42. `test_hooks.rs`: named boundaries (nothing happens without hooks);
//! 43. `domain/status.rs`: each status rendered; whether a check is quiet;
//! 44. `domain/phase.rs`: the phase and reason written;
//! 45. `reconcile/reporting.rs`: the logs, metrics and Events of a write;
//! 46. `telemetry/log.rs`: the log lines;
//! 47. `telemetry/events/mod.rs`: the Event recorder;
//! 48. `telemetry/events/state.rs`: its series and token buckets;
//! 49. `telemetry/events/outbox.rs`: the Events on their way out;
//! 50. `telemetry/stats.rs`: the pass counted as a `Verdict`;
//! 51. `telemetry/tally.rs`: the counters behind it;
//! 52. `memory.rs`: the log subject, and what is remembered per resource;
//! 53. `telemetry/failure_log.rs`: repeating failures logged once;
//! 54. `runtime/scheduler.rs`: the next check's timer, in the book again.

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
mod memory;
pub mod migration;
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
pub use package::infrastructure::{Infrastructure, Outcome};
pub use package::observation::Observation;
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
