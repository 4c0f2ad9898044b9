//! Command-line flags of the `local-configmap-operator` binary.

use blue_kubernetes_client::{KubectlOptions, TransportKind};
use std::path::PathBuf;

/// Usage text (the test-only flags are deliberately not listed).
pub const USAGE: &str = "\
usage: local-configmap-operator (--context NAME [--kubeconfig PATH] | --in-cluster) [options]

Reconciles LocalConfigMap resources (localconfigmaps.examples.blue.dev) in one
namespace: each one owns a ConfigMap holding spec.config.data.

  --context NAME      kubeconfig context to use (never the current context implicitly)
  --kubeconfig PATH   kubeconfig file (default: kubectl's lookup)
  --in-cluster        use the pod's service account
  --namespace NS      namespace to watch (default: the pod's namespace in-cluster, else `default`)
  --poll-ms N         poll period in milliseconds (default 500)
  --workers N         concurrent reconciles (default 2)
  --transport T       proxy (default): one long-lived `kubectl proxy` on a private
                      unix socket; kubectl: one kubectl process per request
  -h, --help          show this help

Stops gracefully on SIGTERM or SIGINT: running reconciles finish first.";

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
    /// `--namespace`.
    pub namespace: Option<String>,
    /// `--poll-ms`.
    pub poll_ms: Option<u64>,
    /// `--workers`.
    pub workers: Option<usize>,
    /// `--transport` (default: the proxy).
    pub transport: Transport,
}

/// The transport flag's value; the proxy unless `--transport kubectl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transport(pub TransportKind);

impl Default for Transport {
    fn default() -> Self {
        Transport(TransportKind::Proxy)
    }
}

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Run the operator.
    Run(Args),
    /// Print [`USAGE`].
    Help,
}

/// Parses the arguments after the program name. Accepts `--flag value` and
/// `--flag=value`. Errors name the flag, never echo a value.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut parsed = Args::default();
    let mut args = args.into_iter();
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
            "--namespace" | "-n" => parsed.namespace = Some(value("--namespace")?),
            "--poll-ms" => parsed.poll_ms = Some(number(&value("--poll-ms")?, "--poll-ms")?),
            "--workers" => parsed.workers = Some(number(&value("--workers")?, "--workers")?),
            "--transport" => {
                parsed.transport = Transport(
                    value("--transport")?
                        .parse()
                        .map_err(|_| "--transport must be proxy or kubectl".to_string())?,
                )
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
    if parsed.in_cluster && parsed.kubeconfig.is_some() {
        return Err("--kubeconfig cannot be combined with --in-cluster".into());
    }
    Ok(Command::Run(parsed))
}

fn number<T: std::str::FromStr>(text: &str, flag: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{flag} needs a positive integer"))
}

impl Args {
    /// The transport options these flags describe.
    pub fn kubectl_options(&self) -> KubectlOptions {
        let mut options = if self.in_cluster {
            KubectlOptions::in_cluster()
        } else {
            KubectlOptions::for_context(self.context.clone().unwrap_or_default())
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

    /// The namespace to watch: `--namespace`, else (in-cluster) the pod's
    /// namespace from the service-account directory, else `default`.
    pub fn namespace(&self) -> String {
        if let Some(ns) = &self.namespace {
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
            Command::Run(a) => Ok(a),
            Command::Help => Err("help".into()),
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
        ])
        .unwrap();
        assert_eq!(a.context.as_deref(), Some("kind-dev"));
        assert_eq!(a.kubeconfig, Some(PathBuf::from("/k")));
        assert_eq!((a.poll_ms, a.workers), (Some(200), Some(3)));
        assert_eq!(a.transport.0, TransportKind::Proxy);
        assert_eq!(a.namespace(), "default");
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
        assert_eq!(a.namespace(), "team-a");
        let o = a.kubectl_options();
        assert!(o.in_cluster);
        assert_eq!(o.service_host.as_deref(), Some("127.0.0.1"));
        assert_eq!(o.service_port.as_deref(), Some("6443"));
        std::fs::remove_dir_all(dir).unwrap();
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
                "proxy or kubectl",
            ),
            (&["--context", "x", "secret-positional"][..], "positional"),
        ] {
            let err = run(args).unwrap_err();
            assert!(err.contains(needle), "{args:?}: {err}");
            assert!(!err.contains("secret"), "{err}");
        }
        assert_eq!(parse(["--help".to_string()]), Ok(Command::Help));
        let per_call = run(&["--context", "x", "--transport=kubectl"]).unwrap();
        assert_eq!(per_call.transport.0, TransportKind::Kubectl);
    }
}
