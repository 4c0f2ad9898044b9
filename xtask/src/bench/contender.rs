//! Who is measured: the example operator in one of its modes (watching,
//! polling, per-call kubectl, watching through kube-rs's client) or a peer
//! binary taking the same flags. Every
//! operator flag the bench passes is decided here, in one place.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use super::measure::{descendants, pid_status_kib, tree_cpu_seconds};
use crate::world::operator::Operator;

/// How the example operator learns about changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Proxy transport, list + watch (the default once the runtime watches).
    Watch,
    /// Proxy transport, a full list every poll period (`--no-watch` once
    /// the runtime watches; the default before).
    Poll,
    /// One kubectl process per request, polling.
    Kubectl,
    /// kube-rs's client (the peer's HTTP stack), list + watch.
    Kube,
}

impl Mode {
    pub const ALL: [Mode; 4] = [Mode::Watch, Mode::Poll, Mode::Kubectl, Mode::Kube];

    pub fn label(self) -> &'static str {
        match self {
            Mode::Watch => "watch",
            Mode::Poll => "poll",
            Mode::Kubectl => "kubectl",
            Mode::Kube => "kube",
        }
    }

    /// The operator's `--transport`.
    fn transport(self) -> &'static str {
        match self {
            Mode::Watch | Mode::Poll => "proxy",
            Mode::Kubectl => "kubectl",
            Mode::Kube => "kube",
        }
    }
}

/// Flags of the example operator that arrived after the bench, read from
/// its `--help` so the bench measures whatever the binary offers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OperatorFlags {
    /// `--no-watch`: the binary watches by default and can be told to poll.
    pub no_watch: bool,
    /// `--transport kube`: the binary can use kube-rs's client.
    pub kube: bool,
}

impl OperatorFlags {
    pub fn of(binary: &Path) -> Result<Self> {
        let out = Command::new(binary)
            .arg("--help")
            .output()
            .with_context(|| format!("running {} --help", binary.display()))?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(Self::from_usage(&text))
    }

    fn from_usage(usage: &str) -> Self {
        Self {
            no_watch: usage.contains("--no-watch"),
            kube: usage.contains(" kube: "),
        }
    }

    /// Whether the binary built from this tree can run in `mode`: its
    /// runtime watches by default (`Config::watch`), so polling through the
    /// proxy needs `--no-watch`; the per-call transport always polls; kube
    /// needs a binary built with it.
    pub fn supports(self, mode: Mode) -> bool {
        match mode {
            Mode::Poll => self.no_watch,
            Mode::Kube => self.kube,
            Mode::Watch | Mode::Kubectl => true,
        }
    }
}

/// The operator families: ours share a finalizer (and so populations), the
/// peer uses its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    Ours,
    Peer,
}

/// Who is measured.
#[derive(Clone, Debug)]
pub struct Contender {
    /// `watch`, `poll`, `kubectl`, `kube` or `peer`.
    pub label: &'static str,
    pub family: Family,
    pub binary: PathBuf,
    /// Flags beyond `--context --kubeconfig --namespace`.
    pub extra: Vec<String>,
}

impl Contender {
    pub fn ours(binary: &Path, mode: Mode, flags: OperatorFlags, workers: usize) -> Self {
        let workers = workers.to_string();
        let mut extra: Vec<String> = ["--workers", &workers, "--transport", mode.transport()]
            .map(String::from)
            .to_vec();
        if matches!(mode, Mode::Poll | Mode::Kubectl) && flags.no_watch {
            extra.push("--no-watch".into());
        }
        Self {
            label: mode.label(),
            family: Family::Ours,
            binary: binary.to_path_buf(),
            extra,
        }
    }

    pub fn peer(binary: &Path) -> Self {
        Self {
            label: "peer",
            family: Family::Peer,
            binary: binary.to_path_buf(),
            extra: Vec::new(),
        }
    }
}

