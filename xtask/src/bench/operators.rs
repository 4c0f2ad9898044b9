//! Part `operators`: the example operator end to end, as a separate
//! process in each of its modes, and optionally a peer operator taking the
//! same flags, on the same API server, through one measuring path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::apimetrics::{Scrape, Served};
use super::contender::{operator_cpu, operator_rss, select, Contender, Family, Rss};
use super::harness::{name, Deletions, Harness, Reaction, Spec};
use super::live::Live;
use super::measure::{median, pid_cpu_seconds};
use super::operators_report::render;
use super::report::Report;
use super::steady::{self, writes, Restart, Steady};
use super::{pick, timed};
use crate::support::random::XorShift;
use crate::support::temp_dir::TempDir;
use crate::support::wait::poll;
use crate::world::operator::Operator;

/// What `cargo xtask bench` asked of this part (its flags: `bench::Args`).
pub struct Options<'a> {
    pub quick: bool,
    pub sizes: Option<Vec<usize>>,
    pub reactions_only: bool,
    pub runs: Option<usize>,
    pub from: usize,
    /// The reactions block (see [`block`](super::block)) instead of the
    /// usual reactions, after this long idle.
    pub block: Option<Duration>,
    pub contenders: Option<Vec<String>>,
    pub peer: Option<&'a Path>,
    pub workers: usize,
    /// Our operators' `--log-level`; their logs are then kept in
    /// [`LOGS`] (else they go with the scratch directory).
    pub log_level: Option<String>,
}

/// Where `--operator-log` keeps the operators' logs, under the workspace.
pub const LOGS: &str = "target/bench/logs";

pub struct Sizes {
    pub new: usize,
    pub deletions: usize,
    pub latency: Vec<usize>,
    pub edits: usize,
    pub creates: usize,
    pub idle_window: Duration,
    /// (resources, interval in seconds) of each steady-state window.
    pub steady: Vec<(usize, u64)>,
    pub steady_window: Duration,
    /// The steady population restarted, if its size was asked for.
    pub restart: Option<(usize, u64)>,
    /// Runs of the reactions at each size: their p50s move by a third from
    /// run to run for every contender, so the tables show the median run.
    pub reaction_runs: usize,
    /// Each run is the reactions block (see [`block`](super::block)) after
    /// this long idle, instead of the usual reactions.
    pub block: Option<Duration>,
}

impl Sizes {
    /// `latency` (`--sizes`) also picks the full run's steady populations
    /// of those sizes, so `--sizes 1000` skips the 40 minutes of 10,000.
    pub fn new(quick: bool, latency: Option<Vec<usize>>) -> Self {
        let default_latency = pick(quick, vec![10, 100], vec![10, 1_000, 10_000]);
        let asked = |n: &usize| quick || latency.as_ref().is_none_or(|sizes| sizes.contains(n));
        let mut steady = pick(
            quick,
            vec![(50, 10)],
            vec![(1_000, 10), (10_000, 10), (1_000, 60), (10_000, 60)],
        );
        steady.retain(|(n, _)| asked(n));
        let restart = Some(pick(quick, (50, 10), (10_000, 60))).filter(|(n, _)| asked(n));
        Self {
            new: pick(quick, 20, 100),
            deletions: pick(quick, 5, 20),
            latency: latency.clone().unwrap_or(default_latency),
            edits: pick(quick, 5, 20),
            creates: pick(quick, 3, 10),
            idle_window: Duration::from_secs(pick(quick, 5, 30)),
            steady,
            steady_window: Duration::from_secs(pick(quick, 10, 60)),
            restart,
            reaction_runs: pick(quick, 1, 3),
            block: None,
        }
    }
}

/// Idle cost over a window, with `n` Ready resources.
#[derive(Clone, Debug, Default)]
pub struct Idle {
    /// Operator and its children (our `kubectl proxy`), cores.
    pub operator_cpu: f64,
    /// kube-apiserver + etcd, cores.
    pub server_cpu: f64,
    pub rss: Rss,
    pub served: Served,
    pub wall: f64,
}

