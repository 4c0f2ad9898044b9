//! Part `scale-out` (issue 23): the example operator as sharded replicas
//! (`--shards 32`, the library's default timing: 15 s lease, 10 s renew
//! deadline, 2.5 s rounds), 2 workers each, whose converge waits 200 ms
//! (sleeping, not CPU), on the local control plane, each stage in its own
//! namespace. "Settled": every shard Lease held by a running replica, each
//! holding its share (within one of even).
//! - throughput: 600 new resources to Ready beside 1, 2 and 3 settled
//!   replicas;
//! - idle cost: the Lease requests the API server counted in a window
//!   beside 3 replicas, without resources and with the 600;
//! - then rounds of: SIGKILL one of 3 (its process group), time until every
//!   shard Lease it held names a running replica, and until 30 resources
//!   edited right after the kill (about a third in its shards) are Ready;
//!   a replica started beside the 2, time until settled; SIGTERM one of 3
//!   while callbacks run (60 edits), time until its shards name the others;
//!   a replica started again.
//!
//! Writes its own block of BENCHMARKS.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use blue_kubernetes_client::{Client, Lease};
use local_configmap_operator::audit::{parse_audit, Phase};

use super::apimetrics::Scrape;
use super::harness::{Harness, Spec};
use super::live::Live;
use super::machine::{loadavg, Machine};
use super::measure::median;
use super::report::{markdown_table, Block};
use crate::support::temp_dir::TempDir;
use crate::support::wait::poll;
use crate::world::operator::Operator;

const SHARDS: usize = 32;
const RESOURCES: usize = 600;
const ROUNDS: usize = 3;
/// The example's default `--lease-name`, the prefix of every Lease.
const LEASE: &str = "local-configmap-operator";
const LEASE_MS: f64 = 15_000.0;
const CALLBACK_MS: u64 = 200;
const IDLE_WINDOW: Duration = Duration::from_secs(60);
const EVERY: Duration = Duration::from_millis(100);
const TIMEOUT: Duration = Duration::from_secs(300);

/// The replicas of one stage and their namespace (their Leases' too).
struct Stage<'a> {
    h: &'a Harness<'a>,
    binary: &'a Path,
    ns: String,
    audit: PathBuf,
    replicas: Vec<(String, Operator)>,
    started: usize,
}

impl<'a> Stage<'a> {
    /// A new namespace and `n` replicas on it, settled.
    fn new(h: &'a Harness<'a>, binary: &'a Path, n: usize) -> Result<Self> {
        let ns = format!("scale-out-{n}");
        h.populate_with(&ns, 0, Spec::IDLE)?;
        let audit = h.work.join(format!("{ns}.audit"));
        let mut stage = Self {
            h,
            binary,
            ns,
            audit,
            replicas: Vec::new(),
            started: 0,
        };
        for _ in 0..n {
            stage.start()?;
        }
        stage.wait_settled()?;
        Ok(stage)
    }

    fn start(&mut self) -> Result<()> {
        self.started += 1;
        let id = format!("{}-r{}", self.ns, self.started);
        let flags = format!(
            "--shards {SHARDS} --leader-identity {id} --workers 2 --callback-delay-ms {CALLBACK_MS} --audit-file {}",
            self.audit.display()
        );
        let flags: Vec<String> = flags.split_whitespace().map(String::from).collect();
        let op = self.h.launch(self.binary, &flags, &self.ns, &id)?;
        self.replicas.push((id, op));
        Ok(())
    }

    fn holders(&self) -> Result<BTreeMap<String, String>> {
        let leases = self.h.rt.block_on(self.h.client.list_leases(&self.ns))?;
        Ok(shard_holders(&leases))
    }

    fn live(&self) -> Vec<&str> {
        self.replicas.iter().map(|(id, _)| id.as_str()).collect()
    }

