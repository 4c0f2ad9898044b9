//! The runtime: reflectors fill a compact cache from paginated lists and
//! watches, a timer queue fires each resource's next due time, and a
//! coalescing queue feeds a fixed pool of workers.
//!
//! # Guarantees
//! - The due rules decide, unchanged (the crate README, "One pass, in
//!   order"): a watched change is queued as soon as its event arrives and
//!   its pass acts on the object the event delivered; a due time fires its
//!   timer, and that pass reads the object once, from the API server's
//!   watch cache.
//! - Lost events cost at most `resync_ms`: every reflector lists in full
//!   that often while watching, and resources the list shows changed,
//!   added or gone are handled as if their events had arrived.
//! - Without watches (`Config::watch` off, a client that cannot watch, or
//!   watches that keep failing) every type is listed every `poll_ms`, and
//!   due-ness is decided from those lists, as before.
//!
//! # Caveats
//! - A resource whose timer fires while watching is read once before its
//!   pass: the cache keeps no object.

mod backoff;
mod book;
mod cache;
mod dispatch;
mod election;
pub(crate) mod key;
mod queue;
mod references;
mod reflector;
pub(crate) mod related;
mod scheduler;
mod shards;
pub(crate) mod token;
mod worker;

pub use crate::telemetry::{Health, Stats};

use crate::telemetry::failure_log::FailureLog;
use crate::telemetry::Counters;
use crate::{Controller, Error};
use backoff::ListBackoff;
use blue_kubernetes_client::ResourceDescriptor;
use book::protocol::Settings;
use book::Book;
use queue::WorkQueue;
use std::sync::{Arc, Mutex};
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

/// How long `stop` waits for queued Events: they are advice, and an
/// unreachable API server must not hold a shutdown for long.
const EVENT_FLUSH_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// A started controller. Dropping it without [`Runtime::stop`] leaves the
/// tasks running until the tokio runtime shuts down.
pub struct Runtime {
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    election: Option<election::Election>,
    sharding: Option<shards::Sharding>,
}

struct Shared {
    controller: Controller,
    queue: WorkQueue,
    counters: Counters,
    health: Arc<Health>,
    /// The reflectors' failures that repeat, logged once per change of
    /// state (each resource's are in the controller's memory).
    failures: FailureLog,
    /// Reflectors whose lists fail, waiting before the next list.
    list_backoff: ListBackoff,
    /// Every resource's state; only `dispatch` locks it.
    book: Mutex<Book>,
    /// Wakes the timer loop when a timer moved earlier.
    wake: Notify,
    /// The related kinds of every package, each watched once per scope.
    related: Vec<related::Kind>,
    /// Per package: whether some package refers to its resources.
    referenced: Vec<bool>,
    /// Set with leader election: dispatch only while it allows.
    gate: Option<Arc<crate::leader::Gate>>,
}

/// What a reflector lists and watches, and where its objects go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Feed {
    /// The resources of this package: the cache and the timers.
    Resources(usize),
    /// Objects of this related kind: early checks of what they map to.
    Related(usize),
}

impl Shared {
    /// The log subject of a resource: `plural.group ns/name`.
    fn subject(&self, key: &key::Key) -> String {
        let descriptor = self.controller.config.packages[key.package()].descriptor();
        crate::memory::subject(descriptor, key.namespace(), key.name())
    }

    fn may_dispatch(&self) -> bool {
        let now = self.controller.now();
        self.gate.as_ref().is_none_or(|g| g.may_dispatch(now))
    }
}

