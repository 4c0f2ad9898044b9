//! The standard flags every operator binary takes, each also read from an
//! environment variable (a flag given wins over its variable).

use super::logging::LogFormat;
use crate::{
    config::Namespaces,
    replicas::{LeaderElectionConfig, ShardingConfig},
    Config,
};
use blue_kubernetes_client::KubectlConfig;
use clap::builder::FalseyValueParser;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The standard flags, as parsed. Read them in
/// [`Runner::packages`](super::Runner::packages) and
/// [`Runner::configure`](super::Runner::configure) through
/// [`Connected::flags`](super::Connected::flags).
#[derive(Clone, Debug, clap::Args)]
// No group of its own: the operator's flags struct may be named `Flags` too.
#[group(skip)]
#[command(group(clap::ArgGroup::new("connection").required(true).args(["context", "in_cluster"])))]
#[command(group(clap::ArgGroup::new("replicas").args(["leader_elect", "shards"])))]
#[non_exhaustive]
pub struct Flags {
    /// Kubeconfig context to use (never the current context implicitly)
    #[arg(long, value_name = "NAME", env = "BLUE_CONTEXT")]
    pub context: Option<String>,
    /// Kubeconfig file [default: kubectl's lookup]
    #[arg(
        long,
        value_name = "PATH",
        env = "BLUE_KUBECONFIG",
        conflicts_with = "in_cluster"
    )]
    pub kubeconfig: Option<PathBuf>,
    /// Use the pod's service account
    #[arg(long, env = "BLUE_IN_CLUSTER", value_parser = FalseyValueParser::new())]
    pub in_cluster: bool,
    /// The kubectl binary
    #[arg(long, value_name = "PATH", env = "KUBECTL", default_value = "kubectl")]
    pub kubectl: PathBuf,
    /// Namespaces to manage, comma-separated [default: the pod's namespace in-cluster, else `default`]
    #[arg(
        short,
        long,
        value_name = "NS",
        env = "BLUE_NAMESPACE",
        value_delimiter = ',',
        value_parser = clap::builder::NonEmptyStringValueParser::new()
    )]
    pub namespace: Vec<String>,
    /// Manage every namespace (needs a ClusterRole)
    #[arg(short = 'A', long, env = "BLUE_ALL_NAMESPACES", value_parser = FalseyValueParser::new(), conflicts_with = "namespace")]
    pub all_namespaces: bool,
    /// How to reach the API server: one long-lived `kubectl proxy` on a private unix socket, one kubectl process per request, or (where built in) kube-rs's client
    #[arg(
        long,
        value_name = "T",
        env = "BLUE_TRANSPORT",
        value_enum,
        default_value_t
    )]
    pub transport: Transport,
    /// Concurrent reconciles [default: the operator's]
    #[arg(long, value_name = "N", env = "BLUE_WORKERS", value_parser = clap::value_parser!(u16).range(1..))]
    pub workers: Option<u16>,
    /// List every --poll-ms instead of watching
    #[arg(long, env = "BLUE_NO_WATCH", value_parser = FalseyValueParser::new())]
    pub no_watch: bool,
    /// List period without watches, in milliseconds [default: 500]
    #[arg(long, value_name = "N", env = "BLUE_POLL_MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub poll_ms: Option<u64>,
    /// Full list while watching, the backstop for lost events, in milliseconds [default: 300000]
    #[arg(long, value_name = "N", env = "BLUE_RESYNC_MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub resync_ms: Option<u64>,
    /// A check that finds nothing new writes no status unless lastReconcileTime is this old, in milliseconds (0: write every check) [default: 600000]
    #[arg(long, value_name = "N", env = "BLUE_STATUS_HEARTBEAT_MS")]
    pub status_heartbeat_ms: Option<u64>,
    /// Checks and retries due within one step of this many milliseconds run together (0: each on time) [default: 200]
    #[arg(long, value_name = "N", env = "BLUE_TIMER_SLACK_MS")]
    pub timer_slack_ms: Option<u64>,
    /// Run as one of several replicas: only the holder of a coordination.k8s.io Lease reconciles
    #[arg(long, env = "BLUE_LEADER_ELECT", value_parser = FalseyValueParser::new())]
    pub leader_elect: bool,
    /// Run as one of several replicas that share the work, split into N shards (the same N for every replica)
    #[arg(long, value_name = "N", env = "BLUE_SHARDS")]
    pub shards: Option<u32>,
    /// The Lease's name (with --shards the prefix of NAME-member-K and NAME-shard-I) [default: the operator's name]
    #[arg(
        long,
        value_name = "NAME",
        env = "BLUE_LEASE_NAME",
        requires = "replicas"
    )]
    pub lease_name: Option<String>,
    /// The Lease's namespace [default: the first --namespace, else the pod's, else `default`]
    #[arg(
        long,
        value_name = "NS",
        env = "BLUE_LEASE_NAMESPACE",
        requires = "replicas"
    )]
    pub lease_namespace: Option<String>,
    /// Holder identity [default: host name and a random suffix]
    #[arg(
        long,
        value_name = "ID",
        env = "BLUE_LEADER_IDENTITY",
        requires = "replicas"
    )]
    pub leader_identity: Option<String>,
    /// Lease duration in milliseconds [default: 15000]
    #[arg(
        long,
        value_name = "N",
        env = "BLUE_LEASE_DURATION_MS",
        requires = "replicas"
    )]
    pub lease_duration_ms: Option<u64>,
    /// Renew deadline in milliseconds [default: 10000]
    #[arg(
        long,
        value_name = "N",
        env = "BLUE_RENEW_DEADLINE_MS",
        requires = "replicas"
    )]
    pub renew_deadline_ms: Option<u64>,
    /// Retry period in milliseconds [default: 2000, 2500 with --shards]
    #[arg(
        long,
        value_name = "N",
        env = "BLUE_RETRY_PERIOD_MS",
        requires = "replicas"
    )]
    pub retry_period_ms: Option<u64>,
    /// Serve /metrics, /healthz and /readyz on this address, e.g. 0.0.0.0:8080
    #[arg(long, value_name = "ADDR", env = "BLUE_METRICS_BIND")]
    pub metrics_bind: Option<SocketAddr>,
    /// The admission webhook's flags (feature `webhook`).
    #[cfg(feature = "webhook")]
    #[command(flatten)]
    pub webhook: super::webhook::WebhookFlags,
    /// Storage migration (`--migrate-storage`, `--migration-rate`).
    #[command(flatten)]
    pub migration: super::migration::MigrationFlags,
    /// Log lines as text or JSON, to stderr
    #[arg(
        long,
        value_name = "FMT",
        env = "BLUE_LOG_FORMAT",
        value_enum,
        default_value_t
    )]
    pub log_format: LogFormat,
    /// A level for this operator and blue-kubernetes (others log warnings), or directives such as `info,hyper=debug`
    #[arg(long, value_name = "FILTER", env = "RUST_LOG", default_value = "info", value_parser = super::logging::parse_filter)]
    pub log_level: String,
    /// Log failed callbacks without their error text
    #[arg(long, env = "BLUE_HIDE_CALLBACK_ERRORS", value_parser = FalseyValueParser::new())]
    pub hide_callback_errors: bool,
    /// Write no Kubernetes Events
    #[arg(long, env = "BLUE_NO_EVENTS", value_parser = FalseyValueParser::new())]
    pub no_events: bool,
    /// Start without checking the context, discovery and RBAC first
    #[arg(long, env = "BLUE_SKIP_PREFLIGHT", value_parser = FalseyValueParser::new())]
    pub skip_preflight: bool,
    /// On SIGTERM or SIGINT, how long running reconciles may take to finish before the process exits anyway: match the pod's terminationGracePeriodSeconds (keep a second or two for the exit). A callback still running then is cut off, as by a crash: durable steps are what resume such work in the next process
    #[arg(long, value_name = "DURATION", env = "BLUE_DRAIN_TIMEOUT", default_value = "25s", value_parser = humantime::parse_duration)]
    pub drain_timeout: Duration,
    /// Reconcile one resource once, print the result and exit: NAME in the first namespace, KIND/NAME when the operator manages several kinds (a kind or plural)
    #[arg(long, value_name = "[KIND/]NAME", conflicts_with_all = ["all_namespaces", "replicas"])]
    pub once: Option<String>,
    /// Hooks for the project's own end-to-end, chaos and benchmark tests only (never in production): comma-separated
    #[arg(long, value_name = "SPEC", env = "BLUE_TEST_HOOKS", hide = true)]
    pub test_hooks: Option<String>,
}

