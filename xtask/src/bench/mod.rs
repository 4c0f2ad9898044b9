//! `cargo xtask bench`: what the controller costs and how it scales.
//!
//! Five parts, each selectable with `--only`:
//! - `overhead`: the controller alone (FakeCluster, no-op package, no I/O);
//! - `calls`: kubectl invocations per idle poll and per periodic check,
//!   counted through the runner against a real local API server;
//! - `api`: real API server throughput, reaction latency, idle cost, and the
//!   floor (one kubectl call, one direct HTTPS request);
//! - `transport`: the per-call and the proxy transport side by side, per
//!   request;
//! - `operators`: the example operator end to end, watching and polling
//!   (`--contenders`), at each of `--sizes`, and a peer operator with
//!   `--peer BINARY`.
//!
//! Measurements need optimised code, while `cargo xtask` runs a debug build,
//! so a debug `bench` re-runs itself as `cargo run --release`.

mod api;
mod apimetrics;
mod calls;
mod cluster;
mod contender;
mod failover;
mod harness;
mod live;
mod machine;
mod measure;
mod meter;
mod operators;
mod operators_report;
mod overhead;
mod package;
mod report;
mod transport;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use machine::Machine;
use measure::{core_pct, ms, thousands, CpuSnapshot};
use report::Report;

pub const USAGE: &str =
    "  bench [--quick] [--only overhead,calls,api,transport,operators] [--full-matrix]
        [--peer BINARY] [--sizes 10,1000,10000] [--contenders watch,poll,kubectl,peer] [--workers N]
        [--out FILE]
                        measure the controller; prints a table and writes
                        BENCHMARKS.md (full run) or target/bench/BENCHMARKS.partial.md
  bench --only failover leader failover and graceful handover (writes its BENCHMARKS.md section)";

/// Set in the re-run release process, so it never re-runs itself again.
const RELEASE_GUARD: &str = "BLUE_BENCH_RELEASE";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Overhead,
    Calls,
    Api,
    Transport,
    Operators,
}

const PARTS: [(&str, Part); 5] = [
    ("overhead", Part::Overhead),
    ("calls", Part::Calls),
    ("api", Part::Api),
    ("transport", Part::Transport),
    ("operators", Part::Operators),
];

#[derive(Debug)]
struct Args {
    quick: bool,
    full_matrix: bool,
    parts: Vec<Part>,
    out: Option<PathBuf>,
    mem_probe: Option<usize>,
    peer: Option<PathBuf>,
    /// `operators`: population sizes for latency and idle cost.
    sizes: Option<Vec<usize>>,
    /// `operators`: who is measured, in order.
    contenders: Option<Vec<String>>,
    /// `operators`: workers of our operators (default: the example's).
    workers: usize,
}