/// One run of the reactions at one size.
#[derive(Default)]
pub struct Reactions {
    pub edits: Vec<Reaction>,
    /// Create to Ready, seconds.
    pub creates: Vec<f64>,
    /// A managed ConfigMap deleted to created again, seconds.
    pub restores: Vec<f64>,
    /// The reactions block's Destroy deletions, all at once.
    pub deletions: Option<Deletions>,
}

#[derive(Default)]
pub struct AtSize {
    /// In the order run, contenders alternating between runs.
    pub runs: Vec<Reactions>,
    /// Measured before the first run.
    pub idle: Idle,
}

#[derive(Default)]
pub struct Outcome {
    /// Each round of the bursts, in the order run (see [`Outcome::burst`]).
    pub burst_rounds: Vec<Burst>,
    pub steady: Vec<Steady>,
    pub restart: Option<Restart>,
    pub sizes: BTreeMap<usize, AtSize>,
}

impl Outcome {
    /// The median of `figure` over the bursts' rounds (0 when none ran):
    /// one burst varies 2x from run to run, the peer's too.
    pub fn burst(&self, figure: fn(&Burst) -> f64) -> f64 {
        median(&self.burst_rounds.iter().map(figure).collect::<Vec<_>>())
    }
}

/// One round of the bursts.
#[derive(Clone, Copy, Default)]
pub struct Burst {
    /// Seconds until all new resources were Ready.
    pub wall: f64,
    /// Operator CPU seconds meanwhile.
    pub cpu: f64,
    /// Writes (the operator's, on its resources) per new resource.
    pub writes: f64,
    /// Seconds from the first delete until the last resource was gone.
    pub gone: f64,
    /// Seconds the harness took to send its deletes, one after another:
    /// most of [`gone`](Self::gone).
    pub sent: f64,
    /// Seconds from one resource shown deleting to it gone, the median.
    pub each: f64,
    /// Writes per Destroy deletion, the harness's DELETE not counted.
    pub deletion_writes: f64,
}

/// The resources an operator of this job touches; the API server's own
/// loopback controllers read others (endpoints, services, namespaces...).
pub fn operator_resource(resource: &str) -> bool {
    matches!(
        resource,
        "localconfigmaps" | "configmaps" | "events" | "leases"
    )
}

/// Rounds of the bursts (new resources, Destroy deletions).
const BURST_ROUNDS: usize = 3;

struct Bench<'h, 'a> {
    h: &'h Harness<'a>,
    sizes: Sizes,
    /// Namespaces of Ready populations already built, per family.
    built: BTreeSet<String>,
}

impl Bench<'_, '_> {
    /// Runs `who` on `ns` for the duration of `f`, stopping it either way.
    fn with<T>(
        &self,
        who: &Contender,
        ns: &str,
        f: impl FnOnce(&Operator) -> Result<T>,
    ) -> Result<T> {
        let mut op = self.h.start(who, ns)?;
        let result = f(&op);
        op.stop()?;
        result
    }

    /// The namespace of a Ready population of `n` with `spec` of `who`'s
    /// family, built by the first contender of that family that asks.
    fn population(&mut self, who: &Contender, what: &str, n: usize, spec: Spec) -> Result<String> {
        let ns = population_namespace(who, what, n);
        if self.built.insert(ns.clone()) {
            let t = Instant::now();
            self.h.populate_with(&ns, n, spec)?;
            let created = t.elapsed();
            let took = self.with(who, &ns, |_| self.h.wait_ready(&ns, n, ready_timeout(n)))?;
            eprintln!(
                "[bench] operators: {ns} created in {:.1}s, made Ready by {} in {:.1}s",
                created.as_secs_f64(),
                who.label,
                took.as_secs_f64()
            );
        }
        Ok(ns)
    }