/// Starts the reflectors (one per package type and namespace, or one per
/// type for all namespaces and cluster-scoped types), the timer loop and
/// the workers. Must be called inside a running tokio runtime. Logs one
/// WARN when the controller runs with the reference's
/// [`Names`](crate::config::Names) without having chosen them.
///
/// With [`Config::leader_election`](crate::Config::leader_election) set, an
/// elector runs alongside: only while this process holds the Lease do the
/// reflectors list and watch and the workers reconcile, and status and
/// finalizer writes are refused once the lease can no longer be proven held.
/// With [`Config::sharding`](crate::Config::sharding), the sharding task
/// runs alongside instead: every replica lists and watches, and a pass runs
/// past `identity` only in the replica holding its shard's Lease.
///
/// ```no_run
/// # async fn demo(controller: blue_kubernetes::Controller) -> Result<(), blue_kubernetes::Error> {
/// let runtime = blue_kubernetes::start(controller)?;
/// // ... until SIGTERM ...
/// runtime.stop().await;
/// # Ok(()) }
/// ```
pub fn start(mut controller: Controller) -> Result<Runtime, Error> {
    let handle = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
    // This runtime's own: stopping it leaves other clones' passes alone.
    controller.stopping = Arc::default();
    crate::telemetry::log::reference_names(&controller.config);
    let workers = controller.config.workers;
    let election = election::begin(&controller, &handle)?;
    let config = &controller.config;
    // Validated when the controller was built.
    let related = related::kinds(&config.packages)?;
    let referenced = crate::package::erased::referenced_packages(&config.packages);
    let scopes = reflector_scopes(config, &related);
    let health = Health::new(config.now.clone(), config.poll_ms, scopes.len());
    let settings = Settings {
        poll_ms: config.poll_ms,
        timer_slack_ms: config.timer_slack_ms,
        retry_base_ms: config.retry_base_ms,
        retry_max_ms: config.retry_max_ms,
        keep_copies: config.watch,
    };
    let feeds = scopes.iter().map(|s| (s.feed, s.namespace.clone()));
    let book = Book::new(settings, &config.names.request_annotation, feeds.collect());
    let counters = Counters::new(controller.telemetry.metrics.clone());
    let shared = Arc::new(Shared {
        controller,
        queue: WorkQueue::default(),
        counters,
        health: Arc::new(health),
        failures: FailureLog::default(),
        list_backoff: ListBackoff::default(),
        book: Mutex::new(book),
        wake: Notify::new(),
        related,
        referenced,
        gate: election.as_ref().map(|e| e.gate.clone()),
    });
    let sharding = shards::begin(&shared, &handle)?;
    zero_phase_gauges(&shared);
    let (shutdown, stopped) = watch::channel(false);
    let mut tasks = vec![handle.spawn(dispatch::timer_loop(shared.clone(), stopped.clone()))];
    for scope in scopes {
        tasks.push(handle.spawn(reflector::run(shared.clone(), scope, stopped.clone())));
    }
    tasks.extend((0..workers).map(|_| handle.spawn(worker::work_loop(shared.clone()))));
    Ok(Runtime {
        shared,
        shutdown,
        tasks,
        election,
        sharding,
    })
}

