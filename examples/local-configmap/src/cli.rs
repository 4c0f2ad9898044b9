//! Command-line flags of the `local-configmap-operator` binary.

use blue_kubernetes::config::Namespaces;

use blue_kubernetes::replicas::{LeaderElectionConfig, ShardingConfig};
use blue_kubernetes_client::KubectlConfig;
use std::path::PathBuf;

/// Usage text (the test-only flags are deliberately not listed).
pub const USAGE: &str = "\
usage: local-configmap-operator (--context NAME [--kubeconfig PATH] | --in-cluster) [options]
       local-configmap-operator crd [--no-cel]     print the CRD (e.g. | kubectl apply -f -)

Reconciles LocalConfigMap resources (localconfigmaps.examples.blue.dev) in one
namespace, several, or all: each one owns a ConfigMap holding spec.config.data.

  --context NAME      kubeconfig context to use (never the current context implicitly)
  --kubeconfig PATH   kubeconfig file (default: kubectl's lookup)
  --in-cluster        use the pod's service account
  --namespace NS[,NS...]
                      namespaces to manage (default: the pod's namespace
                      in-cluster, else `default`)
  --all-namespaces    manage every namespace (needs a ClusterRole)
  --no-watch          list every --poll-ms instead of watching
  --poll-ms N         list period without watches, in milliseconds (default 500)
  --resync-ms N       full list while watching, the backstop for lost
                      events, in milliseconds (default 300000)
  --status-heartbeat-ms N
                      a periodic check that finds nothing new writes no
                      status unless lastReconcileTime is this old, in
                      milliseconds (default 600000; 0: write every check)
  --timer-slack-ms N  periodic checks and retries due within one N ms step of
                      the clock run together (default 200; 0: each on time)
  --workers N         concurrent reconciles (default 16)
  --transport T       proxy (default): one long-lived `kubectl proxy` on a private
                      unix socket; kubectl: one kubectl process per request;
                      kube: kube-rs's client (kubeconfig or in-cluster, no kubectl)
  --metrics-bind ADDR serve /metrics, /healthz and /readyz on ADDR (e.g. 127.0.0.1:8080)
  --log-format FMT    text (default) or json; RUST_LOG filters (default: info for the operator)
  --hide-callback-errors
                      log failed callbacks without their error text
  --no-events         write no Kubernetes Events
  --skip-preflight    start without checking discovery and RBAC first
  --leader-elect      run as one of several replicas: only the holder of a
                      coordination.k8s.io Lease reconciles
  --shards N          run as one of several replicas that share the work,
                      split into N shards (every replica the same N; the
                      library's default is 32); excludes --leader-elect
  --lease-name NAME   the Lease (default local-configmap-operator); with
                      --shards the prefix of NAME-member-K and NAME-shard-I
  --lease-namespace NS
                      the Lease's namespace (default: the first --namespace,
                      else the default namespace above)
  --leader-identity ID
                      holder identity (default: host name + random suffix)
  --lease-duration-ms N, --renew-deadline-ms N, --retry-period-ms N
                      lease timing (defaults 15000, 10000, and 2000 for
                      --leader-elect, 2500 for --shards)
  --audit-file PATH   append a line when each converge and delete starts and
                      ends (replica, identity hash, event); replicas may
                      share the file
  --callback-delay-ms N
                      converge waits N ms before its work (tests: makes
                      overlapping runs visible; default 0)
  -h, --help          show this help
  crd --no-cel        the CRD without CEL rules, for Kubernetes before 1.25

Stops gracefully on SIGTERM or SIGINT: running reconciles finish first.";

/// Concurrent reconciles unless `--workers` says otherwise. Above the
/// library's default of 2: this package's callbacks are a few API requests
/// each, so passes mostly wait on the network, and 16 of them at once keep
/// a burst of new resources (or due checks) moving without queueing.
pub const DEFAULT_WORKERS: usize = 16;

/// The Lease's default name.
pub const DEFAULT_LEASE_NAME: &str = "local-configmap-operator";

/// Parsed flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    /// `--context`.
    pub context: Option<String>,
    /// `--kubeconfig`.
    pub kubeconfig: Option<PathBuf>,
    /// `--in-cluster`.
    pub in_cluster: bool,
    /// Hidden `--service-account-dir` (tests): where `token` and `ca.crt` are.
    pub service_account_dir: Option<PathBuf>,
    /// Hidden `--service-host` (tests): overrides `KUBERNETES_SERVICE_HOST`.
    pub service_host: Option<String>,
    /// Hidden `--service-port` (tests): overrides `KUBERNETES_SERVICE_PORT`.
    pub service_port: Option<String>,
    /// `--namespace` (one or more, comma-separated).
    pub namespace: Option<Vec<String>>,
    /// `--all-namespaces`.
    pub all_namespaces: bool,
    /// `--no-watch`.
    pub no_watch: bool,
    /// `--poll-ms`.
    pub poll_ms: Option<u64>,
    /// `--resync-ms`.
    pub resync_ms: Option<u64>,
    /// `--status-heartbeat-ms`.
    pub status_heartbeat_ms: Option<u64>,
    /// `--timer-slack-ms`.
    pub timer_slack_ms: Option<u64>,
    /// `--workers`.
    pub workers: Option<usize>,
    /// `--metrics-bind`.
    pub metrics_bind: Option<std::net::SocketAddr>,
    /// `--log-format json`.
    pub json_logs: bool,
    /// `--hide-callback-errors`.
    pub hide_callback_errors: bool,
    /// `--no-events`.
    pub no_events: bool,
    /// `--skip-preflight`.
    pub skip_preflight: bool,
    /// Hidden `--api-group` (tests): registers the package under another group.
    pub api_group: Option<String>,
    /// Hidden `--api-version` (tests): registers the package under another version.
    pub api_version: Option<String>,
    /// `--leader-elect`.
    pub leader_elect: bool,
    /// `--lease-name`.
    pub lease_name: Option<String>,
    /// `--lease-namespace`.
    pub lease_namespace: Option<String>,
    /// `--leader-identity`.
    pub leader_identity: Option<String>,
    /// `--lease-duration-ms`.
    pub lease_duration_ms: Option<u64>,
    /// `--renew-deadline-ms`.
    pub renew_deadline_ms: Option<u64>,
    /// `--retry-period-ms`.
    pub retry_period_ms: Option<u64>,
    /// `--shards`.
    pub shards: Option<u32>,
    /// `--audit-file`.
    pub audit_file: Option<PathBuf>,
    /// `--callback-delay-ms`.
    pub callback_delay_ms: Option<u64>,
    /// `--transport` (default: the proxy).
    pub transport: Transport,
}

