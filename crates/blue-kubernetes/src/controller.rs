//! The validated controller handle.

use crate::client_stack::client_stack;
use crate::leader::{Fence, Gate};
use crate::memory::Memory;
use crate::telemetry::{EventRecorder, Metrics, Telemetry};
use crate::{Config, Error};
use std::sync::Arc;

/// A validated controller configuration; nothing runs until [`start`](crate::start).
/// Cheap to clone.
#[derive(Clone)]
pub struct Controller {
    pub(crate) config: Arc<Config>,
    pub(crate) telemetry: Arc<Telemetry>,
    /// The leadership gate the fence and the runtime check, when leader
    /// election is configured.
    pub(crate) gate: Option<Arc<Gate>>,
    /// Every shard's gate and drain state, with sharding configured.
    pub(crate) shards: Option<Arc<crate::sharding::ShardTable>>,
    /// What the controller remembers of each resource outside the book.
    pub(crate) memory: Arc<Memory>,
    /// Set by [`Runtime::stop`](crate::Runtime::stop) (each runtime has
    /// its own): a pass ends at its next durable-step boundary.
    pub(crate) stopping: Arc<std::sync::atomic::AtomicBool>,
    /// The cached related kinds' objects, for the packages' reads.
    pub(crate) objects: Arc<crate::cached::ObjectStore>,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Validates `config` and builds a controller without starting anything.
///
/// Fails with [`Error::InvalidConfig`] naming the first unusable field.
///
/// ```
/// # use blue_kubernetes::{controller, Config, Error, Package};
/// # fn demo(client: std::sync::Arc<dyn blue_kubernetes_client::Client>, package: Package) {
/// let mut config = Config::new(client, vec![package]);
/// config.workers = 0;
/// let err = controller(config).unwrap_err();
/// assert!(matches!(err, Error::InvalidConfig { field: "workers", .. }));
/// # }
/// ```
pub fn controller(mut config: Config) -> Result<Controller, Error> {
    config.validate()?;
    let metrics = Arc::new(Metrics::new());
    let gate = config
        .leader_election
        .as_ref()
        .map(|_| Arc::new(Gate::default()));
    let shards = config
        .sharding
        .as_ref()
        .map(|s| Arc::new(crate::sharding::ShardTable::new(s.shards, &metrics)));
    // Every write of the controller's client is fenced by the leader's
    // lease; each pass also carries the fence it started under (the
    // leader's or its shard's), see `reconcile`.
    let fence = gate
        .clone()
        .map(|gate| Fence::leader(gate, config.now.clone()));
    let kinds = crate::runtime::related::kinds(&config.packages)?;
    let objects = Arc::new(crate::cached::ObjectStore::new(
        kinds.iter().map(|k| (&k.descriptor, k.cached.as_ref())),
        config.cached_read_wait_ms,
        &metrics,
    ));
    config.client = client_stack(config.client, &metrics, fence, &objects);
    let events = config.event_component.clone().map(|component| {
        EventRecorder::new(
            component,
            config.client.clone(),
            config.now.clone(),
            metrics.clone(),
        )
    });
    let memory = Arc::new(Memory::new(
        &metrics,
        events.as_ref().map(EventRecorder::memory),
    ));
    let telemetry = Telemetry::new(metrics, events, config.log_callback_errors);
    Ok(Controller {
        config: Arc::new(config),
        telemetry: Arc::new(telemetry),
        gate,
        shards,
        memory,
        stopping: Arc::default(),
        objects,
    })
}

impl Controller {
    pub(crate) fn now(&self) -> u64 {
        (self.config.now)()
    }

    /// When and by which rule `resource` becomes due (see
    /// `due::due_named`), judged now with this controller's names and retry
    /// settings.
    pub(crate) fn due(&self, resource: &serde_json::Value) -> crate::domain::due::Due {
        crate::domain::due::due_named(
            resource,
            self.now(),
            &self.config.names,
            self.config.retry_max_ms,
        )
    }

    /// Entries of what the controller remembers per resource, for the
    /// behaviour tests that prove forgetting (the `testing` feature).
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub fn remembered(&self) -> usize {
        self.memory.len()
    }

    /// The controller's metrics; serve [`Metrics::encode`] at `/metrics`.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.telemetry.metrics
    }

    /// The configuration this controller was built from. Its `client` is
    /// the controller's client stack: requests are counted and timed, and
    /// fenced under leader election.
    pub fn config(&self) -> &Config {
        &self.config
    }
}
