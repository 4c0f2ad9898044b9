//! What a controller is configured with: [`Config`] and the types of its
//! fields (the clock, the namespaces watched, the [`Names`] the controller
//! writes on resources, the identity lock's [`LockDomain`]), and the
//! startup [`preflight`] that checks a configured controller against the
//! cluster. Leader election and sharding are in
//! [`replicas`](crate::replicas).

pub use crate::clock::{system_clock, Clock};
pub use crate::domain::names::{Names, DESTROY_PROTECTION_KEY, FINALIZER, REQUEST_ANNOTATION};
pub use crate::lock::LockDomain;
pub use crate::namespaces::Namespaces;
pub use crate::preflight::{preflight, Problem};

use crate::replicas::{LeaderElectionConfig, ShardingConfig};
use crate::test_hooks::TestHooks;
use crate::{package::erased::Package, Error};
use blue_kubernetes_client::Client;
use std::collections::HashSet;
use std::sync::Arc;

/// [`Config::timer_slack_ms`]'s default.
const DEFAULT_TIMER_SLACK_MS: u64 = 200;

/// Everything a controller needs. Build with [`Config::new`], then set
/// what differs from the defaults with the `with_*` setters (or assign the
/// fields). New fields come with defaults, so the struct is
/// `#[non_exhaustive]`: it cannot be written as a literal.
///
/// ```
/// # use blue_kubernetes::{Config, Package};
/// # fn demo(client: std::sync::Arc<dyn blue_kubernetes_client::Client>, package: Package) {
/// let config = Config::new(client, vec![package])
///     .with_workers(4)
///     .with_namespace("infra".into())
///     .with_event_component("widgets-operator".to_string());
/// assert_eq!(config.workers, 4);
/// # }
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct Config {
    /// The package types to manage; at least one, each descriptor once.
    pub packages: Vec<Package>,
    /// How the controller reads and writes resources.
    pub client: Arc<dyn Client>,
    /// Concurrent reconciles in the polling runtime (default 2, > 0).
    pub workers: usize,
    /// The namespaces managed: one (default `default`), several, or all.
    pub namespace: Namespaces,
    /// Feed the cache from watch streams where the client can watch
    /// (default true). Off, or with a client that cannot watch (the per-call
    /// kubectl transport), every type is listed every `poll_ms`.
    pub watch: bool,
    /// List period in milliseconds when not watching, and the shortest wait
    /// before a pass that changed nothing is retried (default 500, > 0).
    pub poll_ms: u64,
    /// While watching, a full list every `resync_ms` (default 300000, i.e.
    /// 5 minutes, > 0) is the backstop for lost events: every
    /// edited or due resource is reconciled within it even if its events
    /// never arrive.
    pub resync_ms: u64,
    /// Items per page of a list (default 500, > 0).
    pub page_limit: u32,
    /// The clock used for due-ness and status times.
    pub now: Clock,
    /// First retry delay (default 1000 ms, > 0).
    pub retry_base_ms: u64,
    /// Largest retry delay (default 60000 ms, >= `retry_base_ms`).
    pub retry_max_ms: u64,
    /// A periodic check that finds nothing new writes no status (a quiet
    /// check: see "Guarantees" in the crate docs), unless the stored
    /// `lastReconcileTime` is at least this old; then it writes once, a
    /// heartbeat that shows the controller still checks (default 600000,
    /// i.e. 10 minutes; 0 writes every check, as the reference does; at
    /// most 365 days).
    pub status_heartbeat_ms: u64,
    /// How long a cached related read waits for the watch to deliver this
    /// process's own last write to the object read, before it reads the
    /// API server instead (default 1000; at most 60000; see
    /// [`Api::cached`](crate::package::Api::cached)).
    pub cached_read_wait_ms: u64,
    /// How much later than due a periodic check or retry may run, so that
    /// timers due close together fire together (default 200; 0: each on
    /// its millisecond; at most 60000). A timer set for `t` fires at the
    /// first multiple of a step at or after `t`; the step is this slack,
    /// halved until it is at most a tenth of the wait, so a check due in
    /// 10 s may run 200 ms late and one due in 250 ms at most 16 ms. The
    /// checks of a fleet, spread over their intervals by jitter, then reach
    /// the API server a few at a time instead of one by one, and the
    /// server, the proxy and the operator wake a few times a second instead
    /// of for every request: at 1,000 resources due every 10 s that halves
    /// the API server's CPU (BENCHMARKS.md). Watch events are never delayed.
    pub timer_slack_ms: u64,
    /// Log the text of a failed callback's error, with its whole `source()`
    /// chain (`outer: middle: inner`, as `anyhow`'s `{:#}` prints it), and
    /// validation messages in the operator's log (default true). Turn it off for
    /// packages whose errors may carry secrets: the failure is still logged,
    /// without the text. The text never reaches status or Events either way;
    /// only validation messages marked [`UserFacingMessage`](crate::package::UserFacingMessage)
    /// reach an Event, whatever this switch says.
    pub log_callback_errors: bool,
    /// Write Kubernetes Events on phase transitions and failures, reported
    /// by this component name (default `None`: no Events, so no extra
    /// requests and no `create events` permission needed). Their text is
    /// generic, except the validation messages a package marks
    /// [`UserFacingMessage`](crate::package::UserFacingMessage); the crate docs
    /// ("Observing it") list exactly what an Event can say.
    pub event_component: Option<String>,
    /// The finalizer, request annotation and destroy-protection key
    /// (default: the reference's, see [`Names`]; [`start`](crate::start)
    /// warns once when running with them). Set your own before the first
    /// install: [`Names::for_domain`].
    pub names: Names,
    /// Leader election among replicas (default `None`: this process acts
    /// alone, and must be the only one per cluster scope).
    pub leader_election: Option<LeaderElectionConfig>,
    /// Scale-out across replicas (default `None`): the work is split into
    /// shards by state identity and each replica dispatches only the
    /// shards whose Lease it holds. Idle, each replica sends one Lease
    /// list and one renewal per round (0.8 requests a second at the
    /// defaults: see [`ShardingConfig`] for the timing and its arithmetic).
    /// Exclusive with [`leader_election`](Self::leader_election): setting
    /// both is an [`Error::InvalidConfig`] naming both.
    ///
    /// ```
    /// # use blue_kubernetes::{controller, replicas::{LeaderElectionConfig, ShardingConfig}, Config, Error, Package};
    /// # fn demo(client: std::sync::Arc<dyn blue_kubernetes_client::Client>, package: Package) {
    /// let both = Config::new(client, vec![package])
    ///     .with_leader_election(LeaderElectionConfig::new("op", "infra"))
    ///     .with_sharding(ShardingConfig::new("op", "infra"));
    /// let err = controller(both).unwrap_err();
    /// assert!(matches!(err, Error::InvalidConfig { field: "sharding, leader_election", .. }));
    /// # }
    /// ```
    pub sharding: Option<ShardingConfig>,
    /// For tests only: pause or SIGKILL this process at named boundaries
    /// of a pass (default `None`: no hook, nothing checked). See
    /// [`test_hooks`](crate::test_hooks).
    #[doc(hidden)]
    pub test_hooks: Option<TestHooks>,
    /// The identity lock this controller takes (default: the one
    /// process-wide [`LockDomain::process`], which an operator keeps).
    /// Give independent controllers of one process, such as parallel
    /// tests, a [`LockDomain::new`] each, so equal identities in two of
    /// them are not [`Busy`](crate::Report::Busy) for each other.
    pub lock_domain: LockDomain,
}