/// The transport flag's value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// One long-lived `kubectl proxy` (the default).
    #[default]
    Proxy,
    /// One kubectl process per request; lists instead of watching.
    Kubectl,
    /// kube-rs's client, configured from the kubeconfig context (or
    /// in-cluster) by kube-rs itself: no kubectl runs.
    Kube,
}

impl Transport {
    /// The flag's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Proxy => "proxy",
            Transport::Kubectl => "kubectl",
            Transport::Kube => "kube",
        }
    }
}

impl std::str::FromStr for Transport {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "proxy" => Ok(Transport::Proxy),
            "kubectl" => Ok(Transport::Kubectl),
            "kube" => Ok(Transport::Kube),
            _ => Err("--transport must be proxy, kubectl or kube".into()),
        }
    }
}

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Run the operator.
    Run(Box<Args>),
    /// Print [`USAGE`].
    Help,
    /// Print the CRD; `cel: false` for `--no-cel`.
    Crd {
        /// Include the CEL immutability rules.
        cel: bool,
    },
}

/// Parses the arguments after the program name. Accepts `--flag value` and
/// `--flag=value`. Errors name the flag, never echo a value.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut parsed = Args::default();
    let mut args = args.into_iter().peekable();
    if args.peek().is_some_and(|a| a == "crd") {
        return match args.nth(1).as_deref() {
            None => Ok(Command::Crd { cel: true }),
            Some("--no-cel") if args.next().is_none() => Ok(Command::Crd { cel: false }),
            Some(_) => Err("crd takes only --no-cel (see --help)".into()),
        };
    }
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg, None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .filter(|v| !v.is_empty())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--in-cluster" if inline.is_none() => parsed.in_cluster = true,
            "--context" => parsed.context = Some(value("--context")?),
            "--kubeconfig" => parsed.kubeconfig = Some(value("--kubeconfig")?.into()),
            "--service-account-dir" => {
                parsed.service_account_dir = Some(value("--service-account-dir")?.into())
            }
            "--service-host" => parsed.service_host = Some(value("--service-host")?),
            "--service-port" => parsed.service_port = Some(value("--service-port")?),
            "--namespace" | "-n" => parsed.namespace = Some(names(&value("--namespace")?)?),
            "--all-namespaces" | "-A" if inline.is_none() => parsed.all_namespaces = true,
            "--no-watch" if inline.is_none() => parsed.no_watch = true,
            "--poll-ms" => parsed.poll_ms = Some(number(&value("--poll-ms")?, "--poll-ms")?),
            "--resync-ms" => {
                parsed.resync_ms = Some(number(&value("--resync-ms")?, "--resync-ms")?)
            }
            "--status-heartbeat-ms" => {
                let flag = "--status-heartbeat-ms";
                parsed.status_heartbeat_ms = Some(number(&value(flag)?, flag)?)
            }
            "--timer-slack-ms" => {
                let flag = "--timer-slack-ms";
                parsed.timer_slack_ms = Some(number(&value(flag)?, flag)?)
            }
            "--workers" => parsed.workers = Some(number(&value("--workers")?, "--workers")?),
            "--transport" => parsed.transport = value("--transport")?.parse()?,
            "--metrics-bind" => {
                let text = value("--metrics-bind")?;
                let address = text.parse().map_err(|_| {
                    "--metrics-bind needs an address and port, e.g. 127.0.0.1:8080".to_string()
                })?;
                parsed.metrics_bind = Some(address);
            }
            "--log-format" => match value("--log-format")?.as_str() {
                "text" => parsed.json_logs = false,
                "json" => parsed.json_logs = true,
                _ => return Err("--log-format needs text or json".into()),
            },
            "--hide-callback-errors" if inline.is_none() => parsed.hide_callback_errors = true,
            "--no-events" if inline.is_none() => parsed.no_events = true,
            "--skip-preflight" if inline.is_none() => parsed.skip_preflight = true,
            "--api-group" => parsed.api_group = Some(value("--api-group")?),
            "--api-version" => parsed.api_version = Some(value("--api-version")?),
            "--leader-elect" if inline.is_none() => parsed.leader_elect = true,
            "--lease-name" => parsed.lease_name = Some(value("--lease-name")?),
            "--lease-namespace" => parsed.lease_namespace = Some(value("--lease-namespace")?),
            "--leader-identity" => parsed.leader_identity = Some(value("--leader-identity")?),
            "--lease-duration-ms" => {
                parsed.lease_duration_ms = Some(number(&value(&flag)?, &flag)?)
            }
            "--renew-deadline-ms" => {
                parsed.renew_deadline_ms = Some(number(&value(&flag)?, &flag)?)
            }
            "--retry-period-ms" => parsed.retry_period_ms = Some(number(&value(&flag)?, &flag)?),
            "--shards" => parsed.shards = Some(number(&value(&flag)?, &flag)?),
            "--audit-file" => parsed.audit_file = Some(value(&flag)?.into()),
            "--callback-delay-ms" => {
                parsed.callback_delay_ms = Some(number(&value(&flag)?, &flag)?)
            }
            other if other.starts_with('-') => {
                return Err(format!("unknown flag {other} (see --help)"))
            }
            _ => return Err("unexpected positional argument (see --help)".to_string()),
        }
    }
    match (&parsed.context, parsed.in_cluster) {
        (Some(_), true) => return Err("--context and --in-cluster exclude each other".into()),
        (None, false) => {
            return Err("one of --context NAME or --in-cluster is required; the current kubeconfig context is never used implicitly".into())
        }
        _ => {}
    }
    if parsed.all_namespaces && parsed.namespace.is_some() {
        return Err("--namespace and --all-namespaces exclude each other".into());
    }
    if parsed.in_cluster && parsed.kubeconfig.is_some() {
        return Err("--kubeconfig cannot be combined with --in-cluster".into());
    }
    let election_flags = parsed.lease_name.is_some()
        || parsed.lease_namespace.is_some()
        || parsed.leader_identity.is_some()
        || parsed.lease_duration_ms.is_some()
        || parsed.renew_deadline_ms.is_some()
        || parsed.retry_period_ms.is_some();
    if parsed.leader_elect && parsed.shards.is_some() {
        return Err("--shards and --leader-elect exclude each other: a sharded replica already leads its shards".into());
    }
    if election_flags && !parsed.leader_elect && parsed.shards.is_none() {
        return Err("lease flags need --leader-elect or --shards".into());
    }
    Ok(Command::Run(Box::new(parsed)))
}

