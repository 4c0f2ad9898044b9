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
//! - [`crd`]: CRD generation; [`telemetry`]: metrics, stats, health and
//!   their HTTP endpoints;
//! - `runner` (feature `runner`): an operator binary's flags, logging,
//!   signals and `crd` subcommand; with the feature `webhook`, the
//!   admission webhook's HTTPS server (`runner::webhook`).
//! - [`admission`]: the packages' validating admission (the pass's
//!   pre-effect checks judged at `kubectl apply`) and its
//!   ValidatingWebhookConfiguration.
//!
//! # Map of the crate
//! - `config`, `controller`, `client_stack`: [`Config`], its validation,
//!   and the one client every part of the controller uses (request
//!   metrics, then the leader-election fence), built once in
//!   `client_stack::client_stack`.
//! - `package/`: everything a package author touches, in one place: the
//!   public facade (`mod`), `infrastructure` (the trait), `context` and
//!   `identity_context` (what its callbacks get), `observation`,
//!   `outputs`, `schema` (the [`ResourceSchema`] a package is built
//!   around), `typed` (typed configs), `validation` (what `validate`
//!   returns), `rejected`, `setters`, `result` (what a callback returns),
//!   `options` (the closure form's options map, with the handles a pass
//!   hands out),
//!   `erased` ([`Package`]: either form behind one type), `binding` (a
//!   package bound to one resource's decoded config: one erased interface
//!   for every package), `closures` (the closure form answering that
//!   interface, its synchronous closures on blocking threads but the pure
//!   `validate` and `identity` inline) and `callback` (how a callback
//!   runs, panics caught).
//! - `domain/`: the rules of a pass ("One pass, in order", above) and
//!   plain data, without I/O or handles: `due`, `spec`, `status` (and
//!   when a check is quiet), `names`, `resource`, `intent`, `time`,
//!   `jitter` (each interval's uid-derived stretch).
//! - `reconcile/`: one pass: `mod` (the one-shot [`reconcile`]: read,
//!   prepare, lock, read again), `prepare` (the due check, options, plan
//!   and identity, the same for every caller), `plan` (what happens before
//!   any package code runs), `pass` (what a pass was given and what it
//!   accumulates; the guarded writes), `rules` (the ordered rules), `act`
//!   (observe, converge or destroy, publishing first), `external_name`
//!   (its record on the resource), `reporting` (logs, metrics and Events
//!   of a pass), `report` (what a pass returns).
//! - `related`, `references`: related kinds and how their objects map to
//!   resources; reference fields, readiness and the kind graph.
//!   `reconcile::references` resolves a resource's references before any
//!   callback.
//! - `resource`, `replicas`: public modules that gather items
//!   defined elsewhere (`resource` reads the rules of `domain/`).
//! - `runtime/`: `book` (the one owner of every resource's state: events
//!   in, decisions out, no I/O), whose plain data are `cache` (compact
//!   entries), `scheduler` (timers), `related` (related objects: version
//!   and targets), `references` (who refers to whom) and `backoff`;
//!   `dispatch` (the only code that locks the book: turns reports into its
//!   events and acts on its decisions), `reflector` (list + watch per type,
//!   or related kind, and scope), `queue`, `worker`, and, next to the
//!   runtime, `election` and `shards` (the elector and sharding tasks).
//! - `leader/`: leader election: `settings`, `elector`, `gate`, `fence`
//!   (the client hook).
//! - `sharding/`: scale-out: `settings`, `assignment` (rendezvous with a
//!   bounded load; a resource's shard), `table` (each shard's gate and
//!   drain state), `view` (a round's Leases: one list), `roster`
//!   (membership slots), `task` (membership and shard Leases next to the
//!   runtime).
//! - `telemetry/`: `metrics`, `request_metrics`, `events/`, `log`,
//!   `failure_log` (repeating failures logged once per change), `stats`
//!   (the runtime's counters and the `Verdict` a pass is
//!   counted as), `health`.
//! - `steps/`: durable steps: the `Steps` handle callbacks use, the record
//!   in `status.workflow` (`record`), run ids and keys (`key`); the pass
//!   answers the handle in `reconcile::steps`.
//! - `test_hooks`: test-only pauses and SIGKILLs at named boundaries of
//!   a pass (`reconcile::steps`, `act` and `pass` reach them).
//! - `admission/`: `request` and `verdict` (the AdmissionReview read and
//!   answered), `judge` (the pass's pre-effect checks, calling the
//!   functions the pass uses), `common_fields` (which common field the
//!   parser refuses), `configuration` (the ValidatingWebhookConfiguration).
//!   `runner/webhook/`: `server` (TLS, HTTP/1.1, limits), `certificates`,
//!   `reload` (a certificate directory watched), `self_signed`, `flags`,
//!   `run` (in the runner: before the first write, stopped last).
//! - `crd/`, `preflight`, `http`, `lock`, `namespaces`.
//!
//! # One resource's path
//! 1. `runtime::reflector`: a watch event arrives and goes to
//! 2. `runtime::dispatch` (`take_in`), which derives what the book needs
//!    (`Controller::due`, references) and gives it one event under its lock:
//! 3. `runtime::book` (`arrived`) records it in the cache, keeps the
//!    object as the resource's copy, and decides: due now, so a `Queue`
//!    decision (else a timer).
//!    The dispatcher acts on it:
//! 4. `runtime::queue` holds the work until
//! 5. `runtime::worker` takes it (with `dispatch::pass_began`, the request
//!    it serves and the copy, while the watch has had no gap since), reads
//!    the object only without a copy, and calls
//! 6. `reconcile::prepare`: the due check, the options, the plan from
//! 7. `reconcile::plan`, and the identity through
//! 8. `callback`. Back in the worker: with sharding, shard admission, and
//!    the lease the writes are fenced by (`Terms`); then, under the
//!    identity `lock` (`Prepared::run_locked`),
//! 9. `reconcile::pass` runs
//! 10. `reconcile::rules` in order; for rule 8,
//! 11. `reconcile::act` observes and converges (the callbacks through
//!     `callback` again), and every status and finalizer write goes back
//!     through `reconcile::pass` with the snapshot's resourceVersion, over
//!     the client stack.
//!
//! The worker then counts the pass's `Verdict` and hands it to the book
//! through `dispatch::pass_ended`: the book settles holds and backoff,
//! keeps the next check in memory (whether the pass wrote it or, a quiet
//! check, wrote nothing) and decides again; the watch event of the pass's
//! own write comes back through step 1.

pub mod admission;
mod cached;
mod client_stack;
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
// The project's own end-to-end and chaos tests pause or kill an operator
// through these: not part of the supported API.
#[doc(hidden)]
pub mod test_hooks;

pub use async_trait::async_trait;
pub use config::Config;
pub use controller::{controller, Controller};
pub use error::Error;
pub use package::context::Context;
pub use package::identity_context::IdentityContext;
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