    /// (wall, operator CPU) from the first of `sizes.new` resources created
    /// at once until the last is Ready, with the operator already running
    /// (its start-up is the restart stage's), and the writes per resource
    /// once it went idle.
    fn new_resources(&self, who: &Contender, round: usize) -> Result<((f64, f64), f64)> {
        let n = self.sizes.new;
        let ns = format!("{}-new-{n}-{round}", who.label);
        self.h.populate_with(&ns, 0, Spec::IDLE)?;
        self.with(who, &ns, |op| {
            // One resource made Ready first proves the operator watches.
            self.h.create_reaction(&ns, "warm-up", Spec::IDLE)?;
            settle(self.h, &ns)?;
            let before = Scrape::take(self.h.server)?;
            let cpu0 = operator_cpu(op);
            let took = self.h.burst_ready(&ns, n, Spec::IDLE)?;
            let cpu = operator_cpu(op) - cpu0;
            settle(self.h, &ns)?;
            // Less the creates, which are the harness's.
            let written = writes(&Scrape::take(self.h.server)?.since(&before)) - n as f64;
            Ok(((took, cpu), written / n as f64))
        })
    }

    /// One round of new resources and Destroy deletions.
    fn burst_round(&self, who: &Contender, round: usize, out: &mut Outcome) -> Result<()> {
        let ((wall, cpu), writes) = self.new_resources(who, round)?;
        let (gone, deletion_writes) = self.deletions(who, round)?;
        out.burst_rounds.push(Burst {
            wall,
            cpu,
            writes,
            gone: gone.total,
            sent: gone.sent,
            each: gone.each,
            deletion_writes,
        });
        Ok(())
    }

    /// How long `sizes.deletions` Destroy deletions took, and the
    /// operator's writes per deletion.
    fn deletions(&self, who: &Contender, round: usize) -> Result<(Deletions, f64)> {
        let n = self.sizes.deletions;
        let ns = format!("{}-delete-{n}-{round}", who.label);
        let spec = Spec {
            destroy: true,
            ..Spec::IDLE
        };
        self.h.populate_with(&ns, n, spec)?;
        self.with(who, &ns, |_| {
            self.h.wait_ready(&ns, n, ready_timeout(n))?;
            settle(self.h, &ns)?;
            let before = Scrape::take(self.h.server)?;
            let took = self.h.delete_all(&ns, n)?;
            settle(self.h, &ns)?;
            let written = writes(&Scrape::take(self.h.server)?.since(&before)) - n as f64;
            Ok((took, written / n as f64))
        })
    }

    fn steady_window(&mut self, who: &Contender, n: usize, interval: u64) -> Result<Steady> {
        let ns = self.steady_population(who, n, interval)?;
        let window = self.sizes.steady_window;
        let idle = steady::server_idle(self.h.server, window.min(Duration::from_secs(20)));
        let steady = self.with(who, &ns, |op| {
            self.h.wait_ready(&ns, n, ready_timeout(n))?;
            // Past the start-up checks of everything due and one whole
            // (stretched) interval, so the window sees the steady rate.
            std::thread::sleep(Duration::from_secs(interval * 11 / 10 + 5));
            steady::window(self.h.server, (op, &|| who.checks()), (n, interval), window)
        })?;
        Ok(Steady {
            apiserver_idle_cpu: idle,
            ..steady
        })
    }

    /// `who` started on a Ready population whose checks are all past due.
    fn restart(&mut self, who: &Contender, n: usize, interval: u64) -> Result<Restart> {
        let ns = self.steady_population(who, n, interval)?;
        let before = Scrape::take(self.h.server)?;
        let mut op = self.h.start(who, &ns)?;
        let timeout = Duration::from_secs(interval * 3);
        let restart = steady::restart(
            self.h.server,
            (before, Instant::now(), &|| who.checks()),
            (n, interval),
            timeout,
        );
        op.stop()?;
        restart
    }

    fn steady_population(&mut self, who: &Contender, n: usize, interval: u64) -> Result<String> {
        let spec = Spec {
            interval: every(interval)?,
            ..Spec::IDLE
        };
        self.population(who, &format!("steady{}", every(interval)?), n, spec)
    }