fn number<T: std::str::FromStr>(text: &str, flag: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{flag} needs a positive integer"))
}

/// `a,b`: each name once, none empty (the controller checks the names
/// themselves are DNS labels).
fn names(text: &str) -> Result<Vec<String>, String> {
    let names: Vec<String> = text.split(',').map(str::to_string).collect();
    if names.iter().any(String::is_empty) {
        return Err("--namespace needs names separated by single commas".into());
    }
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    if unique.len() != names.len() {
        return Err("--namespace names a namespace twice".into());
    }
    Ok(names)
}

impl Args {
    /// The transport options these flags describe.
    pub fn kubectl_options(&self) -> KubectlConfig {
        let mut options = if self.in_cluster {
            KubectlConfig::in_cluster()
        } else {
            KubectlConfig::for_context(self.context.clone().unwrap_or_default())
        };
        options.kubeconfig = self.kubeconfig.clone();
        options.service_account_dir = self.service_account_dir.clone();
        options.service_host = self.service_host.clone();
        options.service_port = self.service_port.clone();
        if let Ok(kubectl) = std::env::var("KUBECTL") {
            if !kubectl.is_empty() {
                options.kubectl = kubectl.into();
            }
        }
        options
    }

    /// The resource type to manage: `LocalConfigMap`, unless the hidden
    /// test flags move it to another group or version.
    pub fn descriptor(&self) -> blue_kubernetes_client::ResourceDescriptor {
        let mut d = crate::package::descriptor();
        if let Some(group) = &self.api_group {
            d.group = group.clone();
        }
        if let Some(version) = &self.api_version {
            d.version = version.clone();
        }
        d
    }

