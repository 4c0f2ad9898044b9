//! Part 1: the controller's own cost, no I/O. A `FakeCluster` stands in for
//! the API server and the package does nothing, so what is left is deciding
//! due-ness, the reconcile state machine, status rendering and JSON handling.

use std::hint::black_box;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use blue_kubernetes::{controller, is_due, reconcile, start, Config, Controller, Options, Package};
use blue_kubernetes::{Phase, Report as Outcome, FINALIZER};
use blue_kubernetes_client::Client;
use blue_testkit::{FakeClock, FakeCluster};
use serde_json::{json, Value};

use super::measure::{median, rss_kib, secs, thousands, time_per_call};
use super::package::{self, descriptor};
use super::report::{Report, Section};
use super::{pick, timed, tokio_runtime};
use crate::support::wait::until;

const NS: &str = "default";
/// One past the default 60 s interval: every Ready resource is due again.
const PAST_INTERVAL_MS: u64 = 61_000;
const TARGET_DECISIONS: f64 = 50_000.0;
const TARGET_BYTES: f64 = 4096.0;

fn spec() -> Value {
    json!({"reconcileInterval": "60s", "config": {"size": 1}})
}

fn controller_for(
    cluster: &FakeCluster,
    clock: &FakeClock,
    package: &Package,
) -> Result<Controller> {
    let mut config = Config::new(Arc::new(cluster.clone()), vec![package.clone()]);
    config.namespace = NS.into();
    config.now = clock.as_fn();
    Ok(controller(config)?)
}

/// N resources in a fake cluster, and controllers with a synchronous and an
/// asynchronous no-op package over them.
struct Fixture {
    n: usize,
    cluster: FakeCluster,
    clock: FakeClock,
    names: Vec<String>,
    async_pkg: Package,
    async_ctl: Controller,
    sync_pkg: Package,
    sync_ctl: Controller,
}

impl Fixture {
    fn new(n: usize) -> Result<Self> {
        let clock = FakeClock::default();
        let cluster = FakeCluster::new().with_clock(clock.clone());
        let names: Vec<String> = (0..n).map(package::name).collect();
        for name in &names {
            cluster.create(&descriptor(), NS, name, spec());
        }
        let async_pkg = package::noop(false);
        let sync_pkg = package::noop(true);
        Ok(Self {
            n,
            async_ctl: controller_for(&cluster, &clock, &async_pkg)?,
            sync_ctl: controller_for(&cluster, &clock, &sync_pkg)?,
            cluster,
            clock,
            names,
            async_pkg,
            sync_pkg,
        })
    }

    /// `reconcile` every resource in turn (the public one-resource entry
    /// point: one read, then the same pass the runtime runs); each must end
    /// Ready.
    async fn reconcile_all(&self, sync: bool) -> Result<Duration> {
        let (ctl, pkg) = if sync {
            (&self.sync_ctl, &self.sync_pkg)
        } else {
            (&self.async_ctl, &self.async_pkg)
        };
        let started = Instant::now();
        for name in &self.names {
            let outcome = reconcile(ctl, pkg, NS, name).await?;
            ensure!(
                matches!(outcome, Outcome::Reconciled(Phase::Ready, _)),
                "{name}: expected Ready, got {outcome:?}"
            );
        }
        let elapsed = started.elapsed();
        self.cluster.reset_calls();
        Ok(elapsed)
    }

    /// The polling runtime with `workers` on a cluster where every
    /// resource is due: one poll queues all N, time until all N passes
    /// finished. The poll period is an hour so no second list runs; the
    /// harness watches the runtime's counters, never the cluster's lock.
    fn runtime_drain(&self, rt: &tokio::runtime::Runtime, workers: usize) -> Result<Duration> {
        self.cluster.reset_calls();
        let mut config = self.async_ctl.config().clone();
        config.poll_ms = 3_600_000;
        config.workers = workers;
        let runtime = {
            let _entered = rt.enter();
            start(controller(config)?)?
        };
        let what = format!("the runtime reconciles {} due resources", self.n);
        let elapsed = until(
            &what,
            Duration::from_secs(300),
            Duration::from_micros(200),
            || {
                let st = runtime.stats();
                st.reconciles + st.reconcile_errors >= self.n as u64
            },
        )?;
        rt.block_on(runtime.stop());
        let writes = self.cluster.calls().update_status;
        ensure!(
            writes == self.n,
            "expected {} status writes, saw {writes}",
            self.n
        );
        self.cluster.reset_calls();
        Ok(elapsed)
    }
}

