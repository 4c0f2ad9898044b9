//! Part `api`: the controller against the real API server: throughput to
//! Ready by worker count, reaction latency, the cost of staying idle, and
//! the floor (one kubectl call, one direct HTTPS request).

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};

use super::api_server::{wait_polls, CurlTiming};
use super::live::{population_interval, population_namespace, Live};
use super::measure::{
    core_pct, median, ms, percentile, rss_kib, secs, thousands, CpuSnapshot, CpuUse,
};
use super::meter::{Counts, Op};
use super::package::{self, resource_type, GROUP, PLURAL};
use super::report::{Report, Section};
use super::{pick, timed};
use crate::support::kube::Kube;
use crate::support::random::XorShift;
use crate::support::wait::until;

pub struct ApiSizes {
    pub throughput: Vec<usize>,
    pub workers: Vec<usize>,
    pub latency: Vec<usize>,
    pub edits: usize,
    pub idle: usize,
    pub idle_window: Duration,
    pub floor_list: usize,
}

impl ApiSizes {
    pub fn new(quick: bool) -> Self {
        Self {
            throughput: pick(quick, vec![20], vec![100, 500]),
            workers: vec![1, 2, 4, 8],
            latency: vec![10, pick(quick, 30, 1_000)],
            edits: pick(quick, 6, 20),
            idle: pick(quick, 30, 1_000),
            idle_window: Duration::from_secs(pick(quick, 3, 10)),
            floor_list: pick(quick, 30, 1_000),
        }
    }
}

fn cpu_cells(cpu: &CpuUse) -> [String; 3] {
    [
        core_pct(cpu.own, cpu.wall),
        core_pct(cpu.children, cpu.wall),
        core_pct(cpu.server, cpu.wall),
    ]
}

struct Throughput {
    n: usize,
    workers: usize,
    wall: f64,
    calls: Counts,
    cpu: CpuUse,
}

/// `n` new resources (created first, not timed), then the controller with
/// `workers` is started; timed until every one was written Ready.
///
/// The 8-worker runs double as the start of the 100- and 1,000-resource
/// populations the other parts use (their namespace and intervals are the
/// population's); that is invisible to the run itself.
fn throughput(live: &mut Live, n: usize, workers: usize) -> Result<Throughput> {
    let adopt = match (n, workers) {
        (100, 8) => Some(100),
        (500, 8) => Some(1_000),
        _ => None,
    }
    .filter(|p| !live.has_population(*p));
    let ns = adopt.map_or_else(|| format!("new-{n}-w{workers}"), population_namespace);
    let interval = |i| adopt.map_or("1h", |p| population_interval(p, i));
    live.server.create_resources(&ns, 0..n, interval, &[])?;
    let pids = &live.server.server_pids;
    let before = live.meter.counts();
    let cpu0 = CpuSnapshot::take(pids);
    let started = Instant::now();
    let runtime = live.start_controller(&ns, workers, 500)?;
    let done = until(
        &format!("{n} new resources Ready with {workers} workers"),
        Duration::from_secs(120 + 2 * n as u64),
        Duration::from_millis(10),
        || live.meter.ready_in(&ns) >= n,
    );
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu0.since(pids);
    let calls = live.meter.counts().minus(&before);
    live.rt.block_on(runtime.stop());
    done?;
    ensure!(calls.failed == 0, "{} kubectl calls failed", calls.failed);
    if let Some(p) = adopt {
        live.adopt_population(p, n)?;
    }
    Ok(Throughput {
        n,
        workers,
        wall,
        calls,
        cpu,
    })
}

/// Spec edits of idle resources, one at a time at a random phase of the
/// poll period; each timed from the server's answer to the edit until the
/// controller's status write with that generation and phase Ready returned.
fn latency(live: &mut Live, n: usize, edits: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    live.on_population(n, |live, ns, runtime| {
        wait_polls(runtime, 2, Duration::from_secs(60))?;
        let since = Instant::now();
        let mut rng = XorShift::new(0x5eed ^ n as u64);
        let mut samples = Vec::new();
        for i in 0..edits {
            std::thread::sleep(Duration::from_millis(rng.below(500)));
            let name = package::name(i % n);
            let (generation, edited) = live.server.edit(ns, &name, 1_000 + i as u64)?;
            until(
                &format!("{ns}/{name} Ready at generation {generation}"),
                Duration::from_secs(60),
                Duration::from_millis(10),
                || live.meter.ready_at(ns, &name, generation).is_some(),
            )?;
            if let Some(ready) = live.meter.ready_at(ns, &name, generation) {
                samples.push(ready.saturating_duration_since(edited).as_secs_f64());
            }
        }
        Ok((samples, live.meter.walls(Op::List, since)))
    })
}

struct ControllerIdle {
    polls: u64,
    calls: Counts,
    cpu: CpuUse,
    rss_kib: u64,
    rss_before_kib: u64,
    list_wall: f64,
}

