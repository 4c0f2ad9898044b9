//! Part `operators`: the example operator end to end, as a separate
//! process in each of its modes, and optionally a peer operator taking the
//! same flags, on the same API server, through one measuring path.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::apimetrics::Scrape;
use crate::contender::{operator_cpu, select, Contender, Family};
use crate::harness::{Deletions, Harness};
use crate::idle::{idle, settle};
use crate::live::Live;
use crate::operators_report::render;
use crate::outcome::{AtSize, Burst, Outcome, Reactions, Sizes};
use crate::progress::timed;
use crate::random::XorShift;
use crate::report::{terminal, Report};
use crate::resource::{name, Spec};
use crate::stage::{stages, Stage};
use crate::steady::{self, writes, Restart, Steady};
use crate::workspace::workspace_root;
use blue_testbed::support::temp_dir::TempDir;
use blue_testbed::world::operator::Operator;

/// What `cargo xtask bench` asked of this part (its flags: `args::Args`).
pub struct Options<'a> {
    pub quick: bool,
    pub sizes: Option<Vec<usize>>,
    pub reactions_only: bool,
    pub runs: Option<usize>,
    pub from: usize,
    /// The reactions block (see [`block`](crate::block)) instead of the
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
                return crate::block::run(h, &ns, who.label, run, &mut rng);
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

pub fn run(live: &mut Live, options: &Options, report: &mut Report) -> Result<()> {
    let mut sizes = Sizes::new(options.quick, options.sizes.clone());
    sizes.reaction_runs = options.runs.unwrap_or(sizes.reaction_runs);
    sizes.block = options.block;
    let binary = blue_testbed::world::operator::build_profile(true)?;
    let mut contenders = select(
        options.contenders.as_deref(),
        &binary,
        options.peer,
        options.workers,
    )?;
    let work = TempDir::new("blue-bench-ops")?;
    let mut logs = work.path().to_path_buf();
    if let Some(level) = &options.log_level {
        logs = workspace_root().join(LOGS);
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
    let progress = workspace_root().join("target/bench/operators.progress.txt");
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
        std::fs::write(&progress, terminal(&partial))?;
        eprintln!(
            "[bench] operators: after {stage:?}, see {}",
            progress.display()
        );
    }
    live.rt.block_on(h.client.shutdown());
    render(&results, &baseline, &bench.sizes, report);
    Ok(())
}
