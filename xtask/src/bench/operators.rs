//! Part `operators`: the example operator end to end, as a separate
//! process, with the per-call and the proxy transport, and optionally a peer
//! operator taking the same flags (`--peer BINARY`): new resources to
//! Ready, reaction to an edit, and idle cost, all on the same API server.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::contender::{name, operator_cpu, Contender, Harness};
use super::live::Live;
use super::measure::{median, ms, percentile, pid_cpu_seconds, secs, thousands, XorShift};
use super::report::{Report, Section};
use crate::e2e::util::TempDir;

struct Sizes {
    new: Vec<usize>,
    latency: Vec<usize>,
    edits: usize,
    idle_window: Duration,
}

impl Sizes {
    fn new(quick: bool) -> Self {
        if quick {
            Self {
                new: vec![20],
                latency: vec![10, 60],
                edits: 5,
                idle_window: Duration::from_secs(5),
            }
        } else {
            Self {
                new: vec![100, 500],
                latency: vec![10, 1_000],
                edits: 10,
                idle_window: Duration::from_secs(20),
            }
        }
    }
}

/// Results of one contender.
#[derive(Default)]
struct Outcome {
    /// n -> (seconds to all Ready, operator CPU seconds).
    new: BTreeMap<usize, (f64, f64)>,
    /// n -> latency samples, seconds.
    latency: BTreeMap<usize, Vec<f64>>,
    /// (resources, operator CPU per second, API server CPU per second).
    idle: Option<(usize, f64, f64)>,
}

fn new_resources(h: &Harness, who: &Contender, n: usize) -> Result<(f64, f64)> {
    let ns = format!("{}-new-{n}", who.label);
    h.populate(&ns, n)?;
    let mut op = h.start(who, &ns)?;
    let cpu0 = operator_cpu(&op);
    let took = h.wait_ready(&ns, n, Duration::from_secs(120 + 2 * n as u64));
    let cpu = operator_cpu(&op) - cpu0;
    op.stop()?;
    Ok((took?.as_secs_f64(), cpu))
}

/// Edits at a random phase of the poll period, one at a time; then, at the
/// idle size, the cost of staying idle.
fn latency_and_idle(
    h: &Harness,
    who: &Contender,
    ns: &str,
    n: usize,
    sizes: &Sizes,
    idle: bool,
    out: &mut Outcome,
) -> Result<()> {
    let op = h.start(who, ns)?;
    let result = (|| {
        // Startup lists and (after a transport switch) re-reads settle first.
        h.wait_ready(ns, n, Duration::from_secs(600))?;
        std::thread::sleep(Duration::from_secs(3));
        if idle {
            let server = &h.cluster.server_pids;
            let server_cpu = || {
                server
                    .iter()
                    .filter_map(|p| pid_cpu_seconds(*p))
                    .sum::<f64>()
            };
            let (c0, s0, t0) = (operator_cpu(&op), server_cpu(), Instant::now());
            std::thread::sleep(sizes.idle_window);
            let wall = t0.elapsed().as_secs_f64();
            out.idle = Some((
                n,
                (operator_cpu(&op) - c0) / wall,
                (server_cpu() - s0) / wall,
            ));
        }
        let mut rng = XorShift::new(0xed17 ^ n as u64);
        let mut samples = Vec::new();
        for i in 0..sizes.edits {
            std::thread::sleep(Duration::from_millis(rng.below(500)));
            samples.push(h.edit_latency(ns, &name(i % n), &format!("{}-{i}", who.label))?);
        }
        out.latency.insert(n, samples);
        Ok(())
    })();
    let mut op = op;
    op.stop()?;
    result
}

fn measure(
    h: &Harness,
    who: &Contender,
    pops: &BTreeMap<usize, String>,
    sizes: &Sizes,
) -> Result<Outcome> {
    let mut out = Outcome::default();
    for &n in &sizes.new {
        let t = Instant::now();
        out.new.insert(n, new_resources(h, who, n)?);
        eprintln!(
            "[bench] operators: {} {n} new in {:.0}s",
            who.label,
            t.elapsed().as_secs_f64()
        );
    }
    let idle_n = *sizes.latency.last().unwrap_or(&0);
    for &n in &sizes.latency {
        let t = Instant::now();
        latency_and_idle(h, who, &pops[&n], n, sizes, n == idle_n, &mut out)?;
        eprintln!(
            "[bench] operators: {} latency at {n} in {:.0}s",
            who.label,
            t.elapsed().as_secs_f64()
        );
    }
    Ok(out)
}

/// Ready populations of each latency size: ours are built by the proxy
/// operator and reused by the per-call one (same finalizer and status);
/// the peer (own finalizer) builds its own.
fn populations(
    h: &Harness,
    builder: &Contender,
    prefix: &str,
    sizes: &Sizes,
) -> Result<BTreeMap<usize, String>> {
    let mut pops = BTreeMap::new();
    for &n in &sizes.latency {
        let ns = format!("{prefix}-pop-{n}");
        h.populate(&ns, n)?;
        let mut op = h.start(builder, &ns)?;
        let built = h.wait_ready(&ns, n, Duration::from_secs(120 + 2 * n as u64));
        op.stop()?;
        built?;
        pops.insert(n, ns);
    }
    Ok(pops)
}