    /// The leader-election settings these flags describe (`None` without
    /// `--leader-elect`); the Lease lives in `namespace` (see
    /// [`Args::home_namespace`]) unless `--lease-namespace` says otherwise.
    /// Validated by the controller.
    pub fn leader_election(&self, namespace: &str) -> Option<LeaderElectionConfig> {
        if !self.leader_elect {
            return None;
        }
        let (name, namespace) = self.lease_location(namespace);
        Some(self.lease_flags(LeaderElectionConfig::new(name, namespace)))
    }

    /// The sharding settings these flags describe (`None` without
    /// `--shards`): the library's defaults, the shard count, and the lease
    /// flags as for [`Args::leader_election`]. Validated by the controller.
    pub fn sharding(&self, namespace: &str) -> Option<ShardingConfig> {
        let shards = self.shards?;
        let (name, namespace) = self.lease_location(namespace);
        let sharding = ShardingConfig::new(name, namespace).with_shards(shards);
        let lease = self.lease_flags(sharding.lease.clone());
        Some(sharding.with_lease(lease))
    }

    /// The Lease name and namespace flags, or their defaults.
    fn lease_location(&self, namespace: &str) -> (String, String) {
        (
            self.lease_name
                .clone()
                .unwrap_or_else(|| DEFAULT_LEASE_NAME.to_string()),
            self.lease_namespace
                .clone()
                .unwrap_or_else(|| namespace.to_string()),
        )
    }

    /// `lease` with the identity and timing flags that were given.
    fn lease_flags(&self, mut lease: LeaderElectionConfig) -> LeaderElectionConfig {
        if let Some(identity) = &self.leader_identity {
            lease.identity = identity.clone();
        }
        if let Some(ms) = self.lease_duration_ms {
            lease.lease_duration_ms = ms;
        }
        if let Some(ms) = self.renew_deadline_ms {
            lease.renew_deadline_ms = ms;
        }
        if let Some(ms) = self.retry_period_ms {
            lease.retry_period_ms = ms;
        }
        lease
    }

