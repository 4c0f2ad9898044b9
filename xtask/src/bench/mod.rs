//! `cargo xtask bench`: what the controller costs and how it scales. The
//! parts (`--only`) and what each measures: `USAGE` and `BENCHMARKS.md`.
//!
//! Measurements need optimised code, while `cargo xtask` runs a debug build,
//! so a debug `bench` re-runs itself as `cargo run --release`.

mod api_server;
mod apimetrics;
mod block;
mod changes;
mod contender;
mod harness;
mod live;
mod machine;
pub mod measure;
mod operators;
mod operators_report;
mod peer;
mod references;
mod report;
mod scale_out;
mod steady;
mod steady_report;
mod webhook;
mod webhook_report;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use machine::Machine;
use measure::{core_pct, CpuSnapshot};
use report::Report;

pub const USAGE: &str = "  bench [--quick] [--only operators,scale-out,references]
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
                        creates timed per round)";

/// Set in the re-run release process, so it never re-runs itself again.
const RELEASE_GUARD: &str = "BLUE_BENCH_RELEASE";

/// The idle window before the reactions block, as the issue measured it.
const BLOCK_IDLE_SECS: u64 = 60;

/// The parts `--only` names; a full run measures them all.
const PARTS: [&str; 4] = ["operators", "scale-out", "references", "webhook"];

#[derive(Debug, Default)]
struct Args {
    quick: bool,
    parts: Vec<&'static str>,
    out: Option<PathBuf>,
    peer: Option<PathBuf>,
    /// `--peer` without a binary.
    build_peer: bool,
    /// `operators`: population sizes for latency, idle cost and the steady
    /// state (default 10, 1,000 and 10,000).
    sizes: Option<Vec<usize>>,
    /// `operators`: who is measured, in order.
    contenders: Option<Vec<String>>,
    /// `operators`: reactions and idle cost only (no new resources,
    /// deletions, steady state or restart).
    reactions_only: bool,
    /// `operators`: only the stages on populations of at least this many.
    from: usize,
    /// `operators`: runs of the reactions at each size (default 3, quick 1).
    runs: Option<usize>,
    /// `operators`: workers of our operators (default: the example's).
    workers: usize,
    /// `operators`: the reactions block after this long idle, instead of
    /// the usual reactions (`--block [IDLE_SECS]`, 60 s without a value).
    block: Option<u64>,
    /// `operators`: our operators' `--log-level`, their logs kept.
    operator_log: Option<String>,
}

impl Args {
    fn parse(args: &[String]) -> Result<Self> {
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

    fn full(&self) -> bool {
        !self.quick
            && !self.reactions_only
            && self.block.is_none()
            && self.from == 0
            && self.parts.len() == PARTS.len()
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

pub fn main(args: &[String]) -> Result<()> {
    let parsed = Args::parse(args)?;
    if cfg!(debug_assertions) && std::env::var_os(RELEASE_GUARD).is_none() {
        return rerun_release(args);
    }
    run(&parsed)
}

/// Builds and runs the release binary with the same arguments.
fn rerun_release(args: &[String]) -> Result<()> {
    eprintln!("[bench] measuring needs a release build: cargo run --release -p xtask -- bench ...");
    // Without `cargo run`'s own variables, as the operator's build runs:
    // else the two builds alternate them and each rebuilds what a build
    // script watching one of them feeds (ring, rustls, kube's client).
    let status = crate::support::cargo::command()
        .current_dir(workspace_root())
        .args(["run", "--release", "--quiet", "-p", "xtask", "--", "bench"])
        .args(args)
        .env(RELEASE_GUARD, "1")
        .status()
        .context("running cargo")?;
    if !status.success() {
        // The release process has printed its own error.
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}

fn run(args: &Args) -> Result<()> {
    let started = Instant::now();
    let machine = Machine::gather();
    let mut report = Report::default();
    eprintln!(
        "[bench] {} build, {} cores, load {}{}",
        if cfg!(debug_assertions) {
            "DEBUG"
        } else {
            "release"
        },
        machine.cores,
        machine.load_start,
        if args.quick { ", quick mode" } else { "" }
    );
    let cpu0 = CpuSnapshot::take();
    let t = Instant::now();
    let mut live = live::Live::start()?;
    eprintln!(
        "[bench] control plane ready at {} in {:.1}s",
        live.server.cp.server(),
        t.elapsed().as_secs_f64()
    );
    let result = (|| {
        let wants = |part| args.parts.contains(&part);
        if wants("operators") {
            let built = match args.build_peer {
                true => Some(peer::build(&workspace_root())?),
                false => None,
            };
            let options = operators::Options {
                quick: args.quick,
                sizes: args.sizes.clone(),
                reactions_only: args.reactions_only,
                runs: args.runs,
                from: args.from,
                block: args.block.map(std::time::Duration::from_secs),
                contenders: args.contenders.clone(),
                peer: args.peer.as_deref().or(built.as_deref()),
                workers: args.workers,
                log_level: args.operator_log.clone(),
            };
            timed("operators", || {
                operators::run(&mut live, &options, &mut report)
            })?;
        }
        type Part = fn(&live::Live, &Machine) -> Result<report::Block>;
        let own_blocks: [(&str, Part); 3] = [
            ("scale-out", scale_out::run),
            ("references", references::run),
            ("webhook", webhook::run),
        ];
        for (part, run) in own_blocks.into_iter().filter(|(p, _)| wants(p)) {
            let block = timed(part, || run(&live, &machine))?;
            println!("{}", block.body);
            write_blocks(&workspace_root().join("BENCHMARKS.md"), &[block])?;
        }
        Ok::<_, anyhow::Error>(())
    })();
    let live::Live { rt, server, .. } = live;
    drop(rt);
    server.cp.stop()?;
    result?;
    report.sections.sort_by_key(|s| s.order);
    let total = started.elapsed().as_secs_f64();
    let whole = cpu0.since();

    let text = report::terminal(&report);
    println!("{text}");
    let other = format!(
        "{} of a core on average over the whole run",
        core_pct(whole.other, whole.wall)
    );
    let mut blocks = vec![machine.block(&command(args), total, other)];
    blocks.extend(report::blocks(&report));
    let out = args.out.clone().unwrap_or_else(|| {
        if args.full() {
            workspace_root().join("BENCHMARKS.md")
        } else {
            workspace_root().join("target/bench/BENCHMARKS.partial.md")
        }
    });
    write_blocks(&out, &blocks)?;
    eprintln!("[bench] wrote {} ({:.0}s in all)", out.display(), total);
    Ok(())
}

/// `quick_value` in a `--quick` run, else `full_value`.
pub fn pick<T>(quick: bool, quick_value: T, full_value: T) -> T {
    if quick {
        quick_value
    } else {
        full_value
    }
}

/// Runs `f` and logs how long `what` took.
pub fn timed<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let started = Instant::now();
    let result = f();
    let took = started.elapsed().as_secs_f64();
    eprintln!("[bench] {what} done in {took:.1}s");
    result
}

/// Replaces (or appends) `blocks` in the Markdown file `out`, keeping
/// everything written by hand around them.
fn write_blocks(out: &Path, blocks: &[report::Block]) -> Result<()> {
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let doc = std::fs::read_to_string(out).unwrap_or_default();
    std::fs::write(out, report::with_blocks(&doc, blocks))
        .with_context(|| format!("writing {}", out.display()))
}

/// The command line that reproduces this run.
fn command(args: &Args) -> String {
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