    /// Run `run` of the reactions at `n`, the first one after the idle cost.
    fn at_size(&mut self, who: &Contender, n: usize, run: usize, at: &mut AtSize) -> Result<()> {
        let ns = self.population(who, "pop", n, Spec::IDLE)?;
        let (edits, creates, window) =
            (self.sizes.edits, self.sizes.creates, self.sizes.idle_window);
        let h = self.h;
        let baseline = Scrape::take(h.server)?;
        let block = self.sizes.block;
        let reactions = self.with(who, &ns, |op| {
            h.wait_ready(&ns, n, ready_timeout(n))?;
            settle(h, &ns)?;
            let quiet = Instant::now();
            if run == 0 {
                at.idle = idle(h, Some(op), window, &baseline)?;
            }
            let mut rng = XorShift::new(0xed17 ^ n as u64 ^ ((run as u64) << 32));
            if let Some(idle) = block {
                std::thread::sleep(idle.saturating_sub(quiet.elapsed()));
                return super::block::run(h, &ns, who.label, run, &mut rng);
            }
            let mut out = Reactions::default();
            // At a random phase of any poll period.
            for i in 0..edits {
                std::thread::sleep(Duration::from_millis(rng.below(500)));
                let value = format!("{}-{run}-{i}", who.label);
                out.edits.push(h.edit_reaction(&ns, &name(i % n), &value)?);
            }
            for i in 0..creates {
                std::thread::sleep(Duration::from_millis(rng.below(500)));
                let created = format!("c-{}-{run}-{i}", who.label);
                out.creates
                    .push(h.create_reaction(&ns, &created, Spec::IDLE)?);
                std::thread::sleep(Duration::from_millis(rng.below(500)));
                out.restores.push(h.restore_reaction(&ns, &name(i % n))?);
            }
            Ok(out)
        })?;
        at.runs.push(reactions);
        Ok(())
    }

    /// A stage that fails (a timeout at 10,000 on a loaded machine) leaves
    /// its cells empty instead of losing the whole run.
    fn stage(&mut self, who: &Contender, stage: Stage, out: &mut Outcome) {
        let what = format!("operators: {} {stage:?}", who.label);
        let result = timed(&what, || match stage {
            Stage::New { round } => self.burst_round(who, round, out),
            Stage::Steady {
                n,
                interval,
                window,
                restart,
            } => {
                if window {
                    match self.steady_window(who, n, interval) {
                        Ok(steady) => out.steady.push(steady),
                        Err(e) => eprintln!("[bench] {what}: window FAILED: {e:#}"),
                    }
                }
                if restart {
                    out.restart = Some(self.restart(who, n, interval)?);
                }
                Ok(())
            }
            Stage::AtSize { n, run } => {
                let at = out.sizes.entry(n).or_default();
                self.at_size(who, n, run, at)
            }
        });
        if let Err(e) = result {
            eprintln!("[bench] {what} FAILED: {e:#}");
        }
    }

    /// Removes what `stage` built for `who`'s family, so populations do not
    /// pile up: 45,000 objects kept to the end made etcd commits take
    /// seconds and stalled the last contender.
    fn discard(&mut self, who: &Contender, stage: Stage) -> Result<()> {
        let ns = match stage {
            Stage::New { .. } => return Ok(()),
            Stage::Steady { n, interval, .. } => steady_namespace(who, n, interval)?,
            // Kept for the size's next run.
            Stage::AtSize { run, .. } if run + 1 < self.sizes.reaction_runs => return Ok(()),
            Stage::AtSize { n, .. } => population_namespace(who, "pop", n),
        };
        if self.built.remove(&ns) {
            let t = Instant::now();
            self.h.discard(&ns)?;
            eprintln!(
                "[bench] operators: {ns} discarded in {:.1}s",
                t.elapsed().as_secs_f64()
            );
        }
        Ok(())
    }
}

/// One step of the run, measured for every contender before the next
/// begins, so contenders alternate and share the machine's state.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stage {
    /// New resources to Ready, then Destroy deletions: one round of
    /// [`BURST_ROUNDS`], each a stage of its own so contenders alternate.
    New { round: usize },
    /// A steady population: its window, and/or the restart on it.
    Steady {
        n: usize,
        interval: u64,
        window: bool,
        restart: bool,
    },
    /// Reactions at one size (and its idle cost, on the first run).
    AtSize { n: usize, run: usize },
}