/// The measured rates (per second), in the table's column order after the
/// resource count.
const RATES: [&str; 7] = [
    "idle: is_due/s",
    "idle: poll cycle (list+decide)/s",
    "due: reconcile()/s async",
    "due: reconcile()/s sync",
    "due: runtime, 1 worker/s",
    "due: runtime, 2 workers/s",
    "first reconcile/s",
];
// Indices into `RATES`.
const IDLE_DECIDE: usize = 0;
const DUE_ASYNC: usize = 2;
const DUE_SYNC: usize = 3;
const DUE_RUNTIME1: usize = 4;
const DUE_RUNTIME2: usize = 5;

/// Medians per population size, one per [`RATES`] column.
struct SizeResult {
    n: usize,
    rates: [f64; 7],
}

impl SizeResult {
    /// The fastest way the controller completed due passes at this size.
    fn due_best(&self) -> f64 {
        let r = &self.rates;
        r[DUE_ASYNC].max(r[DUE_RUNTIME1]).max(r[DUE_RUNTIME2])
    }
}

fn measure_size(
    rt: &tokio::runtime::Runtime,
    n: usize,
    reps: usize,
    min: Duration,
) -> Result<SizeResult> {
    let fx = Fixture::new(n)?;
    // First reconcile of new resources: adds the finalizer, then writes Ready.
    let first = rt.block_on(fx.reconcile_all(false))?;

    let snapshots = fx.cluster.list(&descriptor(), NS);
    let now = fx.clock.now_ms();
    ensure!(
        snapshots.iter().all(|r| !is_due(r, now)),
        "freshly reconciled resources must not be due"
    );
    // Samples of the first six rates, as durations per `n` resources.
    let mut samples: [Vec<Duration>; 6] = Default::default();
    for _ in 0..reps {
        // Idle: the decision itself, over already-listed snapshots.
        let per = time_per_call(min, || {
            for r in &snapshots {
                black_box(is_due(black_box(r), now));
            }
        });
        samples[0].push(per);

        // Idle: a whole poll cycle as the runtime does it (list through the
        // Client, decide each); the list copy is the fake cluster's cost.
        let per = rt.block_on(async {
            let started = Instant::now();
            let mut cycles = 0u32;
            while started.elapsed() < min || cycles == 0 {
                let items = fx.cluster.list_resources(&descriptor(), NS).await?;
                let due = items.iter().filter(|r| is_due(r, now)).count();
                ensure!(due == 0, "idle cycle found {due} due resources");
                cycles += 1;
            }
            Ok::<_, anyhow::Error>(started.elapsed() / cycles)
        })?;
        fx.cluster.reset_calls();
        samples[1].push(per);

        // Due: every resource's interval has passed; each pass re-reads,
        // observes (READY) and writes Ready status once.
        for (i, sync) in [(DUE_ASYNC, false), (DUE_SYNC, true)] {
            fx.clock.advance(PAST_INTERVAL_MS);
            samples[i].push(rt.block_on(fx.reconcile_all(sync))?);
        }
        for (i, workers) in [(DUE_RUNTIME1, 1), (DUE_RUNTIME2, 2)] {
            fx.clock.advance(PAST_INTERVAL_MS);
            samples[i].push(fx.runtime_drain(rt, workers)?);
        }
    }
    let rate = |d: &Duration| n as f64 / d.as_secs_f64();
    let mut rates = [rate(&first); 7];
    for (r, s) in rates.iter_mut().zip(&samples) {
        *r = median(&s.iter().map(rate).collect::<Vec<_>>());
    }
    Ok(SizeResult { n, rates })
}