/// The controller left alone with `n` idle resources for `window`.
fn idle(live: &mut Live, n: usize, window: Duration) -> Result<ControllerIdle> {
    let ns = live.population(n)?;
    let rss_before_kib = rss_kib();
    live.with_controller(&ns, 2, 500, |runtime| {
        wait_polls(runtime, 2, Duration::from_secs(60))?;
        let pids = &live.server.server_pids;
        let p0 = runtime.stats().polls;
        let before = live.meter.counts();
        let since = Instant::now();
        let cpu0 = CpuSnapshot::take(pids);
        std::thread::sleep(window);
        let cpu = cpu0.since(pids);
        Ok(ControllerIdle {
            polls: runtime.stats().polls - p0,
            calls: live.meter.counts().minus(&before),
            cpu,
            rss_kib: rss_kib(),
            rss_before_kib,
            list_wall: median(&live.meter.walls(Op::List, since)),
        })
    })
}

/// `kubectl args` run `times` times: the median wall, the CPU per call,
/// then the peak RSS (MiB) of one more run.
fn kubectl_floor(live: &Live, kube: &Kube, args: &[&str], times: usize) -> Result<[f64; 3]> {
    let pids = &live.server.server_pids;
    let cpu0 = CpuSnapshot::take(pids);
    let mut walls = Vec::new();
    for _ in 0..times {
        let started = Instant::now();
        kube.ok(args, None)?;
        walls.push(started.elapsed().as_secs_f64());
    }
    let cpu = cpu0.since(pids);
    let mut cmd = kube.command();
    cmd.args(args);
    let peak_mib = super::peak_rss_of(&cmd)? / 1024;
    Ok([median(&walls), cpu.children / times as f64, peak_mib as f64])
}

fn floors(live: &mut Live, list_n: usize, report: &mut Report) -> Result<()> {
    let ns = live.population(10)?;
    let list_ns = live.population(list_n)?;
    let kind = resource_type();
    let one = package::name(0);
    let get_args = ["get", &kind, &one, "--ignore-not-found", "-o", "json"];
    let list_args = ["get", &kind, "-o", "json"];
    // One unmeasured call first so discovery is cached, as it is for the
    // controller after its first call.
    let (in_ns, in_list_ns) = (
        live.server.kube.in_namespace(&ns),
        live.server.kube.in_namespace(&list_ns),
    );
    in_ns.ok(&get_args, None)?;
    let [get_wall, get_cpu, get_rss] = kubectl_floor(live, &in_ns, &get_args, 10)?;
    let [list_wall, list_cpu, list_rss] = kubectl_floor(live, &in_list_ns, &list_args, 5)?;
    let client_walls: Vec<f64> = (0..10)
        .map(|_| {
            let started = Instant::now();
            live.rt
                .block_on(live.client.get_resource(&package::descriptor(), &ns, &one))
                .map(|_| started.elapsed().as_secs_f64())
        })
        .collect::<Result<_, _>>()?;

    let mut s = Section::new(
        "floor",
        "Floor: one kubectl call vs one direct HTTPS request",
        "request | wall (median) | CPU per call | notes",
    );
    s.order = 20;
    s.row(vec![
        "kubectl get (one object)".into(),
        ms(get_wall),
        ms(get_cpu),
        format!("peak RSS {get_rss} MiB"),
    ]);
    s.row(vec![
        "KubectlClient::get_resource (the controller's path)".into(),
        ms(median(&client_walls)),
        "-".into(),
        "kubectl plus the client's argv, deadline and JSON parse".into(),
    ]);
    s.row(vec![
        format!("kubectl get (list of {list_n})"),
        ms(list_wall),
        ms(list_cpu),
        format!("peak RSS {list_rss} MiB"),
    ]);
    match &live.server.curl {
        Some(curl) => {
            let path = format!("/apis/{GROUP}/v1/namespaces/{ns}/{PLURAL}/{one}");
            let list_path = format!("/apis/{GROUP}/v1/namespaces/{list_ns}/{PLURAL}");
            curl.get(&path)?;
            let one: Vec<_> = (0..10).map(|_| curl.get(&path)).collect::<Result<_>>()?;
            let list: Vec<_> = (0..5)
                .map(|_| curl.get(&list_path))
                .collect::<Result<_>>()?;
            let med = |v: &[CurlTiming], f: fn(&CurlTiming) -> f64| {
                median(&v.iter().map(f).collect::<Vec<_>>())
            };
            let total = med(&one, |t| t.total);
            s.row(vec![
                "HTTPS GET (one object), new TLS connection".into(),
                ms(total),
                "-".into(),
                format!(
                    "curl process {}; request on the open connection {}",
                    ms(med(&one, |t| t.process)),
                    secs(med(&one, |t| t.request))
                ),
            ]);
            s.row(vec![
                format!("HTTPS GET (list of {list_n})"),
                ms(med(&list, |t| t.total)),
                "-".into(),
                format!("curl process {}", ms(med(&list, |t| t.process))),
            ]);
            s.note(format!(
                "one kubectl get costs {:.0}x the wall time of one HTTPS request with a \
                 fresh TLS handshake, {:.0}x that of a request on an open connection",
                get_wall / total,
                get_wall / med(&one, |t| t.request).max(1e-6)
            ));
        }
        None => s.note("curl unavailable: no direct HTTPS figures"),
    }
    report.sections.push(s);
    Ok(())
}

