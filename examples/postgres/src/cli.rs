//! Command-line flags of the `postgres-operator` binary (a trimmed copy
//! of the ConfigMap example's: no leader election, plus `--once`).

use blue_kubernetes::config::Namespaces;
use blue_kubernetes_client::{KubectlConfig, TransportKind};
use std::path::PathBuf;

/// Usage text.
pub const USAGE: &str = "\
usage: postgres-operator (--context NAME [--kubeconfig PATH] | --in-cluster) [options]
       postgres-operator crd [--no-cel]     print the CRD (e.g. | kubectl apply -f -)

Reconciles PostgresDatabase resources (postgresdatabases.postgres.blue.example):
each one owns a role and a database on a PostgreSQL server, and a connection
Secret with host, port, database, user and a generated password.

  --context NAME      kubeconfig context to use (never the current context implicitly)
  --kubeconfig PATH   kubeconfig file (default: kubectl's lookup)
  --in-cluster        use the pod's service account
  --namespace NS[,NS...]
                      namespaces to manage (default: the pod's namespace
                      in-cluster, else `default`)
  --all-namespaces    manage every namespace (needs a ClusterRole)
  --once NAME         reconcile the PostgresDatabase NAME in the (first) namespace once,
                      print the result and exit
  --no-watch          list every --poll-ms instead of watching
  --poll-ms N         list period without watches, in milliseconds (default 500)
  --workers N         concurrent reconciles (default 4)
  --transport T       proxy (default): one long-lived `kubectl proxy` on a private
                      unix socket; kubectl: one kubectl process per request
  --metrics-bind ADDR serve /metrics, /healthz and /readyz on ADDR (e.g. 127.0.0.1:8080)
  --log-format FMT    text (default) or json; RUST_LOG filters
  --hide-callback-errors
                      log failed callbacks without their error text
  --no-events         write no Kubernetes Events
  --skip-preflight    start without checking discovery and RBAC first
  --audit-steps       record every durable step attempt in the table
                      postgres_operator_audit of each server's postgres database
  -h, --help          show this help

Stops gracefully on SIGTERM or SIGINT: running reconciles finish first.";

/// Concurrent reconciles unless `--workers` says otherwise: each pass
/// waits on the database server, so a few at once keep a burst moving
/// without opening many admin connections.
pub const DEFAULT_WORKERS: usize = 4;

/// Parsed flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    /// `--context`.
    pub context: Option<String>,
    /// `--kubeconfig`.
    pub kubeconfig: Option<PathBuf>,
    /// `--in-cluster`.
    pub in_cluster: bool,
    /// `--namespace` (one or more, comma-separated).
    pub namespace: Option<Vec<String>>,
    /// `--all-namespaces`.
    pub all_namespaces: bool,
    /// `--once NAME`.
    pub once: Option<String>,
    /// `--no-watch`.
    pub no_watch: bool,
    /// `--poll-ms`.
    pub poll_ms: Option<u64>,
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
    /// `--transport kubectl` (default: the proxy).
    pub per_call_kubectl: bool,
    /// `--audit-steps`.
    pub audit_steps: bool,
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
        let switch = inline.is_none();
        match flag.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--in-cluster" if switch => parsed.in_cluster = true,
            "--context" => parsed.context = Some(value("--context")?),
            "--kubeconfig" => parsed.kubeconfig = Some(value("--kubeconfig")?.into()),
            "--namespace" | "-n" => parsed.namespace = Some(names(&value("--namespace")?)?),
            "--all-namespaces" | "-A" if switch => parsed.all_namespaces = true,
            "--once" => parsed.once = Some(value("--once")?),
            "--no-watch" if switch => parsed.no_watch = true,
            "--poll-ms" => parsed.poll_ms = Some(number(&value("--poll-ms")?, "--poll-ms")?),
            "--workers" => parsed.workers = Some(number(&value("--workers")?, "--workers")?),
            "--transport" => match value("--transport")?.as_str() {
                "proxy" => parsed.per_call_kubectl = false,
                "kubectl" => parsed.per_call_kubectl = true,
                _ => return Err("--transport must be proxy or kubectl".into()),
            },
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
            "--hide-callback-errors" if switch => parsed.hide_callback_errors = true,
            "--no-events" if switch => parsed.no_events = true,
            "--skip-preflight" if switch => parsed.skip_preflight = true,
            "--audit-steps" if switch => parsed.audit_steps = true,
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
    if parsed.all_namespaces && (parsed.namespace.is_some() || parsed.once.is_some()) {
        return Err("--all-namespaces excludes --namespace and --once".into());
    }
    if parsed.in_cluster && parsed.kubeconfig.is_some() {
        return Err("--kubeconfig cannot be combined with --in-cluster".into());
    }
    Ok(Command::Run(Box::new(parsed)))
}