/// Per-call costs of the pieces a reconcile pass is made of, on one Ready
/// snapshot: where the time of a due pass goes. Median of `reps`.
fn pieces(rt: &tokio::runtime::Runtime, reps: usize, min: Duration) -> Result<Vec<(String, f64)>> {
    let fx = Fixture::new(1)?;
    rt.block_on(fx.reconcile_all(false))?;
    let r = fx.cluster.list(&descriptor(), NS).remove(0);
    let now = fx.clock.now_ms();
    let text = serde_json::to_string(&r)?;
    let options = Options::from_resource(&r);
    let handle = rt.handle().clone();
    let mut pieces: Vec<(String, Box<dyn FnMut()>)> = vec![
        (
            format!("is_due on a listed snapshot ({} B of JSON)", text.len()),
            Box::new(|| {
                black_box(is_due(black_box(&r), now));
            }),
        ),
        (
            "deep copy of the snapshot (`serde_json::Value::clone`)".into(),
            Box::new(|| {
                black_box(black_box(&r).clone());
            }),
        ),
        (
            "Options::from_resource (copies the snapshot into the options)".into(),
            Box::new(|| {
                black_box(Options::from_resource(black_box(&r)));
            }),
        ),
        (
            "clone of the Options (every callback call makes one)".into(),
            Box::new(|| {
                black_box(black_box(&options).clone());
            }),
        ),
        (
            "serialize the snapshot to JSON text".into(),
            Box::new(|| {
                black_box(serde_json::to_string(black_box(&r)).ok());
            }),
        ),
        (
            "parse the snapshot from JSON text".into(),
            Box::new(|| {
                black_box(serde_json::from_str::<Value>(black_box(&text)).ok());
            }),
        ),
        (
            "spawn_blocking round trip (each sync callback pays it)".into(),
            Box::new(|| {
                handle.block_on(async {
                    black_box(tokio::task::spawn_blocking(|| 1).await.ok());
                });
            }),
        ),
    ];
    let mut out = Vec::new();
    for (what, f) in &mut pieces {
        let times: Vec<f64> = (0..reps)
            .map(|_| time_per_call(min, &mut *f).as_secs_f64())
            .collect();
        out.push((what.clone(), median(&times)));
    }
    Ok(out)
}

/// Memory per idle resource, measured in a fresh child process per size so
/// earlier sizes' freed memory does not hide later growth.
#[derive(Debug)]
struct Memory {
    n: usize,
    base_kib: u64,
    stored_kib: u64,
    polled_kib: u64,
    json_bytes: usize,
}