/// Time to Ready for new resources, by worker count. Runs before the other
/// real-server parts: two of its runs also build their populations.
///
/// Without `full_matrix`, 500 resources with 4 workers is left out: it costs
/// two minutes of the 15-minute budget and sits between 2 and 8 workers,
/// which are both CPU-bound already.
pub fn run_throughput(
    live: &mut Live,
    quick: bool,
    full_matrix: bool,
    report: &mut Report,
) -> Result<()> {
    let sizes = ApiSizes::new(quick);
    let mut skipped = Vec::new();
    let mut runs = Vec::new();
    for &n in &sizes.throughput {
        for &w in &sizes.workers {
            if (n, w) == (500, 4) && !full_matrix {
                skipped.push(format!("{n} resources with {w} workers"));
                continue;
            }
            let what = format!("api: {n} new resources, {w} workers");
            runs.push(timed(&what, || throughput(live, n, w))?);
        }
    }
    let mut s = Section::new(
        "throughput",
        "Time for new resources to reach Ready",
        "resources | workers | time to all Ready | Ready/s | \
         speed-up vs 1 worker | calls / resource (excl. lists) | lists | \
         kubectl calls/s | controller CPU | kubectl CPU | \
         apiserver+etcd CPU | other processes CPU",
    );
    s.order = 30;
    for r in &runs {
        let base = runs
            .iter()
            .find(|b| b.n == r.n && b.workers == 1)
            .map_or(f64::NAN, |b| b.wall);
        let rate = r.n as f64 / r.wall;
        let calls_per_s = r.calls.total() as f64 / r.wall;
        let [own, kids, server] = cpu_cells(&r.cpu);
        s.row(vec![
            thousands(r.n as f64),
            r.workers.to_string(),
            secs(r.wall),
            format!("{rate:.1}"),
            format!("{:.2}x", base / r.wall),
            format!("{:.2}", r.calls.per_resource_calls() as f64 / r.n as f64),
            r.calls.list.to_string(),
            format!("{calls_per_s:.1}"),
            own,
            kids,
            server,
            core_pct(r.cpu.other, r.cpu.wall),
        ]);
    }
    if !skipped.is_empty() {
        s.note(format!(
            "not run: {} (`cargo xtask bench --full-matrix` adds it)",
            skipped.join(", ")
        ));
    }
    report.sections.push(s);
    Ok(())
}

/// The floor, reaction latency and idle cost.
pub fn run(live: &mut Live, quick: bool, report: &mut Report) -> Result<()> {
    let sizes = ApiSizes::new(quick);
    timed("api: floors", || floors(live, sizes.floor_list, report))?;

    let mut l = Section::new(
        "latency",
        "Reaction latency: spec edit to Ready",
        "idle resources | p50 | p95 | min | max | list call wall (median)",
    );
    l.order = 40;
    for &n in &sizes.latency {
        let what = format!("api: latency at {n}");
        let (samples, lists) = timed(&what, || latency(live, n, sizes.edits))?;
        let (p50, p95) = (percentile(&samples, 50.0), percentile(&samples, 95.0));
        l.row(vec![
            thousands(n as f64),
            ms(p50),
            ms(p95),
            ms(samples.iter().copied().fold(f64::MAX, f64::min)),
            ms(samples.iter().copied().fold(0.0, f64::max)),
            ms(median(&lists)),
        ]);
    }
    report.sections.push(l);

    let r = timed("api: idle cost", || {
        idle(live, sizes.idle, sizes.idle_window)
    })?;
    let mut i = Section::new(
        "idle-cost",
        &format!(
            "Cost of staying idle with {} resources",
            thousands(sizes.idle as f64)
        ),
        "measure | value",
    );
    i.order = 50;
    let cycle_cpu = (r.cpu.children + r.cpu.own) / r.polls.max(1) as f64;
    i.row(vec!["poll cycles".into(), r.polls.to_string()]);
    i.row(vec!["kubectl calls".into(), r.calls.breakdown()]);
    i.row(vec!["list call wall (median)".into(), ms(r.list_wall)]);
    for (what, cpu) in [
        ("controller CPU (own process)", r.cpu.own),
        ("kubectl CPU (children)", r.cpu.children),
        ("kube-apiserver + etcd CPU", r.cpu.server),
        ("other processes on the machine", r.cpu.other),
    ] {
        i.row(vec![what.into(), core_pct(cpu, r.cpu.wall) + " of a core"]);
    }
    i.row(vec![
        "CPU per poll cycle (controller + kubectl)".into(),
        ms(cycle_cpu),
    ]);
    i.row(vec![
        "controller process RSS (VmRSS)".into(),
        format!(
            "{:.1} MiB ({:.1} MiB before this controller started: harness, tokio, earlier runs)",
            r.rss_kib as f64 / 1024.0,
            r.rss_before_kib as f64 / 1024.0
        ),
    ]);
    report.sections.push(i);
    Ok(())
}