fn stages(sizes: &Sizes, reactions_only: bool) -> Vec<Stage> {
    let runs = sizes.reaction_runs;
    let at_size =
        (sizes.latency.iter()).flat_map(|&n| (0..runs).map(move |run| Stage::AtSize { n, run }));
    if reactions_only {
        return at_size.collect();
    }
    let mut out: Vec<_> = (0..BURST_ROUNDS)
        .map(|round| Stage::New { round })
        .collect();
    for &(n, interval) in &sizes.steady {
        out.push(Stage::Steady {
            n,
            interval,
            window: true,
            restart: sizes.restart == Some((n, interval)),
        });
    }
    if let Some((n, interval)) = sizes.restart.filter(|r| !sizes.steady.contains(r)) {
        out.push(Stage::Steady {
            n,
            interval,
            window: false,
            restart: true,
        });
    }
    out.extend(at_size);
    // Smaller populations first: a long run stopped early (a loaded
    // machine, a deadline) has every small figure already written. Within
    // a size, reactions and idle cost, then the restart, then the rest.
    out.sort_by_key(|s| (s.size(), s.rank()));
    out
}

impl Stage {
    fn rank(&self) -> u8 {
        match *self {
            Stage::AtSize { .. } | Stage::New { .. } => 0,
            Stage::Steady { restart: true, .. } => 1,
            Stage::Steady { .. } => 2,
        }
    }

    /// The population a stage works on.
    fn size(&self) -> usize {
        match *self {
            Stage::New { .. } => 0,
            Stage::Steady { n, .. } | Stage::AtSize { n, .. } => n,
        }
    }
}

fn population_namespace(who: &Contender, what: &str, n: usize) -> String {
    format!("{:?}-{what}-{n}", who.family).to_lowercase()
}

fn steady_namespace(who: &Contender, n: usize, interval: u64) -> Result<String> {
    Ok(population_namespace(
        who,
        &format!("steady{}", every(interval)?),
        n,
    ))
}

fn every(interval: u64) -> Result<&'static str> {
    Ok(match interval {
        10 => "10s",
        60 => "60s",
        other => anyhow::bail!("no steady population due every {other}s"),
    })
}

fn ready_timeout(n: usize) -> Duration {
    Duration::from_secs(300 + n as u64)
}

/// Waits until the API server saw no per-resource request (anything but
/// lists and watches) for 2 s: a restarted operator may pass over every
/// resource first (kube-runtime reconciles all on start).
fn settle(h: &Harness, ns: &str) -> Result<()> {
    let mut before = Scrape::take(h.server)?;
    let what = format!("the operator on {ns} goes idle");
    poll(&what, Duration::from_secs(600), Duration::ZERO, || {
        std::thread::sleep(Duration::from_secs(2));
        let now = Scrape::take(h.server)?;
        let busy = now.since(&before).per_resource(operator_resource);
        before = now;
        anyhow::ensure!(busy == 0.0, "{busy} per-resource requests in 2 s");
        Ok(())
    })
}

/// The operator (none: the API server alone) left alone for `window`: its
/// CPU, the API server's, its memory at the end, what the API server served
/// meanwhile, and the watches opened since `baseline` (before it started).
pub fn idle(
    h: &Harness,
    op: Option<&Operator>,
    window: Duration,
    baseline: &Scrape,
) -> Result<Idle> {
    let cpu = || op.map_or(0.0, operator_cpu);
    let server = || {
        h.server
            .server_pids
            .iter()
            .filter_map(|p| pid_cpu_seconds(*p))
            .sum::<f64>()
    };
    let before = Scrape::take(h.server)?;
    let (c0, s0, t0) = (cpu(), server(), Instant::now());
    std::thread::sleep(window);
    let (c1, s1, wall) = (cpu(), server(), t0.elapsed().as_secs_f64());
    let after = Scrape::take(h.server)?;
    let mut served = after.since(&before);
    served.watches = after.since(baseline).watches;
    Ok(Idle {
        operator_cpu: (c1 - c0) / wall,
        server_cpu: (s1 - s0) / wall,
        rss: op.map(operator_rss).unwrap_or_default(),
        served,
        wall,
    })
}