/// `--transport`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
#[non_exhaustive]
pub enum Transport {
    /// One long-lived `kubectl proxy` (the default): kubectl keeps every
    /// credential (exec plugins, OIDC, rotated token files). Every request
    /// and watch event crosses one more local process, about 0.3-0.5 ms
    /// each at rest and more when the cores are busy; a reaction crosses it
    /// three times (its event, Reconciling, the effect).
    #[default]
    Proxy,
    /// One kubectl process per request; lists instead of watching.
    Kubectl,
    /// kube-rs's client (feature `kube`), configured from the kubeconfig
    /// context or in-cluster by kube-rs itself: no kubectl runs. Choose it
    /// when reaction time matters more than keeping credentials and TLS
    /// out of the operator: it reacts at the kube-runtime peer's level,
    /// the proxy up to half again slower on a busy machine.
    #[cfg(feature = "kube")]
    Kube,
}

impl Transport {
    /// The value's spelling, as `--transport` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Proxy => "proxy",
            Transport::Kubectl => "kubectl",
            #[cfg(feature = "kube")]
            Transport::Kube => "kube",
        }
    }

    /// Whether this transport runs kubectl (which then reads the
    /// kubeconfig); kube-rs reads it itself.
    pub fn runs_kubectl(self) -> bool {
        match self {
            Transport::Proxy | Transport::Kubectl => true,
            #[cfg(feature = "kube")]
            Transport::Kube => false,
        }
    }
}