    /// Waits until the assignment is settled; returns how long that took.
    fn wait_settled(&self) -> Result<Duration> {
        let started = Instant::now();
        poll("the shards settled", TIMEOUT, EVERY, || {
            let holders = self.holders()?;
            ensure!(settled(&holders, &self.live()), "holders {holders:?}");
            Ok(started.elapsed())
        })
    }

    /// Takes the oldest replica out of the stage; returns it and the shard
    /// Leases it holds.
    fn leave(&mut self) -> Result<(Operator, Vec<String>)> {
        let held = self.holders()?;
        let (id, op) = self.replicas.remove(0);
        let shards = held.into_iter().filter(|(_, h)| *h == id).map(|(s, _)| s);
        Ok((op, shards.collect()))
    }

    /// Waits until each of `shards` names a replica still in the stage;
    /// returns the time since `since`.
    fn wait_held(&self, shards: &[String], since: Instant) -> Result<f64> {
        poll("the shards held elsewhere", TIMEOUT, EVERY, || {
            let holders = self.holders()?;
            let elsewhere = |s: &String| {
                holders
                    .get(s)
                    .is_some_and(|h| self.live().contains(&h.as_str()))
            };
            ensure!(shards.iter().all(elsewhere), "holders {holders:?}");
            Ok(since.elapsed().as_secs_f64())
        })
    }

    /// Waits until all resources are Ready for their generation; returns
    /// the time since `since`.
    fn wait_ready(&self, since: Instant) -> Result<f64> {
        poll("every resource Ready", TIMEOUT, EVERY, || {
            let ready = self.h.ready(&self.ns)?;
            ensure!(ready >= RESOURCES, "{ready} Ready");
            Ok(since.elapsed().as_secs_f64())
        })
    }

    /// The most converges one replica started, as the shared audit says.
    fn busiest(&self) -> Result<usize> {
        let text = std::fs::read_to_string(&self.audit).context("reading the audit")?;
        let mut per = BTreeMap::<String, usize>::new();
        for e in parse_audit(&text)? {
            if e.callback == "converge" && e.phase == Phase::Start {
                *per.entry(e.replica).or_default() += 1;
            }
        }
        Ok(per.into_values().max().unwrap_or(0))
    }
}

/// The holder of each shard Lease (`<LEASE>-shard-<i>`) by name; released
/// ones are left out.
fn shard_holders(leases: &[Lease]) -> BTreeMap<String, String> {
    let prefix = format!("{LEASE}-shard-");
    let held = leases.iter().filter(|l| l.name.starts_with(&prefix));
    held.filter_map(|l| Some((l.name.clone(), l.spec.holder()?.to_string())))
        .collect()
}

/// Every shard held by one of `live`, each holding its share.
fn settled(holders: &BTreeMap<String, String>, live: &[&str]) -> bool {
    let share = |id: &&str| holders.values().filter(|h| h == id).count();
    let even = SHARDS / live.len().max(1)..=SHARDS.div_ceil(live.len().max(1));
    holders.len() == SHARDS
        && holders.values().all(|h| live.contains(&h.as_str()))
        && live.iter().all(|id| even.contains(&share(id)))
}

/// Lease requests per second per replica over the idle window, beside 3.
fn idle(h: &Harness) -> Result<f64> {
    let before = Scrape::take(h.server)?;
    let started = Instant::now();
    ensure!(
        !crate::support::interrupt::sleep(IDLE_WINDOW),
        "interrupted"
    );
    let served = Scrape::take(h.server)?.since(&before);
    Ok(served.total(|r| r == "leases") / started.elapsed().as_secs_f64() / 3.0)
}

#[derive(Default)]
struct Figures {
    /// (seconds to Ready, busiest replica's converges) per replica count.
    throughput: Vec<(f64, usize)>,
    idle: [f64; 2],
    kill: Vec<f64>,
    dispatch: Vec<f64>,
    join: Vec<f64>,
    handover: Vec<f64>,
}