    /// The namespaces to manage: every one with `--all-namespaces`, else
    /// `--namespace`, else [`Args::home_namespace`].
    pub fn namespaces(&self) -> Namespaces {
        match (&self.namespace, self.all_namespaces) {
            (_, true) => Namespaces::All,
            (Some(names), false) => Namespaces::Only(names.clone()),
            (None, false) => self.home_namespace().into(),
        }
    }

    /// The namespace of the operator's own objects (the Lease): the first
    /// `--namespace`, else (in-cluster) the pod's namespace from the
    /// service-account directory, else `default`.
    pub fn home_namespace(&self) -> String {
        if let Some(ns) = self.namespace.as_ref().and_then(|n| n.first()) {
            return ns.clone();
        }
        if self.in_cluster {
            let dir = self
                .service_account_dir
                .clone()
                .unwrap_or_else(|| blue_kubernetes_client::DEFAULT_SERVICE_ACCOUNT_DIR.into());
            if let Ok(ns) = std::fs::read_to_string(dir.join("namespace")) {
                if !ns.trim().is_empty() {
                    return ns.trim().to_string();
                }
            }
        }
        "default".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Args, String> {
        match parse(args.iter().map(|s| s.to_string()))? {
            Command::Run(a) => Ok(*a),
            other => Err(format!("{other:?}")),
        }
    }

    #[test]
    fn context_mode_with_both_flag_spellings() {
        let a = run(&[
            "--context",
            "kind-dev",
            "--kubeconfig=/k",
            "--poll-ms=200",
            "--workers",
            "3",
            "--metrics-bind",
            "127.0.0.1:9090",
            "--log-format=json",
            "--no-events",
        ])
        .unwrap();
        assert_eq!(a.metrics_bind, Some("127.0.0.1:9090".parse().unwrap()));
        assert!(a.json_logs && a.no_events && !a.hide_callback_errors);
        assert_eq!(a.context.as_deref(), Some("kind-dev"));
        assert_eq!(a.kubeconfig, Some(PathBuf::from("/k")));
        assert_eq!((a.poll_ms, a.workers), (Some(200), Some(3)));
        assert_eq!(a.transport, Transport::Proxy);
        assert_eq!(a.namespaces(), Namespaces::from("default"));
        assert_eq!((a.no_watch, a.resync_ms), (false, None));
        let o = a.kubectl_options();
        assert_eq!(o.context.as_deref(), Some("kind-dev"));
        assert!(!o.in_cluster);
    }

    #[test]
    fn in_cluster_mode_forwards_the_test_overrides_and_reads_the_namespace() {
        let dir = std::env::temp_dir().join(format!("lcm-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("namespace"), "team-a\n").unwrap();
        let a = run(&[
            "--in-cluster",
            "--service-account-dir",
            dir.to_str().unwrap(),
            "--service-host",
            "127.0.0.1",
            "--service-port=6443",
        ])
        .unwrap();
        assert_eq!(a.namespaces(), Namespaces::from("team-a"));
        assert_eq!(a.home_namespace(), "team-a");
        let o = a.kubectl_options();
        assert!(o.in_cluster);
        assert_eq!(o.service_host.as_deref(), Some("127.0.0.1"));
        assert_eq!(o.service_port.as_deref(), Some("6443"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn leader_election_flags_fill_the_settings_and_default_to_the_namespace() {
        let a = run(&["--context", "x", "-n", "team-a"]).unwrap();
        assert_eq!(a.leader_election("team-a"), None);
        let a = run(&[
            "--context",
            "x",
            "--leader-elect",
            "--leader-identity=pod-1",
            "--lease-duration-ms",
            "3000",
            "--renew-deadline-ms=2000",
            "--retry-period-ms=500",
        ])
        .unwrap();
        let e = a.leader_election("team-a").unwrap();
        assert_eq!(
            (e.lease_name.as_str(), e.lease_namespace.as_str()),
            (DEFAULT_LEASE_NAME, "team-a")
        );
        assert_eq!(e.identity, "pod-1");
        assert_eq!(
            (e.lease_duration_ms, e.renew_deadline_ms, e.retry_period_ms),
            (3000, 2000, 500)
        );
        let e = run(&[
            "--context",
            "x",
            "--leader-elect",
            "--lease-name",
            "l",
            "--lease-namespace",
            "ops",
        ])
        .unwrap()
        .leader_election("team-a")
        .unwrap();
        assert_eq!(
            (e.lease_name.as_str(), e.lease_namespace.as_str()),
            ("l", "ops")
        );
        assert_eq!(e.lease_duration_ms, 15_000);
        let err = run(&["--context", "x", "--lease-name", "l"]).unwrap_err();
        assert!(err.contains("--leader-elect"), "{err}");
    }

    #[test]
    fn shards_turn_sharding_on_with_the_library_defaults_and_the_lease_flags() {
        let a = run(&["--context", "x", "-n", "team-a"]).unwrap();
        assert_eq!(a.sharding("team-a"), None);
        let s = run(&["--context", "x", "--shards", "4"])
            .unwrap()
            .sharding("team-a")
            .unwrap();
        let defaults = ShardingConfig::new(DEFAULT_LEASE_NAME, "team-a");
        assert_eq!(s.shards, 4);
        assert_eq!(s.max_members, defaults.max_members);
        assert_eq!(
            (
                s.lease.lease_name.as_str(),
                s.lease.lease_namespace.as_str()
            ),
            (DEFAULT_LEASE_NAME, "team-a")
        );
        assert_eq!(
            (s.lease.lease_duration_ms, s.lease.retry_period_ms),
            (
                defaults.lease.lease_duration_ms,
                defaults.lease.retry_period_ms
            )
        );
        assert!(!s.lease.identity.is_empty());
        let a = run(&[
            "--context",
            "x",
            "--shards=3",
            "--lease-name",
            "l",
            "--lease-namespace=ops",
            "--leader-identity",
            "pod-2",
            "--lease-duration-ms=3000",
            "--renew-deadline-ms=2000",
            "--retry-period-ms=500",
        ])
        .unwrap();
        assert_eq!(a.leader_election("ops"), None);
        let s = a.sharding("team-a").unwrap();
        assert_eq!(s.shards, 3);
        assert_eq!(s.shard_lease_name(1), "l-shard-1");
        assert_eq!(
            (s.lease.lease_namespace.as_str(), s.lease.identity.as_str()),
            ("ops", "pod-2")
        );
        assert_eq!(
            (
                s.lease.lease_duration_ms,
                s.lease.renew_deadline_ms,
                s.lease.retry_period_ms
            ),
            (3000, 2000, 500)
        );
    }

    #[test]
    fn shards_and_leader_election_together_are_refused_naming_both() {
        let err = run(&["--context", "x", "--leader-elect", "--shards", "3"]).unwrap_err();
        assert!(
            err.contains("--shards") && err.contains("--leader-elect"),
            "{err}"
        );
        let err = run(&["--context", "x", "--shards", "many"]).unwrap_err();
        assert!(err.contains("--shards needs a positive integer"), "{err}");
        let err = run(&["--context", "x", "--leader-identity", "p"]).unwrap_err();
        assert!(err.contains("--leader-elect or --shards"), "{err}");
    }

    #[test]
    fn audit_file_and_callback_delay_are_off_unless_given() {
        let a = run(&["--context", "x"]).unwrap();
        assert_eq!((a.audit_file, a.callback_delay_ms), (None, None));
        let a = run(&[
            "--context",
            "x",
            "--audit-file=/tmp/audit",
            "--callback-delay-ms",
            "250",
        ])
        .unwrap();
        assert_eq!(a.audit_file, Some(PathBuf::from("/tmp/audit")));
        assert_eq!(a.callback_delay_ms, Some(250));
        let err = run(&["--context", "x", "--callback-delay-ms=-1"]).unwrap_err();
        assert!(err.contains("--callback-delay-ms"), "{err}");
        let err = run(&["--context", "x", "--audit-file"]).unwrap_err();
        assert!(err.contains("--audit-file needs a value"), "{err}");
    }

    #[test]
    fn namespace_lists_all_namespaces_and_watch_flags() {
        let a = run(&["--context", "x", "--namespace", "a,b"]).unwrap();
        assert_eq!(a.namespaces(), Namespaces::from(["a", "b"]));
        assert_eq!(a.home_namespace(), "a");
        let a = run(&["--context", "x", "-n", "c"]).unwrap();
        assert_eq!(a.namespaces(), Namespaces::from("c"));
        let a = run(&["--context", "x", "--all-namespaces"]).unwrap();
        assert_eq!(a.namespaces(), Namespaces::All);
        assert_eq!(a.home_namespace(), "default");
        let a = run(&[
            "--context",
            "x",
            "--no-watch",
            "--resync-ms=60000",
            "--poll-ms",
            "3600000",
        ])
        .unwrap();
        assert!(a.no_watch);
        assert_eq!((a.resync_ms, a.poll_ms), (Some(60_000), Some(3_600_000)));
        assert_eq!(a.status_heartbeat_ms, None);
        let a = run(&["--context", "x", "--status-heartbeat-ms", "0"]).unwrap();
        assert_eq!(a.status_heartbeat_ms, Some(0));
        assert_eq!(a.timer_slack_ms, None);
        let a = run(&["--context", "x", "--timer-slack-ms", "0"]).unwrap();
        assert_eq!(a.timer_slack_ms, Some(0));
    }

    #[test]
    fn namespace_list_mistakes_are_refused() {
        for (args, needle) in [
            (
                &["--context", "x", "--namespace", "a", "--all-namespaces"][..],
                "exclude each other",
            ),
            (
                &["--context", "x", "-A", "--namespace=a"][..],
                "exclude each other",
            ),
            (
                &["--context", "x", "--namespace", "a,,b"][..],
                "single commas",
            ),
            (
                &["--context", "x", "--namespace", "a,"][..],
                "single commas",
            ),
            (&["--context", "x", "--namespace", "a,b,a"][..], "twice"),
            (&["--context", "x", "--namespace"][..], "needs a value"),
            (&["--context", "x", "--no-watch=yes"][..], "unknown flag"),
            (
                &["--context", "x", "--all-namespaces=1"][..],
                "unknown flag",
            ),
            (
                &["--context", "x", "--resync-ms", "-5"][..],
                "positive integer",
            ),
        ] {
            let err = run(args).unwrap_err();
            assert!(err.contains(needle), "{args:?}: {err}");
        }
    }

    #[test]
    fn mistakes_are_refused_without_echoing_values() {
        for (args, needle) in [
            (&[][..], "required"),
            (&["--in-cluster", "--context", "x"][..], "exclude"),
            (&["--in-cluster", "--kubeconfig", "/k"][..], "cannot"),
            (&["--context"][..], "needs a value"),
            (
                &["--context", "x", "--poll-ms", "fast"][..],
                "positive integer",
            ),
            (&["--context", "x", "--bogus"][..], "unknown flag"),
            (
                &["--context", "x", "--transport", "secret-http"][..],
                "proxy, kubectl or kube",
            ),
            (
                &["--context", "x", "--metrics-bind", "secret"][..],
                "address",
            ),
            (
                &["--context", "x", "--log-format", "secret"][..],
                "text or json",
            ),
            (&["--context", "x", "secret-positional"][..], "positional"),
        ] {
            let err = run(args).unwrap_err();
            assert!(err.contains(needle), "{args:?}: {err}");
            assert!(!err.contains("secret"), "{err}");
        }
        assert_eq!(parse(["--help".to_string()]), Ok(Command::Help));
        let per_call = run(&["--context", "x", "--transport=kubectl"]).unwrap();
        assert_eq!(per_call.transport, Transport::Kubectl);
        let kube = run(&["--context", "x", "--transport", "kube"]).unwrap();
        assert_eq!(kube.transport, Transport::Kube);
    }

    #[test]
    fn crd_subcommand_takes_only_the_cel_switch() {
        let parse_all = |args: &[&str]| parse(args.iter().map(|s| s.to_string()));
        assert_eq!(parse_all(&["crd"]), Ok(Command::Crd { cel: true }));
        assert_eq!(
            parse_all(&["crd", "--no-cel"]),
            Ok(Command::Crd { cel: false })
        );
        assert!(parse_all(&["crd", "--context", "x"]).is_err());
        assert!(parse_all(&["crd", "--no-cel", "x"]).is_err());
    }
}