pub fn run(live: &mut Live, options: &Options, report: &mut Report) -> Result<()> {
    let mut sizes = Sizes::new(options.quick, options.sizes.clone());
    sizes.reaction_runs = options.runs.unwrap_or(sizes.reaction_runs);
    sizes.block = options.block;
    let binary = crate::world::operator::build_profile(true)?;
    let mut contenders = select(
        options.contenders.as_deref(),
        &binary,
        options.peer,
        options.workers,
    )?;
    let work = TempDir::new("blue-bench-ops")?;
    let mut logs = work.path().to_path_buf();
    if let Some(level) = &options.log_level {
        logs = super::workspace_root().join(LOGS);
        std::fs::create_dir_all(&logs)?;
        let ours = contenders.iter_mut().filter(|c| c.family == Family::Ours);
        ours.for_each(|c| c.extra.extend(["--log-level".into(), level.clone()]));
    }
    let h = Harness::new(&live.rt, &live.server, &logs)?;
    let mut bench = Bench {
        h: &h,
        sizes,
        built: BTreeSet::new(),
    };
    // The API server's own cost, with no operator running.
    let quiet = Scrape::take(&live.server)?;
    let baseline = idle(&h, None, bench.sizes.idle_window, &quiet)?;
    let mut results: Vec<(Contender, Outcome)> = contenders
        .into_iter()
        .map(|who| (who, Outcome::default()))
        .collect();
    let progress = super::workspace_root().join("target/bench/operators.progress.txt");
    // The block is a scenario of its own: no bursts or steady windows.
    let reactions_only = options.reactions_only || options.block.is_some();
    let chosen = stages(&bench.sizes, reactions_only).into_iter();
    for stage in chosen.filter(|s| s.size() >= options.from) {
        for i in 0..results.len() {
            let who = results[i].0.clone();
            bench.stage(&who, stage, &mut results[i].1);
            if results[i + 1..].iter().all(|(c, _)| c.family != who.family) {
                bench.discard(&who, stage)?;
            }
        }
        // Written after every stage, so a run that dies late keeps what it
        // measured.
        let mut partial = Report::default();
        render(&results, &baseline, &bench.sizes, &mut partial);
        std::fs::create_dir_all(progress.parent().expect("a parent"))?;
        std::fs::write(&progress, super::report::terminal(&partial))?;
        eprintln!(
            "[bench] operators: after {stage:?}, see {}",
            progress.display()
        );
    }
    live.rt.block_on(h.client.shutdown());
    render(&results, &baseline, &bench.sizes, report);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_restart_joins_its_steady_window_and_reactions_only_keeps_the_sizes() {
        let sizes = Sizes::new(false, Some(vec![10, 1_000, 10_000]));
        let all = stages(&sizes, false);
        let rounds: Vec<_> = (0..BURST_ROUNDS)
            .map(|round| Stage::New { round })
            .collect();
        assert_eq!(
            all[..BURST_ROUNDS],
            rounds,
            "the bursts' rounds first, in order"
        );
        let sizes_in_order: Vec<usize> = all.iter().map(Stage::size).collect();
        assert!(sizes_in_order.is_sorted(), "{all:?}");
        let restarts: Vec<_> = all
            .iter()
            .filter(|s| {
                matches!(
                    s,
                    Stage::Steady {
                        restart: true,
                        window: true,
                        ..
                    }
                )
            })
            .collect();
        assert_eq!(restarts.len(), 1, "{all:?}");
        let reactions = sizes.latency.len() * sizes.reaction_runs;
        assert_eq!(all.len(), BURST_ROUNDS + sizes.steady.len() + reactions);
        let sizes = Sizes::new(false, Some(vec![10, 1_000]));
        assert_eq!(
            sizes.steady,
            [(1_000, 10), (1_000, 60)],
            "only sizes asked for"
        );
        assert_eq!(sizes.restart, None);
        let reactions = stages(&sizes, true);
        let at = |n, run| Stage::AtSize { n, run };
        assert_eq!(
            reactions,
            [
                at(10, 0),
                at(10, 1),
                at(10, 2),
                at(1_000, 0),
                at(1_000, 1),
                at(1_000, 2)
            ],
            "three runs at each size, each a stage of its own so contenders alternate"
        );
    }
}
