//! Who is measured: the example operator in one of its modes (watching,
//! polling, per-call kubectl, watching through kube-rs's client) or a peer
//! binary taking the same flags. Every
//! operator flag the bench passes is decided here, in one place.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::measure::{descendants, pid_status_kib, tree_cpu_seconds};
use blue_testbed::world::operator::Operator;

/// The example operator's modes: label, `--transport`, and whether it
/// watches (the others poll, `--no-watch`). `kube` is kube-rs's client,
/// the peer's HTTP stack; `kubectl` one kubectl process per request.
const OURS: [(&str, &str, bool); 4] = [
    ("watch", "proxy", true),
    ("poll", "proxy", false),
    ("kubectl", "kubectl", false),
    ("kube", "kube", true),
];

/// The operator families: ours share a finalizer (and so populations), the
/// peer uses its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    Ours,
    Peer,
}

#[derive(Clone, Debug)]
pub struct Contender {
    /// `watch`, `poll`, `kubectl`, `kube` or `peer`.
    pub label: &'static str,
    pub family: Family,
    pub binary: PathBuf,
    /// Flags beyond `--context --kubeconfig --namespace`.
    pub extra: Vec<String>,
    /// Where ours serve `/metrics`: the checks they made are counted there
    /// (a check of ours reads nothing the API server could count).
    pub metrics: Option<String>,
}

impl Contender {
    /// Our mode `label` (see [`OURS`]), if there is one.
    pub fn ours(binary: &Path, label: &str, workers: usize) -> Option<Self> {
        let &(label, transport, watches) = OURS.iter().find(|m| m.0 == label)?;
        let workers = workers.to_string();
        let extra = ["--workers", &workers, "--transport", transport].map(String::from);
        let mut extra = extra.to_vec();
        if !watches {
            extra.push("--no-watch".into());
        }
        // A port free now; one operator runs at a time.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .ok()?
            .port();
        let metrics = format!("127.0.0.1:{port}");
        extra.extend(["--metrics-bind".into(), metrics.clone()]);
        Some(Self {
            label,
            family: Family::Ours,
            binary: binary.to_path_buf(),
            extra,
            metrics: Some(metrics),
        })
    }

    /// The periodic checks (passes that ended well) the running operator
    /// counted so far; `None` for the peer, whose checks are its ConfigMap
    /// reads at the API server.
    pub fn checks(&self) -> Option<f64> {
        let text = blue_e2e::scrape::http_get(self.metrics.as_deref()?, "/metrics").ok()?;
        let successes = text.lines().filter(|l| {
            l.starts_with("controller_runtime_reconcile_total{") && l.contains("result=\"success\"")
        });
        let values = successes.filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
        Some(values.sum())
    }

    pub fn peer(binary: &Path) -> Self {
        Self {
            label: "peer",
            family: Family::Peer,
            binary: binary.to_path_buf(),
            extra: Vec::new(),
            metrics: None,
        }
    }
}

/// The contenders named in `--contenders` (default: watch, poll and the
/// peer when given).
pub fn select(
    names: Option<&[String]>,
    binary: &Path,
    peer: Option<&Path>,
    workers: usize,
) -> Result<Vec<Contender>> {
    let default: Vec<String> = ["watch", "poll", "peer"].map(String::from).to_vec();
    let explicit = names.is_some();
    let mut out = Vec::new();
    for name in names.unwrap_or(&default) {
        if name == "peer" {
            match peer {
                Some(p) => out.push(Contender::peer(p)),
                None if explicit => bail!("--contenders peer needs --peer [BINARY]"),
                None => {}
            }
            continue;
        }
        let ours = Contender::ours(binary, name, workers);
        let unknown = || format!("unknown contender {name:?} (watch, poll, kubectl, kube, peer)");
        out.push(ours.with_context(unknown)?);
    }
    anyhow::ensure!(!out.is_empty(), "no contender to measure");
    Ok(out)
}

/// CPU seconds of a running operator and everything it runs.
pub fn operator_cpu(op: &Operator) -> f64 {
    op.pid().map_or(0.0, tree_cpu_seconds)
}

/// Resident memory, KiB: the operator process itself (its cache lives
/// there), its peak, and its children (our `kubectl proxy`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Rss {
    pub operator: u64,
    pub peak: u64,
    pub children: u64,
}

pub fn operator_rss(op: &Operator) -> Rss {
    let Some(pid) = op.pid() else {
        return Rss::default();
    };
    Rss {
        operator: pid_status_kib(pid, "VmRSS:"),
        peak: pid_status_kib(pid, "VmHWM:"),
        children: descendants(pid)
            .into_iter()
            .map(|c| pid_status_kib(c, "VmRSS:"))
            .sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(extra: &[String], flags: [&str; 2]) -> bool {
        extra.windows(2).any(|w| w == flags)
    }

    #[test]
    fn each_mode_gets_its_transport_and_only_polling_ones_no_watch() {
        let bin = Path::new("op");
        let ours = |label| Contender::ours(bin, label, 2).unwrap();
        let poll = ours("poll").extra;
        assert!(has(&poll, ["--transport", "proxy"]) && poll.contains(&"--no-watch".into()));
        let watch = ours("watch").extra;
        assert!(has(&watch, ["--transport", "proxy"]) && !watch.contains(&"--no-watch".into()));
        let kube = ours("kube");
        assert_eq!(kube.label, "kube");
        assert!(has(&kube.extra, ["--transport", "kube"]));
        assert!(!kube.extra.contains(&"--no-watch".into()), "it watches");
        let kubectl = ours("kubectl").extra;
        assert!(has(&kubectl, ["--transport", "kubectl"]));
        let eight = Contender::ours(bin, "watch", 8).unwrap().extra;
        assert!(has(&eight, ["--workers", "8"]));
    }

    #[test]
    fn selection_takes_the_named_order_and_the_peer_only_when_given() {
        let (bin, peer) = (Path::new("op"), Path::new("peer"));
        let labels = |c: Vec<Contender>| c.iter().map(|c| c.label).collect::<Vec<_>>();
        assert_eq!(
            labels(select(None, bin, Some(peer), 2).unwrap()),
            ["watch", "poll", "peer"]
        );
        assert_eq!(
            labels(select(None, bin, None, 2).unwrap()),
            ["watch", "poll"]
        );
        let names = ["kube".to_string(), "watch".to_string()];
        assert_eq!(
            labels(select(Some(&names), bin, None, 2).unwrap()),
            ["kube", "watch"]
        );
        assert!(select(Some(&["peer".to_string()]), bin, None, 2).is_err());
        assert!(select(Some(&["nope".to_string()]), bin, None, 2).is_err());
    }
}
