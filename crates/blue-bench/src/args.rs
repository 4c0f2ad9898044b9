//! The bench's command line: its flags, what they ask of a run, and the
//! command that reproduces a run (written into its machine block).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

pub const USAGE: &str = "  bench [--quick] [--only operators,scale-out,references,webhook,conversion]
        [--peer [BINARY]] [--sizes 10,1000,10000] [--contenders watch,poll,kubectl,kube,peer] [--workers N]
        [--reactions-only] [--runs N] [--from N] [--block [IDLE_SECS]]
        [--operator-log LEVEL] [--out FILE]
                        measure the controller; prints the tables and puts them into
                        BENCHMARKS.md (full run) or target/bench/BENCHMARKS.partial.md
  bench --only operators --block [IDLE_SECS]
                        each run at each size is the reactions block instead: in the
                        Ready population, idle IDLE_SECS (default 60), then 20 Destroy
                        resources created one by one, edited, deleted all at once
                        (the reactions alone, as --reactions-only);
                        --operator-log debug keeps our operators' logs (with each
                        watch event and request timed) in target/bench/logs
  bench --only scale-out sharded replicas: throughput with 1, 2, 3, kill, join, graceful
                        stop, idle Lease requests (its block of BENCHMARKS.md)
  bench --only references a referenced PostgresServer Ready to its database's converge
  bench --only webhook  three rounds: a create through the admission webhook against the
                        same create without it (alternated), the operator's CPU per
                        review, 100 invalid creates at once (BLUE_BENCH_WEBHOOK_CREATES:
                        creates timed per round)
  bench --only migration objects at an older stored version migrated at the default
                        rate beside the operator: duration, API requests a second,
                        edits during against quiet (BLUE_BENCH_MIGRATION_OBJECTS: 10,000)
  bench --only conversion a list of 1,000 at the old version v1alpha1 (through the next
                        release's conversion webhook) against the same list at the stored
                        v1beta1, and the webhook's CPU per object; three runs and their
                        median (its block of BENCHMARKS.md)";

/// The idle window before the reactions block, as the issue measured it.
const BLOCK_IDLE_SECS: u64 = 60;

/// The parts `--only` names; a full run measures them all.
const PARTS: [&str; 6] = [
    "operators",
    "scale-out",
    "references",
    "webhook",
    "migration",
    "conversion",
];

/// What the command line asks for.
#[derive(Debug, Default)]
pub struct Args {
    pub quick: bool,
    pub parts: Vec<&'static str>,
    pub out: Option<PathBuf>,
    pub peer: Option<PathBuf>,
    /// `--peer` without a binary.
    pub build_peer: bool,
    /// `operators`: population sizes for latency, idle cost and the steady
    /// state (default 10, 1,000 and 10,000).
    pub sizes: Option<Vec<usize>>,
    /// `operators`: who is measured, in order.
    pub contenders: Option<Vec<String>>,
    /// `operators`: reactions and idle cost only (no new resources,
    /// deletions, steady state or restart).
    pub reactions_only: bool,
    /// `operators`: only the stages on populations of at least this many.
    pub from: usize,
    /// `operators`: runs of the reactions at each size (default 3, quick 1).
    pub runs: Option<usize>,
    /// `operators`: workers of our operators (default: the example's).
    pub workers: usize,
    /// `operators`: the reactions block after this long idle, instead of
    /// the usual reactions (`--block [IDLE_SECS]`, 60 s without a value).
    pub block: Option<u64>,
    /// `operators`: our operators' `--log-level`, their logs kept.
    pub operator_log: Option<String>,
}

impl Args {
    /// The flags (`USAGE`); `--help` is the caller's.
    pub fn parse(args: &[String]) -> Result<Self> {
        let mut parsed = Args {
            parts: PARTS.to_vec(),
            workers: local_configmap_operator::cli::DEFAULT_WORKERS,
            ..Args::default()
        };
        let mut it = args.iter().peekable();
        while let Some(arg) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .with_context(|| format!("{name} needs a value"))
            };
            match arg.as_str() {
                "--quick" => parsed.quick = true,
                "--operator-log" => parsed.operator_log = Some(value("--operator-log")?),
                "--block" => {
                    let secs = it.next_if(|v| !v.starts_with("--")).map(|v| v.parse());
                    let secs = secs.transpose().context("--block takes idle seconds")?;
                    parsed.block = Some(secs.unwrap_or(BLOCK_IDLE_SECS));
                }
                "--reactions-only" => parsed.reactions_only = true,
                "--from" => {
                    parsed.from = (value("--from")?.replace('_', "").parse().ok())
                        .context("--from needs a number of resources")?;
                }
                "--only" => {
                    parsed.parts = value("--only")?
                        .split(',')
                        .map(|p| {
                            let known = PARTS.into_iter().find(|name| *name == p.trim());
                            known.with_context(|| format!("unknown part {p:?} (see --help)"))
                        })
                        .collect::<Result<_>>()?;
                }
                // The release re-run changes nothing about the path, but a
                // relative one must not depend on the directory.
                // Without a binary: built from `../shared/peer-kube-rs`.
                "--peer" => match it.next_if(|v| !v.starts_with("--")) {
                    Some(path) => parsed.peer = Some(std::path::absolute(path)?),
                    None => parsed.build_peer = true,
                },
                "--runs" => {
                    parsed.runs = (value("--runs")?.parse().ok())
                        .filter(|r| *r > 0)
                        .map(Some)
                        .context("--runs needs a number above 0")?;
                }
                "--workers" => {
                    parsed.workers = (value("--workers")?.parse().ok())
                        .filter(|w| *w > 0)
                        .context("--workers needs a number above 0")?;
                }
                "--sizes" => {
                    let sizes = value("--sizes")?;
                    let sizes = sizes.split(',').map(|n| n.trim().replace('_', "").parse());
                    let sizes = sizes.collect::<Result<_, _>>();
                    parsed.sizes =
                        Some(sizes.context("--sizes needs numbers, e.g. 10,1000,10000")?);
                }
                "--contenders" => {
                    let names = value("--contenders")?;
                    parsed.contenders = Some(names.split(',').map(|c| c.trim().into()).collect());
                }
                "--out" => parsed.out = Some(PathBuf::from(value("--out")?)),
                other => bail!("unknown bench argument {other:?}\n{USAGE}"),
            }
        }
        Ok(parsed)
    }

    /// Every part with every stage: the run that writes BENCHMARKS.md.
    pub fn full(&self) -> bool {
        !self.quick
            && !self.reactions_only
            && self.block.is_none()
            && self.from == 0
            && self.parts.len() == PARTS.len()
    }
}