fn memory_in_child(n: usize) -> Result<Memory> {
    let exe = std::env::current_exe().context("locating the bench binary")?;
    let out = Command::new(exe)
        .args(["bench", "--mem-probe", &n.to_string()])
        .output()
        .context("running the memory probe")?;
    ensure!(
        out.status.success(),
        "memory probe for {n} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).context("memory probe output")?;
    let num = |k: &str| v[k].as_u64().unwrap_or(0);
    Ok(Memory {
        n,
        base_kib: num("base_kib"),
        stored_kib: num("stored_kib"),
        polled_kib: num("polled_kib"),
        json_bytes: num("json_bytes") as usize,
    })
}

/// The child side of [`memory_in_child`]: prints one JSON object.
///
/// Baseline after warming up the runtime and allocator; then N idle (Ready,
/// not due) resources are stored in the fake cluster; then the real polling
/// runtime runs one poll cycle (lists all N, decides none is due) and is
/// measured while still running.
pub fn mem_probe(n: usize) -> Result<()> {
    let rt = tokio_runtime()?;
    // A Ready resource reconciled for real gives the shape of an idle one.
    let warm = Fixture::new(16)?;
    rt.block_on(warm.reconcile_all(false))?;
    let template = warm.cluster.list(&descriptor(), NS).remove(0);
    let json_bytes = serde_json::to_string(&template)?.len();
    let clock = FakeClock::default();
    clock.set(warm.clock.now_ms());
    let cluster = FakeCluster::new().with_clock(clock.clone());
    let ctl = controller_for(&cluster, &clock, &warm.async_pkg)?;
    drop(warm);

    let base_kib = rss_kib();
    for i in 0..n {
        let name = package::name(i);
        let mut status = template["status"].clone();
        // Same length as a real one; the hash is not checked by an idle poll.
        status["profile"] = json!(format!("{NS}--{name}"));
        cluster.create_with(
            &descriptor(),
            json!({
                "metadata": {"name": name, "namespace": NS, "finalizers": [FINALIZER]},
                "spec": spec(),
                "status": status,
            }),
        );
    }
    let stored_kib = rss_kib();
    let runtime = {
        let _entered = rt.enter();
        start(ctl)?
    };
    let one_poll = Duration::from_millis(1);
    until("a poll cycle", Duration::from_secs(60), one_poll, || {
        runtime.stats().polls >= 1
    })?;
    let polled_kib = rss_kib();
    let stats = runtime.stats();
    rt.block_on(runtime.stop());
    ensure!(
        stats.reconciles == 0,
        "idle poll reconciled {}",
        stats.reconciles
    );
    println!(
        "{}",
        json!({"n": n, "base_kib": base_kib, "stored_kib": stored_kib,
               "polled_kib": polled_kib, "json_bytes": json_bytes})
    );
    Ok(())
}

pub fn run(quick: bool, report: &mut Report) -> Result<()> {
    let rt = tokio_runtime()?;
    let sizes = [100usize, 1_000, 10_000];
    let (reps, min) = (
        pick(quick, 2, 5),
        Duration::from_millis(pick(quick, 50, 200)),
    );
    // Warm-up: the first passes in a process pay for lazy statics, thread
    // start-up and page faults, which belong to no size.
    {
        let fx = Fixture::new(100)?;
        rt.block_on(fx.reconcile_all(false))?;
        fx.clock.advance(PAST_INTERVAL_MS);
        fx.runtime_drain(&rt, 2)?;
    }
    let mut results = Vec::new();
    for n in sizes {
        // 10,000 due passes take seconds per repetition; fewer suffice there.
        let reps = if n >= 10_000 { reps.min(3) } else { reps };
        let what = format!("overhead: {n} resources");
        results.push(timed(&what, || measure_size(&rt, n, reps, min))?);
    }

    let header = format!("resources | {}", RATES.join(" | "));
    let mut s = Section::new("overhead", "Controller overhead, no I/O", &header);
    s.order = 1;
    for r in &results {
        let cells = std::iter::once(r.n as f64).chain(r.rates);
        s.row(cells.map(thousands).collect());
    }
    let sync_ratio = median(
        &results
            .iter()
            .map(|r| r.rates[DUE_ASYNC] / r.rates[DUE_SYNC])
            .collect::<Vec<_>>(),
    );
    s.note(format!(
        "sync callbacks cost {sync_ratio:.1}x async ones per due pass"
    ));
    report.sections.push(s);

    let min_idle = results
        .iter()
        .map(|r| r.rates[IDLE_DECIDE])
        .fold(f64::MAX, f64::min);
    let min_due = results
        .iter()
        .map(SizeResult::due_best)
        .fold(f64::MAX, f64::min);
    report.verdict(
        ">= 50,000 decisions/s, idle resources",
        format!("{} /s (slowest size)", thousands(min_idle)),
        min_idle >= TARGET_DECISIONS,
    );
    report.verdict(
        ">= 50,000 decisions/s, due resources (full pass incl. status write)",
        format!(
            "{} /s (fastest async path at the slowest size)",
            thousands(min_due)
        ),
        min_due >= TARGET_DECISIONS,
    );

    let mut p = Section::new(
        "due-pass",
        "Where a due pass spends its time",
        "piece | time per call",
    );
    p.order = 2;
    let costs = pieces(&rt, reps, min)?;
    for (what, t) in &costs {
        p.row(vec![what.clone(), secs(*t)]);
    }
    // Pieces 1-3: a snapshot copy, Options::from_resource, an Options clone.
    let (copy, build, clone) = (costs[1].1, costs[2].1, costs[3].1);
    if let Some(r) = results.iter().find(|r| r.n == 1_000) {
        let pass = 1.0 / r.rates[DUE_ASYNC];
        let options = 2.0 * build + 3.0 * clone;
        let fake = 4.0 * copy;
        p.note(format!(
            "a due pass costs {} (async, `reconcile()`, 1,000 resources): building the \
             options twice and cloning them three times {} ({:.0}%), the fake cluster's \
             four copies of the object {} ({:.0}%); {:.2}% of one kubectl call's ~0.1 s \
             of CPU",
            secs(pass),
            secs(options),
            100.0 * options / pass,
            secs(fake),
            100.0 * fake / pass,
            100.0 * pass / 0.1
        ));
    }
    report.sections.push(p);

    let mut m = Section::new(
        "memory",
        "Memory per idle resource",
        "resources | object JSON | stored / resource | \
         poll cycle adds / resource | total / resource",
    );
    m.order = 3;
    let mut worst_total = 0.0f64;
    let mut worst_poll = 0.0f64;
    for n in sizes {
        let mem = memory_in_child(n)?;
        let per = |kib: u64| kib as f64 * 1024.0 / mem.n as f64;
        let stored = per(mem.stored_kib.saturating_sub(mem.base_kib));
        let poll = per(mem.polled_kib.saturating_sub(mem.stored_kib));
        let total = per(mem.polled_kib.saturating_sub(mem.base_kib));
        if n >= 1_000 {
            worst_total = worst_total.max(total);
            worst_poll = worst_poll.max(poll);
        }
        m.row(vec![
            thousands(n as f64),
            format!("{} B", mem.json_bytes),
            format!("{} B", thousands(stored)),
            format!("{} B", thousands(poll)),
            format!("{} B", thousands(total)),
        ]);
    }
    report.sections.push(m);
    report.verdict(
        "< 4 KiB per idle resource",
        format!(
            "controller: {} B per resource during/after a poll cycle (the listed copy); \
             {} B with the fake cluster's stored copy (worst of 1,000 and 10,000)",
            thousands(worst_poll),
            thousands(worst_total)
        ),
        worst_poll < TARGET_BYTES,
    );
    Ok(())
}