pub fn run(live: &Live, machine: &Machine) -> Result<Block> {
    let started = Instant::now();
    let binary = crate::world::operator::build_profile(true)?;
    let work = TempDir::new("blue-bench-scale")?;
    let h = Harness::new(&live.rt, &live.server, work.path())?;
    let mut f = Figures::default();
    let result = (1..=3).try_for_each(|n| stage(&h, &binary, n, &mut f));
    live.rt.block_on(h.client.shutdown());
    result?;
    Ok(block(machine, &f, started.elapsed()))
}

fn stage(h: &Harness, binary: &Path, n: usize, f: &mut Figures) -> Result<()> {
    let mut s = Stage::new(h, binary, n)?;
    eprintln!("[bench] scale-out: {n} replicas settled");
    if n == 3 {
        f.idle[0] = idle(h)?;
    }
    // The harness's own spacing of its lists, as they cost the API server.
    let t = Instant::now();
    h.create(&s.ns, 0..RESOURCES, Spec::IDLE)?;
    h.wait_ready(&s.ns, RESOURCES, TIMEOUT)?;
    let took = t.elapsed().as_secs_f64();
    f.throughput.push((took, s.busiest()?));
    eprintln!("[bench] scale-out: {RESOURCES} Ready in {took:.1}s beside {n}");
    if n == 3 {
        f.idle[1] = idle(h)?;
        for round in 0..ROUNDS {
            rounds(&mut s, round, f)?;
        }
    }
    let ns = s.ns.clone();
    drop(s);
    h.discard(&ns)
}

/// One round on 3 settled replicas: kill one, start one, stop one
/// gracefully, start one.
fn rounds(s: &mut Stage, round: usize, f: &mut Figures) -> Result<()> {
    let (mut victim, shards) = s.leave()?;
    let killed = Instant::now();
    victim.kill()?;
    s.h.edit(&s.ns, 0..30, &format!("kill-{round}"))?;
    f.kill.push(s.wait_held(&shards, killed)?);
    f.dispatch.push(s.wait_ready(killed)?);
    s.wait_settled()?;
    f.join.push(join(s)?);
    // Callbacks run in every replica when the SIGTERM arrives.
    s.h.edit(&s.ns, 30..90, &format!("term-{round}"))?;
    std::thread::sleep(Duration::from_millis(CALLBACK_MS * 2));
    let (mut leaving, shards) = s.leave()?;
    let stopping = Instant::now();
    let handover = std::thread::scope(|scope| {
        let stopped = scope.spawn(move || leaving.stop_cleanly("the stopped replica"));
        let handover = s.wait_held(&shards, stopping);
        stopped.join().expect("the stopping thread panicked")?;
        handover
    })?;
    f.handover.push(handover);
    s.wait_ready(Instant::now())?;
    f.join.push(join(s)?);
    eprintln!(
        "[bench] scale-out round {}: kill {:.1}s (dispatch {:.1}s), handover {:.1}s, joins {:?}",
        round + 1,
        f.kill[round],
        f.dispatch[round],
        f.handover[round],
        &f.join[round * 2..]
    );
    Ok(())
}

/// Starts a replica; returns the time until the shards settled again.
fn join(s: &mut Stage) -> Result<f64> {
    let joining = Instant::now();
    s.start()?;
    s.wait_settled()?;
    Ok(joining.elapsed().as_secs_f64())
}

/// `median (min-max)` in seconds, and whether the worst is within `bound`.
fn span(v: &[f64], bound: f64) -> (String, bool) {
    let (min, max) = v
        .iter()
        .fold((f64::MAX, 0.0_f64), |(a, b), x| (a.min(*x), b.max(*x)));
    let text = format!("{:.1} s ({min:.1}-{max:.1})", median(v));
    (text, max <= bound)
}