fn number<T: std::str::FromStr>(text: &str, flag: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{flag} needs a positive integer"))
}

/// `a,b`: each name once, none empty (the controller checks the names).
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
        if let Ok(kubectl) = std::env::var("KUBECTL") {
            if !kubectl.is_empty() {
                options.kubectl = kubectl.into();
            }
        }
        options
    }

    /// The transport: the proxy unless `--transport kubectl`.
    pub fn transport(&self) -> TransportKind {
        match self.per_call_kubectl {
            true => TransportKind::Kubectl,
            false => TransportKind::Proxy,
        }
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

    /// The first `--namespace`, else (in-cluster) the pod's namespace,
    /// else `default`.
    pub fn home_namespace(&self) -> String {
        if let Some(ns) = self.namespace.as_ref().and_then(|n| n.first()) {
            return ns.clone();
        }
        if self.in_cluster {
            let dir = PathBuf::from(blue_kubernetes_client::DEFAULT_SERVICE_ACCOUNT_DIR);
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
            "--workers",
            "3",
            "-n",
            "a,b",
            "--once=app",
            "--transport=kubectl",
            "--log-format",
            "json",
            "--audit-steps",
        ])
        .unwrap();
        assert_eq!(a.context.as_deref(), Some("kind-dev"));
        assert_eq!(a.kubeconfig, Some(PathBuf::from("/k")));
        assert_eq!((a.workers, a.once.as_deref()), (Some(3), Some("app")));
        assert_eq!(a.namespaces(), Namespaces::from(["a", "b"]));
        assert_eq!(a.home_namespace(), "a");
        assert_eq!(a.transport(), TransportKind::Kubectl);
        assert!(a.json_logs && a.audit_steps);
        let o = a.kubectl_options();
        assert_eq!(o.context.as_deref(), Some("kind-dev"));
    }

    #[test]
    fn defaults_are_the_proxy_and_the_default_namespace() {
        let a = run(&["--context", "x"]).unwrap();
        assert_eq!(a.transport(), TransportKind::Proxy);
        assert_eq!(a.namespaces(), Namespaces::from("default"));
        assert!(!a.audit_steps);
        assert!(run(&["--in-cluster"]).unwrap().kubectl_options().in_cluster);
    }

    #[test]
    fn mistakes_are_refused_without_echoing_values() {
        for (args, needle) in [
            (&[][..], "required"),
            (&["--in-cluster", "--context", "x"][..], "exclude"),
            (&["--in-cluster", "--kubeconfig", "/k"][..], "cannot"),
            (
                &["--context", "x", "-A", "--once", "secret"][..],
                "excludes",
            ),
            (&["--context"][..], "needs a value"),
            (
                &["--context", "x", "--workers", "secret"][..],
                "positive integer",
            ),
            (
                &["--context", "x", "--transport", "secret"][..],
                "proxy or kubectl",
            ),
            (
                &["--context", "x", "--namespace", "a,,secret"][..],
                "single commas",
            ),
            (&["--context", "x", "--bogus"][..], "unknown flag"),
            (&["--context", "x", "secret"][..], "positional"),
        ] {
            let err = run(args).unwrap_err();
            assert!(err.contains(needle), "{args:?}: {err}");
            assert!(!err.contains("secret"), "{err}");
        }
        assert_eq!(parse(["--help".to_string()]), Ok(Command::Help));
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
    }
}