impl Flags {
    /// The kubectl options these flags describe.
    pub fn kubectl_config(&self) -> KubectlConfig {
        let mut options = match self.in_cluster {
            true => KubectlConfig::in_cluster(),
            false => KubectlConfig::for_context(self.context.clone().unwrap_or_default()),
        };
        options.kubeconfig = self.kubeconfig.clone();
        options.kubectl = self.kubectl.clone();
        options
    }

    /// The namespaces to manage: every one with `--all-namespaces`, else
    /// `--namespace`, else `home` (see [`Flags::home_namespace`]).
    pub fn namespaces(&self, home: &str) -> Namespaces {
        match (self.all_namespaces, self.namespace.is_empty()) {
            (true, _) => Namespaces::All,
            (false, false) => Namespaces::Only(self.namespace.clone()),
            (false, true) => home.into(),
        }
    }

    /// The namespace of the operator's own objects (its Lease, `--once`):
    /// the first `--namespace`, else in-cluster the pod's (read from
    /// `service_account_dir`, by default the standard one), else `default`.
    pub fn home_namespace(&self, service_account_dir: Option<&std::path::Path>) -> String {
        if let Some(first) = self.namespace.first() {
            return first.clone();
        }
        if self.in_cluster {
            let default = PathBuf::from(blue_kubernetes_client::DEFAULT_SERVICE_ACCOUNT_DIR);
            let dir = service_account_dir.unwrap_or(&default);
            if let Ok(ns) = std::fs::read_to_string(dir.join("namespace")) {
                if !ns.trim().is_empty() {
                    return ns.trim().to_string();
                }
            }
        }
        "default".to_string()
    }

    /// The leader election (`--leader-elect`) or sharding (`--shards`)
    /// these flags ask for, with the Lease named `default_name` unless
    /// `--lease-name` says otherwise, in `home` unless `--lease-namespace`.
    pub fn replicas(
        &self,
        default_name: &str,
        home: &str,
    ) -> (Option<LeaderElectionConfig>, Option<ShardingConfig>) {
        let name = self.lease_name.as_deref().unwrap_or(default_name);
        let namespace = self.lease_namespace.as_deref().unwrap_or(home);
        let election = self
            .leader_elect
            .then(|| self.lease(LeaderElectionConfig::new(name, namespace)));
        let sharding = self.shards.map(|shards| {
            let mut sharding = ShardingConfig::new(name, namespace);
            sharding.shards = shards;
            sharding.lease = self.lease(sharding.lease);
            sharding
        });
        (election, sharding)
    }

    /// `lease` with the identity and timing flags that were given.
    fn lease(&self, mut lease: LeaderElectionConfig) -> LeaderElectionConfig {
        if let Some(identity) = &self.leader_identity {
            lease.identity = identity.clone();
        }
        let timings = [
            (self.lease_duration_ms, &mut lease.lease_duration_ms),
            (self.renew_deadline_ms, &mut lease.renew_deadline_ms),
            (self.retry_period_ms, &mut lease.retry_period_ms),
        ];
        for (flag, field) in timings {
            if let Some(ms) = flag {
                *field = ms;
            }
        }
        lease
    }

    /// Sets what these flags say on `config` (the namespaces and the
    /// replicas are set by the runner, which knows the defaults).
    pub(crate) fn apply(&self, config: &mut Config) {
        config.watch = !self.no_watch;
        if let Some(workers) = self.workers {
            config.workers = workers.into();
        }
        let timings = [
            (self.poll_ms, &mut config.poll_ms),
            (self.resync_ms, &mut config.resync_ms),
            (self.status_heartbeat_ms, &mut config.status_heartbeat_ms),
            (self.timer_slack_ms, &mut config.timer_slack_ms),
        ];
        for (flag, field) in timings {
            if let Some(ms) = flag {
                *field = ms;
            }
        }
        config.log_callback_errors = !self.hide_callback_errors;
    }
}