fn block(m: &Machine, f: &Figures, took: Duration) -> Block {
    let verdict = |met: Option<bool>| match met {
        Some(true) => "met",
        Some(false) => "**missed**",
        None => "-",
    };
    let mut rows = Vec::new();
    let mut row = |what: String, value: String, target: &str, met: Option<bool>| {
        rows.push(vec![what, value, target.to_string(), verdict(met).into()]);
    };
    let one = f.throughput.first().map_or(f64::NAN, |t| t.0);
    for (i, (secs, busiest)) in f.throughput.iter().enumerate() {
        let ratio = one / secs;
        let (target, bound) = [("-", 0.0), ("at least 1.8x", 1.8), ("at least 2.7x", 2.7)][i];
        row(
            format!("{RESOURCES} new to Ready beside {} replica(s)", i + 1),
            format!(
                "{secs:.1} s, {:.1}/s, {ratio:.2}x of 1 (busiest replica: {busiest} converges)",
                RESOURCES as f64 / secs
            ),
            target,
            (i > 0).then_some(ratio >= bound),
        );
    }
    let killed = (LEASE_MS + 5_000.0) / 1e3;
    let (text, met) = span(&f.kill, killed);
    row(
        "SIGKILL to its shards held elsewhere".into(),
        text,
        "lease + 5 s = 20 s",
        Some(met),
    );
    let (text, met) = span(&f.dispatch, killed);
    row(
        "SIGKILL to 30 edits (a third in its shards) Ready".into(),
        text,
        "lease + 5 s = 20 s",
        Some(met),
    );
    let (text, met) = span(&f.handover, 3.0 + CALLBACK_MS as f64 / 1e3);
    row(
        "SIGTERM (callbacks running) to its shards held elsewhere".into(),
        text,
        "3 s + 200 ms",
        Some(met),
    );
    row(
        "replica started beside 2 to settled".into(),
        span(&f.join, 0.0).0,
        "-",
        None,
    );
    for (i, with) in ["no resources", "600 resources"].iter().enumerate() {
        row(
            format!("idle Lease requests per replica, 3 replicas, {with}"),
            format!("{:.2}/s ({:.0}/min)", f.idle[i], f.idle[i] * 60.0),
            "at most 1/s",
            Some(f.idle[i] <= 1.0),
        );
    }
    let header = ["measure", "measured", "target", "verdict"].map(String::from);
    Block {
        key: "scale-out",
        title: "Scale-out across replicas".into(),
        body: format!(
            "{ROUNDS} kill/join/stop rounds, {:.0} s in all; {}, commit {}, load {} at start, {} at end.\n\n{}",
            took.as_secs_f64(),
            m.date,
            m.commit,
            m.load_start,
            loadavg(),
            markdown_table(&header, &rows)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blue_kubernetes_client::LeaseSpec;

    fn lease(name: &str, holder: Option<&str>) -> Lease {
        let spec = LeaseSpec {
            holder_identity: holder.map(String::from),
            ..LeaseSpec::default()
        };
        Lease::new("ns", name, spec)
    }

    fn shards(owner: impl Fn(usize) -> Option<&'static str>) -> Vec<Lease> {
        let mut leases: Vec<Lease> = (0..SHARDS)
            .map(|i| lease(&format!("{LEASE}-shard-{i}"), owner(i)))
            .collect();
        leases.push(lease(&format!("{LEASE}-member-0"), Some("a")));
        leases
    }

    #[test]
    fn settled_needs_every_shard_held_by_a_live_replica_with_its_share() {
        let even = shard_holders(&shards(|i| Some(["a", "b", "c"][i % 3])));
        assert_eq!(even.len(), SHARDS, "membership Leases are no shards");
        assert!(settled(&even, &["a", "b", "c"]));
        assert!(!settled(&even, &["a", "b"]), "c is gone");
        let lopsided = shard_holders(&shards(|i| Some(if i < 20 { "a" } else { "b" })));
        assert!(!settled(&lopsided, &["a", "b"]));
        let released = shard_holders(&shards(|i| (i > 0).then_some("a")));
        assert!(!settled(&released, &["a"]));
        assert!(settled(&shard_holders(&shards(|_| Some("a"))), &["a"]));
    }
}