impl Args {
    fn parse(args: &[String]) -> Result<Self> {
        let mut parsed = Args {
            quick: false,
            full_matrix: false,
            parts: PARTS.iter().map(|(_, p)| *p).collect(),
            out: None,
            mem_probe: None,
            peer: None,
            sizes: None,
            contenders: None,
            workers: local_configmap_operator::cli::DEFAULT_WORKERS,
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .with_context(|| format!("{name} needs a value"))
            };
            match arg.as_str() {
                "--quick" => parsed.quick = true,
                "--full-matrix" => parsed.full_matrix = true,
                "--only" => {
                    parsed.parts = value("--only")?
                        .split(',')
                        .map(|p| {
                            PARTS
                                .iter()
                                .find(|(name, _)| *name == p.trim())
                                .map(|(_, part)| *part)
                                .with_context(|| format!("unknown part {p:?} (see --help)"))
                        })
                        .collect::<Result<_>>()?;
                }
                "--peer" => {
                    let peer = PathBuf::from(value("--peer")?);
                    // The release re-run changes nothing about the path, but
                    // a relative one must not depend on the directory.
                    parsed.peer = Some(std::path::absolute(&peer)?);
                }
                "--workers" => {
                    parsed.workers = value("--workers")?
                        .parse()
                        .ok()
                        .filter(|w| *w > 0)
                        .context("--workers needs a number above 0")?;
                }
                "--sizes" => {
                    parsed.sizes = Some(
                        value("--sizes")?
                            .split(',')
                            .map(|n| n.trim().replace('_', "").parse::<usize>())
                            .collect::<Result<_, _>>()
                            .context("--sizes needs numbers, e.g. 10,1000,10000")?,
                    );
                }
                "--contenders" => {
                    parsed.contenders = Some(
                        value("--contenders")?
                            .split(',')
                            .map(|c| c.trim().to_string())
                            .collect(),
                    );
                }
                "--out" => parsed.out = Some(PathBuf::from(value("--out")?)),
                // Internal: one memory measurement in a fresh process.
                "--mem-probe" => parsed.mem_probe = Some(value("--mem-probe")?.parse()?),
                other => bail!("unknown bench argument {other:?}\n{USAGE}"),
            }
        }
        Ok(parsed)
    }

    fn full(&self) -> bool {
        !self.quick && self.parts.len() == PARTS.len()
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

pub fn main(args: &[String]) -> Result<()> {
    if args.first().map(String::as_str) == Some("--child-rss") {
        return child_rss(&args[1..]);
    }
    if failover::requested(args) {
        return failover::main();
    }
    let parsed = Args::parse(args)?;
    if let Some(n) = parsed.mem_probe {
        return overhead::mem_probe(n);
    }
    if cfg!(debug_assertions) && std::env::var_os(RELEASE_GUARD).is_none() {
        return rerun_release(args);
    }
    run(&parsed)
}

/// Internal: runs `argv` as a child and prints its peak RSS in KiB. Run in
/// a fresh process, `RUSAGE_CHILDREN` then holds that one command alone.
fn child_rss(argv: &[String]) -> Result<()> {
    let (program, args) = argv.split_first().context("--child-rss needs a command")?;
    let status = Command::new(program)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .context("running the measured command")?;
    anyhow::ensure!(status.success(), "the measured command failed");
    println!("{}", measure::children_peak_rss_kib());
    Ok(())
}

/// Peak RSS (KiB) of `cmd`, measured in a helper process.
pub fn peak_rss_of(cmd: &Command) -> Result<u64> {
    let exe = std::env::current_exe().context("locating the bench binary")?;
    let out = Command::new(exe)
        .args(["bench", "--child-rss"])
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .output()
        .context("running the RSS helper")?;
    anyhow::ensure!(out.status.success(), "RSS helper failed");
    Ok(String::from_utf8_lossy(&out.stdout).trim().parse()?)
}

/// Builds and runs the release binary with the same arguments.
fn rerun_release(args: &[String]) -> Result<()> {
    eprintln!("[bench] measuring needs a release build: cargo run --release -p xtask -- bench ...");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
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
    let mut load_note = None;
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
    let cpu0 = CpuSnapshot::take(&[]);
    // The real-API-server parts run first, in a process that has not yet
    // grown with the overhead part's 10,000-resource fixtures, so the
    // controller RSS they report is meaningful.
    let wants_live = args.parts.iter().any(|p| *p != Part::Overhead);
    if wants_live {
        let t = Instant::now();
        let mut live = live::Live::start()?;
        let live_cpu0 = CpuSnapshot::take(&live.cluster.server_pids);
        eprintln!(
            "[bench] control plane ready at {} in {:.1}s",
            live.cluster.cp.server(),
            t.elapsed().as_secs_f64()
        );
        let result = (|| {
            // Throughput first: two of its runs build the populations the
            // calls part would otherwise build at a cost of minutes.
            if args.parts.contains(&Part::Api) {
                let t = Instant::now();
                api::run_throughput(&mut live, args.quick, args.full_matrix, &mut report)?;
                eprintln!(
                    "[bench] throughput done in {:.0}s",
                    t.elapsed().as_secs_f64()
                );
            }
            if args.parts.contains(&Part::Calls) {
                let t = Instant::now();
                calls::run(&mut live, args.quick, &mut report)?;
                eprintln!("[bench] calls done in {:.0}s", t.elapsed().as_secs_f64());
            }
            if args.parts.contains(&Part::Api) {
                let t = Instant::now();
                api::run(&mut live, args.quick, &mut report)?;
                eprintln!("[bench] api done in {:.0}s", t.elapsed().as_secs_f64());
            }
            if args.parts.contains(&Part::Transport) {
                let t = Instant::now();
                transport::run(&mut live, args.quick, &mut report)?;
                eprintln!(
                    "[bench] transport done in {:.0}s",
                    t.elapsed().as_secs_f64()
                );
            }
            if args.parts.contains(&Part::Operators) {
                let t = Instant::now();
                let options = operators::Options {
                    quick: args.quick,
                    sizes: args.sizes.clone(),
                    contenders: args.contenders.clone(),
                    peer: args.peer.as_deref(),
                    workers: args.workers,
                };
                operators::run(&mut live, &options, &mut report)?;
                eprintln!(
                    "[bench] operators done in {:.0}s",
                    t.elapsed().as_secs_f64()
                );
            }
            Ok::<_, anyhow::Error>(())
        })();
        let cpu = live_cpu0.since(&live.cluster.server_pids);
        load_note = Some(format!(
            "during the real-API-server parts ({:.0} s) other processes used {} of a core \
             on average",
            cpu.wall,
            core_pct(cpu.other, cpu.wall)
        ));
        let live::Live { rt, cluster, .. } = live;
        drop(rt);
        cluster.cp.stop()?;
        result?;
    }
    if args.parts.contains(&Part::Overhead) {
        let t = Instant::now();
        let (sections, verdicts) = (report.sections.len(), report.verdicts.len());
        overhead::run(args.quick, &mut report)?;
        // Its verdicts come first, as its sections do (by their order).
        let _ = sections;
        let added = report.verdicts.len() - verdicts;
        report.verdicts.rotate_right(added);
        eprintln!("[bench] overhead done in {:.0}s", t.elapsed().as_secs_f64());
    }
    report.sections.sort_by_key(|s| s.order);
    let total = started.elapsed().as_secs_f64();
    let whole = cpu0.since(&[]);

    let text = report::terminal(&report);
    println!("{text}");
    let markdown = render(&machine, args, &report, total, &whole, load_note.as_deref());
    let out = args.out.clone().unwrap_or_else(|| {
        if args.full() {
            workspace_root().join("BENCHMARKS.md")
        } else {
            workspace_root().join("target/bench/BENCHMARKS.partial.md")
        }
    });
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let kept = std::fs::read_to_string(&out).unwrap_or_default();
    let markdown = match failover::section_of(&kept) {
        Some(section) => failover::with_section(&markdown, section),
        None => markdown,
    };
    std::fs::write(&out, markdown).with_context(|| format!("writing {}", out.display()))?;
    eprintln!("[bench] wrote {} ({:.0}s in all)", out.display(), total);
    Ok(())
}

fn render(
    m: &Machine,
    args: &Args,
    report: &Report,
    total: f64,
    whole: &measure::CpuUse,
    load_note: Option<&str>,
) -> String {
    let mut out = String::new();
    let command = {
        let mut c = "cargo xtask bench".to_string();
        if args.quick {
            c.push_str(" --quick");
        }
        if args.full_matrix {
            c.push_str(" --full-matrix");
        }
        if args.peer.is_some() {
            c.push_str(" --peer PEER");
        }
        if let Some(sizes) = &args.sizes {
            let sizes: Vec<String> = sizes.iter().map(usize::to_string).collect();
            c.push_str(&format!(" --sizes {}", sizes.join(",")));
        }
        if let Some(who) = &args.contenders {
            c.push_str(&format!(" --contenders {}", who.join(",")));
        }
        if !args.full() && !args.quick {
            let parts: Vec<&str> = args
                .parts
                .iter()
                .filter_map(|p| PARTS.iter().find(|(_, q)| q == p).map(|(name, _)| *name))
                .collect();
            c.push_str(&format!(" --only {}", parts.join(",")));
        }
        c
    };
    let _ = writeln!(
        out,
        "# Benchmarks\n\n\
         What the controller costs and how it scales, measured by `{command}` \
         (source: `xtask/src/bench/`). Regenerate with the same command; a run takes \
         about {:.0} minutes here.\n",
        (total / 60.0).ceil()
    );
    let _ = writeln!(out, "## Machine and run\n");
    let rows = vec![
        vec!["date".into(), m.date.clone()],
        vec!["commit".into(), m.commit.clone()],
        vec!["CPU".into(), format!("{} x {}", m.cores, m.cpu_model)],
        vec!["memory".into(), m.memory.clone()],
        vec!["kernel".into(), m.kernel.clone()],
        vec![
            "build".into(),
            format!("release (`cargo run --release`), {}", m.rustc),
        ],
        vec!["kubectl".into(), m.kubectl.clone()],
        vec![
            "API server".into(),
            "kube-apiserver 1.20.2 + etcd 3.4 on loopback (`xtask` control plane)".into(),
        ],
        vec![
            "load average (1/5/15 min)".into(),
            format!("{} at start, {} at end", m.load_start, machine::loadavg()),
        ],
        vec![
            "other processes".into(),
            format!(
                "{} of a core on average over the whole run{}",
                core_pct(whole.other, whole.wall),
                load_note.map(|n| format!("; {n}")).unwrap_or_default()
            ),
        ],
        vec!["duration".into(), format!("{total:.0} s")],
    ];
    out.push_str(&report::markdown_table(&["".into(), "".into()], &rows));
    let _ = writeln!(
        out,
        "\nThe machine is shared (other engineers build and run tests on it), so \
         figures that depend on CPU time move with the load above; ratios within one \
         run are comparable.\n"
    );
    out.push_str(&report::markdown_body(report));
    out.push_str(&scaling_limits(m, report));
    out
}

/// The closing section: what the numbers mean for a deployment.
fn scaling_limits(m: &Machine, report: &Report) -> String {
    let f = &report.facts;
    let mut out = String::from(
        "## Scaling limits\n\nWhat the numbers above mean for running this controller; \
         every figure is from this run.\n\n",
    );
    let mut point = |s: String| {
        let _ = writeln!(out, "- {s}");
    };
    let cores = m.cores as f64;
    // CPU per kubectl call including the API server's share; None when the
    // floor or throughput part did not run.
    let per_call = f
        .kubectl_get_cpu
        .map(|cpu| cpu + f.server_cpu_per_call.unwrap_or(0.0));
    let cap = per_call.map(|c| cores / c);
    if let (Some(wall), Some(cpu), Some(cap)) = (f.kubectl_get_wall, f.kubectl_get_cpu, cap) {
        point(format!(
            "**Every kubectl call is a process.** One `kubectl get` of one object takes \
             {} wall and {} of CPU{}{}; the API server and etcd add about {} of CPU per \
             call. {} cores therefore cap a kubectl-based controller at roughly {:.0} \
             calls/s, and that is for everything on the machine.",
            ms(wall),
            ms(cpu),
            f.kubectl_peak_rss_kib
                .map(|k| format!(" and {} MiB of memory", k / 1024))
                .unwrap_or_default(),
            f.https_get_wall
                .map(|h| format!(
                    ", where a direct HTTPS request to the same server takes {}",
                    ms(h)
                ))
                .unwrap_or_default(),
            ms(f.server_cpu_per_call.unwrap_or(0.0)),
            m.cores,
            cap
        ));
    }
    if let (Some(i), Some(per_call)) = (f.idle, per_call) {
        let idle_cores = i.kubectl_cores + i.server_cores + i.own_cores;
        point(format!(
            "**Idle polling is not free at scale.** An idle cycle is one call, but with {} \
             resources that list takes {} wall and {} of kubectl CPU, so at poll_ms 500 \
             polling alone keeps {:.1} of the {} cores busy (kubectl {:.0}%, API server \
             and etcd {:.0}%, controller {:.0}% of a core) and polls back to back once \
             the list takes longer than poll_ms. The list grows linearly with N; raise \
             `poll_ms` for large fleets (reaction latency grows by about half the \
             increase).",
            thousands(i.n as f64),
            ms(i.list_wall),
            ms(i.list_cpu),
            idle_cores,
            m.cores,
            100.0 * i.kubectl_cores,
            100.0 * i.server_cores,
            100.0 * i.own_cores
        ));
        let per_check = f.check_calls.map_or(2.0, |(_, c)| c);
        let spare = (cores - idle_cores).max(0.0);
        let calls_per_s = spare / per_call;
        let sustainable = calls_per_s * 60.0 / per_check;
        let verdict = if (i.n as f64) > sustainable {
            format!(
                "the {} resources measured here would need an interval of about {:.0} min",
                thousands(i.n as f64),
                (i.n as f64 * per_check / calls_per_s.max(1e-9) / 60.0).ceil()
            )
        } else {
            format!("the {} measured here fit", thousands(i.n as f64))
        };
        point(format!(
            "**Periodic checks set the fleet size.** A check of matching infrastructure \
             costs {per_check:.2} calls{}; at the default 60 s `reconcileInterval`, N \
             resources need N x {per_check:.2} / 60 calls/s. With {} resources, idle \
             polling leaves about {spare:.1} cores, i.e. {calls_per_s:.1} calls/s: enough \
             for about {} checks a minute, so this machine keeps up with roughly that many \
             resources at a 60 s interval (with nothing else running); {verdict}. Past the \
             limit nothing breaks: checks just happen later than `nextReconcileTime` says.",
            f.check_calls
                .map(|(n, _)| format!(" (measured with {} resources)", thousands(n as f64)))
                .unwrap_or_default(),
            thousands(i.n as f64),
            thousands(sustainable),
        ));
    }
    if let (Some((rate, workers)), Some(calls)) = (f.best_throughput, f.calls_per_second) {
        point(format!(
            "**New resources** reach Ready at {rate:.1}/s at best ({workers} workers, \
             {calls:.0} kubectl calls/s); a new resource costs 3 calls. More workers than \
             cores add nothing: kubectl's CPU is the bottleneck, not waiting, and the \
             poller's lists compete with the workers for it."
        ));
    }
    if !f.latency.is_empty() {
        let parts: Vec<String> = f
            .latency
            .iter()
            .map(|(n, p50, p95)| {
                format!(
                    "{} p50 / {} p95 with {} idle",
                    ms(*p50),
                    ms(*p95),
                    thousands(*n as f64)
                )
            })
            .collect();
        point(format!(
            "**Reaction latency** is the wait for the next poll (up to poll_ms), the \
             list, then the re-read and the status write: {}. The list's duration is \
             what makes a large fleet slower to react.",
            parts.join(", ")
        ));
    }
    if let Some(rate) = f.idle_decisions_per_second {
        point(format!(
            "**The controller's own work is not the limit.** Without I/O it decides {} \
             idle resources/s and completes {} due reconcile passes/s, hundreds of times \
             what kubectl can carry.{}",
            thousands(rate),
            thousands(f.due_reconciles_per_second.unwrap_or(0.0)),
            f.bytes_per_idle_resource
                .map(|b| format!(
                    " Memory is O(N) per poll: about {} B per listed resource (a \
                     `serde_json::Value` tree), i.e. about {} MiB for 10,000 resources.",
                    thousands(b),
                    thousands(b * 10_000.0 / 1_048_576.0)
                ))
                .unwrap_or_default()
        ));
    }
    // A run without the kubectl-call parts (e.g. `--only operators`) has
    // nothing to say here: its own sections speak for themselves.
    let measured_kubectl = per_call.is_some()
        || f.check_calls.is_some()
        || f.calls_per_second.is_some()
        || f.idle_decisions_per_second.is_some()
        || !f.latency.is_empty();
    if !measured_kubectl {
        return String::new();
    }
    point(
        "The kubectl-call sections measure the per-call transport, which cannot watch \
         and so lists every poll period. The proxy transport (one long-lived `kubectl \
         proxy`) removes the per-call process and, by default, feeds the runtime from \
         watch streams with a full list every `resync_ms` as the backstop (see the \
         operators section for watching against polling). The controller's logic is \
         not the limit."
            .into(),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_parts_and_flags() {
        let a = Args::parse(&["--quick".into(), "--only".into(), "calls,api".into()]).unwrap();
        assert!(a.quick);
        assert_eq!(a.parts, vec![Part::Calls, Part::Api]);
        assert!(!a.full());
        assert!(Args::parse(&["--only".into(), "nope".into()]).is_err());
        let t = Args::parse(&["--only".into(), "transport,operators".into()]).unwrap();
        assert_eq!(t.parts, vec![Part::Transport, Part::Operators]);
        assert!(Args::parse(&[]).unwrap().full());
        let s = Args::parse(&["--sizes".into(), "10, 1_000,10000".into()]).unwrap();
        assert_eq!(s.sizes, Some(vec![10, 1_000, 10_000]));
        assert!(Args::parse(&["--sizes".into(), "10,many".into()]).is_err());
        let c = Args::parse(&["--contenders".into(), "poll,peer".into()]).unwrap();
        assert_eq!(
            c.contenders,
            Some(vec!["poll".to_string(), "peer".to_string()])
        );
    }
}