/// `quick_value` in a `--quick` run, else `full_value`.
pub fn pick<T>(quick: bool, quick_value: T, full_value: T) -> T {
    if quick {
        quick_value
    } else {
        full_value
    }
}

/// The command line that reproduces this run.
pub fn command(args: &Args) -> String {
    let list = |l: &[String]| l.join(",");
    let sizes: Option<Vec<String>> =
        (args.sizes.as_ref()).map(|s| s.iter().map(usize::to_string).collect());
    let flags = [
        args.quick.then(|| "--quick".to_string()),
        (args.peer.is_some() || args.build_peer).then(|| "--peer".into()),
        sizes.map(|s| format!("--sizes {}", list(&s))),
        args.reactions_only.then(|| "--reactions-only".into()),
        (args.runs).map(|r| format!("--runs {r}")),
        (args.from > 0).then(|| format!("--from {}", args.from)),
        (args.block).map(|s| format!("--block {s}")),
        (args.operator_log.as_ref()).map(|l| format!("--operator-log {l}")),
        (args.contenders.as_ref()).map(|c| format!("--contenders {}", list(c))),
        (args.parts.len() != PARTS.len()).then(|| format!("--only {}", args.parts.join(","))),
    ];
    let flags = flags.into_iter().flatten();
    flags.fold("cargo xtask bench".into(), |c, f| format!("{c} {f}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_parts_and_flags() {
        let a = Args::parse(&["--quick".into(), "--only".into(), "operators".into()]).unwrap();
        assert!(a.quick);
        assert_eq!(a.parts, ["operators"]);
        assert!(!a.full());
        assert!(Args::parse(&["--only".into(), "nope".into()]).is_err());
        let t = Args::parse(&["--only".into(), "scale-out,operators".into()]).unwrap();
        assert_eq!(t.parts, ["scale-out", "operators"]);
        let v = Args::parse(&["--only".into(), "conversion".into()]).unwrap();
        assert_eq!(command(&v), "cargo xtask bench --only conversion");
        assert!(Args::parse(&[]).unwrap().full());
        let s = Args::parse(&["--sizes".into(), "10, 1_000,10000".into()]).unwrap();
        assert_eq!(s.sizes, Some(vec![10, 1_000, 10_000]));
        assert!(Args::parse(&["--sizes".into(), "10,many".into()]).is_err());
        let c = Args::parse(&["--contenders".into(), "poll,peer".into()]).unwrap();
        assert_eq!(command(&c), "cargo xtask bench --contenders poll,peer");
        let s = Args::parse(&["--sizes".into(), "10".into(), "--quick".into()]).unwrap();
        assert_eq!(command(&s), "cargo xtask bench --quick --sizes 10");
        let r = Args::parse(&["--runs".into(), "1".into()]).unwrap();
        assert_eq!(
            (r.runs, command(&r).as_str()),
            (Some(1), "cargo xtask bench --runs 1")
        );
        assert!(Args::parse(&["--runs".into(), "0".into()]).is_err());
        let b = Args::parse(&["--block".into(), "--sizes".into(), "10".into()]).unwrap();
        assert_eq!((b.block, b.full()), (Some(BLOCK_IDLE_SECS), false));
        let b = Args::parse(&["--block".into(), "5".into()]).unwrap();
        assert_eq!(command(&b), "cargo xtask bench --block 5");
        assert!(Args::parse(&["--block".into(), "soon".into()]).is_err());
        assert_eq!(
            c.contenders,
            Some(vec!["poll".to_string(), "peer".to_string()])
        );
    }

    #[test]
    fn peer_without_a_binary_is_built_and_with_one_is_taken() {
        let built = Args::parse(&["--peer".into(), "--quick".into()]).unwrap();
        assert!(built.build_peer && built.quick && built.peer.is_none());
        let last = Args::parse(&["--peer".into()]).unwrap();
        assert!(last.build_peer);
        let given = Args::parse(&["--peer".into(), "bin/peer".into()]).unwrap();
        assert!(!given.build_peer);
        assert!(given.peer.unwrap().ends_with("bin/peer"));
    }
}