/// The contenders named in `--contenders` (default: every mode of ours
/// the binary supports except per-call kubectl, and the peer when given).
/// `poll=BINARY` measures another build of the example operator (e.g. one
/// from before watches) as the polling contender.
pub fn select(
    names: Option<&[String]>,
    binary: &Path,
    flags: OperatorFlags,
    peer: Option<&Path>,
    workers: usize,
) -> Result<Vec<Contender>> {
    let default: Vec<String> = ["watch", "poll", "peer"].map(String::from).to_vec();
    let explicit = names.is_some();
    let mut out = Vec::new();
    for spec in names.unwrap_or(&default) {
        let (name, own_binary) = match spec.split_once('=') {
            Some((name, path)) => (name, Some(std::path::absolute(path)?)),
            None => (spec.as_str(), None),
        };
        if name == "peer" {
            match peer {
                Some(p) => out.push(Contender::peer(p)),
                None if explicit => bail!("--contenders peer needs --peer BINARY"),
                None => {}
            }
            continue;
        }
        let mode = Mode::ALL
            .into_iter()
            .find(|m| m.label() == name)
            .with_context(|| {
                format!("unknown contender {name:?} (watch, poll, kubectl, kube, peer)")
            })?;
        match own_binary {
            Some(other) => {
                let flags = OperatorFlags::of(&other)?;
                out.push(Contender::ours(&other, mode, flags, workers));
            }
            None if flags.supports(mode) => out.push(Contender::ours(binary, mode, flags, workers)),
            None if mode == Mode::Kube => {
                eprintln!("[bench] the example operator has no --transport kube: no kube contender")
            }
            None => eprintln!(
                "[bench] the example operator has no --no-watch: no {name} contender \
                 (give {name}=BINARY of a polling build)"
            ),
        }
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

    #[test]
    fn polling_flag_is_passed_only_to_a_binary_that_watches() {
        let old = OperatorFlags::from_usage("  --poll-ms N  poll period");
        let new = OperatorFlags::from_usage("  --no-watch  list every --poll-ms instead");
        assert!(old.supports(Mode::Watch) && !old.supports(Mode::Poll));
        assert!(new.supports(Mode::Poll) && new.supports(Mode::Kubectl));
        let bin = Path::new("op");
        assert!(!Contender::ours(bin, Mode::Poll, old, 2)
            .extra
            .contains(&"--no-watch".to_string()));
        assert!(Contender::ours(bin, Mode::Poll, new, 2)
            .extra
            .contains(&"--no-watch".to_string()));
        assert!(!Contender::ours(bin, Mode::Watch, new, 2)
            .extra
            .contains(&"--no-watch".to_string()));
        let kubectl = Contender::ours(bin, Mode::Kubectl, new, 2).extra;
        assert!(kubectl.windows(2).any(|w| w == ["--transport", "kubectl"]));
    }

    #[test]
    fn the_kube_contender_watches_through_kube_when_the_binary_has_it() {
        let usage = "  --no-watch  list instead\n                      kube: kube-rs's client";
        let flags = OperatorFlags::from_usage(usage);
        assert!(flags.supports(Mode::Kube));
        assert!(!OperatorFlags::from_usage("  --no-watch").supports(Mode::Kube));
        let kube = Contender::ours(Path::new("op"), Mode::Kube, flags, 2);
        assert_eq!(kube.label, "kube");
        assert!(kube.extra.windows(2).any(|w| w == ["--transport", "kube"]));
        assert!(
            !kube.extra.contains(&"--no-watch".to_string()),
            "it watches"
        );
        let names = ["watch".to_string(), "kube".to_string()];
        let picked = select(Some(&names), Path::new("op"), flags, None, 2).unwrap();
        assert_eq!(
            picked.iter().map(|c| c.label).collect::<Vec<_>>(),
            ["watch", "kube"]
        );
    }

    #[test]
    fn selection_skips_what_the_binary_cannot_do() {
        let bin = Path::new("op");
        let peer = Path::new("peer");
        let picked = select(None, bin, OperatorFlags::default(), Some(peer), 2).unwrap();
        let labels: Vec<_> = picked.iter().map(|c| c.label).collect();
        assert_eq!(labels, ["watch", "peer"]);
        let watching = OperatorFlags {
            no_watch: true,
            ..OperatorFlags::default()
        };
        let labels: Vec<_> = select(None, bin, watching, None, 2)
            .unwrap()
            .iter()
            .map(|c| c.label)
            .collect();
        assert_eq!(labels, ["watch", "poll"]);
        // Another build named for the polling contender is measured as is.
        let other = ["poll=/bin/echo".to_string()];
        let picked = select(Some(&other), bin, OperatorFlags::default(), None, 2).unwrap();
        assert_eq!(picked[0].label, "poll");
        assert_eq!(picked[0].binary, Path::new("/bin/echo"));
        assert!(!picked[0].extra.contains(&"--no-watch".to_string()));
        let only = ["peer".to_string()];
        assert!(select(Some(&only), bin, watching, None, 2).is_err());
        assert!(select(Some(&["nope".to_string()]), bin, watching, None, 2).is_err());
    }

    #[test]
    fn our_operators_get_the_workers_asked_for() {
        let bin = Path::new("/bin/true");
        let extra = Contender::ours(bin, Mode::Watch, OperatorFlags::default(), 8).extra;
        let at = extra.iter().position(|f| f == "--workers").unwrap();
        assert_eq!(extra[at + 1], "8");
    }
}