impl Runtime {
    /// Drains: no new work, queued work dropped, active reconciles (and their
    /// callbacks) awaited to completion, then queued Events written (for at
    /// most 5 s). Nothing is cancelled. A pass running durable steps ends
    /// at its next step boundary instead: the step running finishes and is
    /// recorded, the next one is left for the next process (the callback
    /// sees [`StepError::Stopping`](crate::steps::StepError::Stopping)). With leader
    /// election, the lease is renewed while draining and released after;
    /// with sharding, so are the shard Leases and the membership slot.
    pub async fn stop(self) {
        self.shared
            .controller
            .stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = self.shutdown.send(true);
        self.shared.queue.close();
        for task in self.tasks {
            let _ = task.await;
        }
        if let Some(events) = &self.shared.controller.telemetry.events {
            if !events.flush_within(EVENT_FLUSH_LIMIT).await {
                tracing::warn!("stopped before every queued Event was written");
            }
        }
        if let Some(election) = self.election {
            election.end().await;
        }
        if let Some(sharding) = self.sharding {
            sharding.end().await;
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        let mut stats = self.shared.counters.snapshot();
        (stats.callback_failures, stats.invalid) = self.shared.controller.telemetry.counts();
        if let Some(election) = &self.election {
            election.fill(&mut stats);
        }
        stats
    }

    /// Liveness and readiness, for `/healthz` and `/readyz`.
    pub fn health(&self) -> Arc<Health> {
        self.shared.health.clone()
    }

    /// The controller this runtime runs (e.g. for its [`metrics`](Controller::metrics)).
    pub fn controller(&self) -> &Controller {
        &self.shared.controller
    }

    /// Whether this process may dispatch work now: always without leader
    /// election, else while it holds the Lease within its renew deadline.
    /// With sharding always true: see [`shards_owned`](Self::shards_owned).
    pub fn is_leader(&self) -> bool {
        self.shared.may_dispatch()
    }

    /// With [`Config::sharding`](crate::Config::sharding): the shards this
    /// replica dispatches now (their Lease held within the renew deadline,
    /// not being given up), in order; empty without sharding.
    pub fn shards_owned(&self) -> Vec<u32> {
        shards::owned(&self.shared)
    }

    /// Resources in the cache (listed or watched, not yet deleted).
    pub fn cached(&self) -> usize {
        dispatch::cached(&self.shared).0
    }

    /// Asks for an early check of the resource `namespace/name` of kind
    /// `kind` (one of the controller's packages), in memory: nothing is
    /// written for the request. It is checked as soon as a worker is free,
    /// as if its next check were due, so `observe` runs and drift is
    /// repaired; one already running is checked again when its pass ends
    /// and the watch brought back the pass's last write (a check of the
    /// version before it would only lose its first write with Conflict),
    /// and requests made before a pass starts are served by it. For a
    /// package's own event source (a cloud's notifications, say). Returns
    /// false when the kind is no package's or the resource is not cached
    /// (not listed yet, or gone); nothing is remembered then.
    ///
    /// ```no_run
    /// # async fn demo(runtime: blue_kubernetes::Runtime) {
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// let machines = ResourceDescriptor::new("example.com", "v1", "machines", "Machine");
    /// // The cloud said machine "web-1" changed state.
    /// runtime.trigger(&machines, "infra", "web-1");
    /// # }
    /// ```
    pub fn trigger(&self, kind: &ResourceDescriptor, namespace: &str, name: &str) -> bool {
        let packages = &self.shared.controller.config.packages;
        let Some(package) = packages.iter().position(|p| {
            let d = p.descriptor();
            d.group == kind.group && d.plural == kind.plural
        }) else {
            return false;
        };
        let namespaced = packages[package].descriptor().namespaced;
        let key = key::Key::new(package, if namespaced { namespace } else { "" }, name);
        dispatch::request(&self.shared, &key, crate::reconcile::Request::Check)
    }

    /// Related objects in the cache (listed or watched, not yet deleted).
    pub fn related_cached(&self) -> usize {
        dispatch::cached(&self.shared).1
    }

    /// Entries of every map kept per resource (the book's, the queue's,
    /// the controller's memory), for the behaviour tests that prove
    /// forgetting (the `testing` feature).
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub fn remembered(&self) -> usize {
        let queue = self.shared.queue.remembered();
        dispatch::remembered(&self.shared) + queue + self.shared.controller.remembered()
    }

    /// Resources waiting in the queue (not counting running ones).
    pub fn queued(&self) -> usize {
        self.shared.queue.len()
    }
}

/// One list-and-watch per namespace scope of each package type, then of
/// each related kind.
fn reflector_scopes(
    config: &crate::Config,
    related: &[related::Kind],
) -> Vec<reflector::scope::Scope> {
    let resources = config
        .packages
        .iter()
        .enumerate()
        .map(|(i, p)| (Feed::Resources(i), p.descriptor(), None));
    let related = related
        .iter()
        .enumerate()
        .map(|(i, k)| (Feed::Related(i), &k.descriptor, k.selector.as_ref()));
    let mut scopes = Vec::new();
    for (feed, descriptor, selector) in resources.chain(related) {
        let namespaces = match descriptor.namespaced {
            true => config.namespace.scopes(),
            false => vec![""],
        };
        for namespace in namespaces {
            scopes.push(reflector::scope::Scope {
                index: scopes.len(),
                feed,
                descriptor: descriptor.clone(),
                namespace: namespace.to_string(),
                selector: selector.cloned(),
            });
        }
    }
    scopes
}

/// `blue_resources{controller, phase}` starts at zero for every phase.
fn zero_phase_gauges(shared: &Shared) {
    let phases = &shared.controller.telemetry.metrics.phases;
    for package in &shared.controller.config.packages {
        let controller = package.descriptor().qualified_plural();
        for slot in 0..cache::entry::PHASE_SLOTS as u8 {
            let phase = cache::entry::slot_label(slot);
            phases
                .get_or_create(&[("controller", controller.clone()), ("phase", phase.into())])
                .set(0);
        }
    }
}