impl Config {
    /// A configuration with the documented defaults.
    pub fn new(client: Arc<dyn Client>, packages: Vec<Package>) -> Self {
        Self {
            packages,
            client,
            workers: 2,
            namespace: "default".into(),
            watch: true,
            poll_ms: 500,
            resync_ms: 300_000,
            page_limit: blue_kubernetes_client::DEFAULT_PAGE_LIMIT,
            now: system_clock(),
            retry_base_ms: 1000,
            retry_max_ms: 60_000,
            status_heartbeat_ms: 600_000,
            cached_read_wait_ms: 1_000,
            timer_slack_ms: DEFAULT_TIMER_SLACK_MS,
            log_callback_errors: true,
            event_component: None,
            names: Names::default(),
            leader_election: None,
            sharding: None,
            test_hooks: None,
            lock_domain: LockDomain::process(),
        }
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        let invalid = |field, reason| Err(Error::InvalidConfig { field, reason });
        if self.packages.is_empty() {
            return invalid("packages", "must not be empty");
        }
        let mut seen = HashSet::new();
        if !self
            .packages
            .iter()
            .all(|p| seen.insert(p.descriptor().qualified_plural()))
        {
            return invalid("packages", "must not register a resource type twice");
        }
        for package in &self.packages {
            for reference in &package.schema().references {
                if crate::package::erased::package_of(&self.packages, &reference.kind).is_none() {
                    return invalid("packages", "a reference names a kind no package manages");
                }
                let field = reference.field.as_str();
                if field.is_empty()
                    || field == "profile"
                    || field == self.names.destroy_protection_key
                {
                    return invalid(
                        "packages",
                        "a reference field must be a config field of its own",
                    );
                }
            }
        }
        if self.workers == 0 {
            return invalid("workers", "must be greater than zero");
        }
        if let Some(reason) = self.namespace.problem() {
            return invalid("namespace", reason);
        }
        if self.poll_ms == 0 {
            return invalid("poll_ms", "must be greater than zero");
        }
        if self.resync_ms == 0 {
            return invalid("resync_ms", "must be greater than zero");
        }
        if self.page_limit == 0 {
            return invalid("page_limit", "must be greater than zero");
        }
        if self.retry_base_ms == 0 {
            return invalid("retry_base_ms", "must be greater than zero");
        }
        if self.retry_max_ms < self.retry_base_ms {
            return invalid("retry_max_ms", "must be at least retry_base_ms");
        }
        if self.status_heartbeat_ms > crate::resource::MAX_RECONCILE_INTERVAL_MS {
            return invalid("status_heartbeat_ms", "must be at most 365 days");
        }
        if self.cached_read_wait_ms > 60_000 {
            return invalid("cached_read_wait_ms", "must be at most 60000");
        }
        if self.timer_slack_ms > 60_000 {
            return invalid("timer_slack_ms", "must be at most 60000");
        }
        if let Some(component) = &self.event_component {
            let ok = |b: u8| b.is_ascii_alphanumeric() || b"-._/".contains(&b);
            if component.is_empty() || component.len() > 128 || !component.bytes().all(ok) {
                return invalid("event_component", "must be 1-128 of [A-Za-z0-9-._/]");
            }
        }
        if let Some((field, reason)) = self.names.problem() {
            return invalid(field, reason);
        }
        if let Some(election) = &self.leader_election {
            election.validate()?;
        }
        if let Some(sharding) = &self.sharding {
            if self.leader_election.is_some() {
                return invalid(
                    "sharding, leader_election",
                    "are exclusive: a sharded replica leads its own shards; set one",
                );
            }
            sharding.validate()?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("packages", &self.packages.len())
            .field("workers", &self.workers)
            .field("namespace", &self.namespace)
            .field("watch", &self.watch)
            .field("poll_ms", &self.poll_ms)
            .field("resync_ms", &self.resync_ms)
            .field("page_limit", &self.page_limit)
            .field("retry_base_ms", &self.retry_base_ms)
            .field("retry_max_ms", &self.retry_max_ms)
            .field("status_heartbeat_ms", &self.status_heartbeat_ms)
            .field("cached_read_wait_ms", &self.cached_read_wait_ms)
            .field("timer_slack_ms", &self.timer_slack_ms)
            .field("log_callback_errors", &self.log_callback_errors)
            .field("event_component", &self.event_component)
            .field("names", &self.names)
            .field("leader_election", &self.leader_election)
            .field("sharding", &self.sharding)
            .field("test_hooks", &self.test_hooks)
            .field("lock_domain", &self.lock_domain)
            .finish_non_exhaustive()
    }
}

crate::package::setters::setters!(Config {
    /// Sets [`workers`](Config::workers).
    with_workers(workers: usize),
    /// Sets [`namespace`](Config::namespace).
    with_namespace(namespace: Namespaces),
    /// Sets [`watch`](Config::watch).
    with_watch(watch: bool),
    /// Sets [`poll_ms`](Config::poll_ms).
    with_poll_ms(poll_ms: u64),
    /// Sets [`resync_ms`](Config::resync_ms).
    with_resync_ms(resync_ms: u64),
    /// Sets [`page_limit`](Config::page_limit).
    with_page_limit(page_limit: u32),
    /// Sets [`now`](Config::now), the clock.
    with_clock(now: Clock),
    /// Sets [`retry_base_ms`](Config::retry_base_ms).
    with_retry_base_ms(retry_base_ms: u64),
    /// Sets [`retry_max_ms`](Config::retry_max_ms).
    with_retry_max_ms(retry_max_ms: u64),
    /// Sets [`status_heartbeat_ms`](Config::status_heartbeat_ms).
    with_status_heartbeat_ms(status_heartbeat_ms: u64),
    /// Sets [`cached_read_wait_ms`](Config::cached_read_wait_ms).
    with_cached_read_wait_ms(cached_read_wait_ms: u64),
    /// Sets [`timer_slack_ms`](Config::timer_slack_ms).
    with_timer_slack_ms(timer_slack_ms: u64),
    /// Sets [`log_callback_errors`](Config::log_callback_errors).
    with_log_callback_errors(log_callback_errors: bool),
    /// Sets [`event_component`](Config::event_component).
    with_event_component(event_component: String),
    /// Sets [`names`](Config::names).
    with_names(names: Names),
    /// Sets [`leader_election`](Config::leader_election).
    with_leader_election(leader_election: LeaderElectionConfig),
    /// Sets [`sharding`](Config::sharding).
    with_sharding(sharding: ShardingConfig),
    /// Sets [`test_hooks`](Config::test_hooks) (for tests only).
    #[doc(hidden)]
    with_test_hooks(test_hooks: TestHooks),
    /// Sets [`lock_domain`](Config::lock_domain).
    with_lock_domain(lock_domain: LockDomain),
});