pub fn run(live: &mut Live, quick: bool, peer: Option<&Path>, report: &mut Report) -> Result<()> {
    let sizes = Sizes::new(quick);
    let binary = crate::e2e::operator::build_profile(true)?;
    let work = TempDir::new("blue-bench-ops")?;
    let h = Harness::new(&live.rt, &live.cluster, work.path())?;
    let proxy = Contender::ours(&binary, "proxy");
    let kubectl = Contender::ours(&binary, "kubectl");
    let ours = populations(&h, &proxy, "ours", &sizes)?;
    let mut results: Vec<(Contender, Outcome)> = Vec::new();
    for who in [proxy, kubectl] {
        let outcome = measure(&h, &who, &ours, &sizes)?;
        results.push((who, outcome));
    }
    if let Some(peer) = peer {
        let who = Contender::peer(peer);
        let pops = populations(&h, &who, "peer", &sizes)?;
        let outcome = measure(&h, &who, &pops, &sizes)?;
        results.push((who, outcome));
    }
    live.rt.block_on(h.client.shutdown());
    render(&results, &sizes, report);
    Ok(())
}

fn render(results: &[(Contender, Outcome)], sizes: &Sizes, report: &mut Report) {
    let labels: Vec<String> = results.iter().map(|(c, _)| c.label.to_string()).collect();
    let mut header = vec!["measure".to_string()];
    header.extend(labels.iter().cloned());
    header.push("kubectl / proxy".into());
    if labels.iter().any(|l| l == "peer") {
        header.push("proxy / peer".into());
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut s = Section::new(
        "The example operator end to end, per transport",
        "`examples/local-configmap` built with `--release`, run as its own process with \
         `--workers 2` and the default poll period (500 ms), once per transport; with \
         `--peer`, the peer binary runs the same measurements with the same flags. A \
         harness in the bench process watches through its own `ProxyClient`, so \
         watching costs the measured operator nothing. *New*: N LocalConfigMaps are \
         created first, then the operator starts; timed until all are Ready for their \
         generation (checked every 50 ms). *Edit*: one data edit at a time at a random \
         phase of the poll period, timed from the API server's answer to the edit \
         until the resource reads Ready for the new generation (a get every 5 ms). \
         *Idle*: all Ready (1 h interval), the operator left alone; CPU is the \
         operator's whole process tree (kubectl children or the proxy included) from \
         `/proc`. Our populations are made Ready by the proxy operator and reused by \
         the per-call one; the peer (own finalizer) builds its own.",
        &header,
    );
    s.order = 6;
    let index = |label: &str| labels.iter().position(|l| l == label);
    let (k, p, peer) = (index("kubectl"), index("proxy"), index("peer"));
    let mut row = |name: String, values: Vec<f64>, fmt: &dyn Fn(f64) -> String| {
        let mut cells = vec![name];
        cells.extend(values.iter().map(|v| fmt(*v)));
        let ratio = |a: Option<usize>, b: Option<usize>| match (a, b) {
            (Some(a), Some(b)) if values[b] > 0.0 => format!("{:.1}x", values[a] / values[b]),
            _ => "-".into(),
        };
        cells.push(ratio(k, p));
        if peer.is_some() {
            cells.push(ratio(p, peer));
        }
        s.row(cells);
    };
    for &n in &sizes.new {
        let wall: Vec<f64> = results
            .iter()
            .map(|(_, o)| o.new.get(&n).map_or(0.0, |x| x.0))
            .collect();
        row(format!("{n} new to Ready: wall"), wall, &|v| secs(v));
        let cpu: Vec<f64> = results
            .iter()
            .map(|(_, o)| o.new.get(&n).map_or(0.0, |x| x.1))
            .collect();
        row(format!("{n} new to Ready: operator CPU"), cpu, &|v| secs(v));
    }
    for &n in &sizes.latency {
        let get = |f: &dyn Fn(&[f64]) -> f64| -> Vec<f64> {
            results
                .iter()
                .map(|(_, o)| o.latency.get(&n).map_or(0.0, |v| f(v)))
                .collect()
        };
        row(
            format!("edit to Ready at {}: p50", thousands(n as f64)),
            get(&|v| median(v)),
            &|v| ms(v),
        );
        row(
            format!("edit to Ready at {}: p95", thousands(n as f64)),
            get(&|v| percentile(v, 95.0)),
            &|v| ms(v),
        );
    }
    let idle: Vec<Option<(usize, f64, f64)>> = results.iter().map(|(_, o)| o.idle).collect();
    if let Some(Some((n, _, _))) = idle.first() {
        let n = *n;
        row(
            format!(
                "idle at {}: operator CPU (% of a core)",
                thousands(n as f64)
            ),
            idle.iter().map(|i| i.map_or(0.0, |x| x.1)).collect(),
            &one_decimal_pct,
        );
        row(
            format!("idle at {}: API server + etcd CPU", thousands(n as f64)),
            idle.iter().map(|i| i.map_or(0.0, |x| x.2)).collect(),
            &one_decimal_pct,
        );
    }
    if let (Some(k), Some(p)) = (k, p) {
        let first = sizes.new.first().copied().unwrap_or(0);
        let (kw, pw) = (
            results[k].1.new.get(&first).map_or(0.0, |x| x.0),
            results[p].1.new.get(&first).map_or(0.0, |x| x.0),
        );
        report.verdict(
            &format!("{first} new resources Ready at least 10x faster with the proxy than per-call (example operator)"),
            format!("{:.1}x ({} vs {})", kw / pw.max(1e-9), secs(pw), secs(kw)),
            kw >= 10.0 * pw,
        );
        if let Some((n, cpu, _)) = results[p].1.idle {
            report.verdict(
                &format!(
                    "idle with {} resources: operator + proxy CPU at most 15% of one core",
                    thousands(n as f64)
                ),
                one_decimal_pct(cpu),
                cpu <= 0.15,
            );
        }
    }
    report.sections.push(s);
}

/// Cores as a percentage of one, to 0.1% (idle figures are small).
fn one_decimal_pct(cores: f64) -> String {
    format!("{:.1}%", 100.0 * cores)
}
