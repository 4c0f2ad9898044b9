//! Part `scale-out` (issue 23): sharded replicas of the example operator,
//! their throughput, handovers and idle Lease cost (what each figure
//! means: xtask/README.md and BENCHMARKS.md). Writes its own block.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use blue_kubernetes_client::Client;
use local_configmap_operator::test_hooks::audit::{parse_audit, Phase};

use crate::apimetrics::Scrape;
use crate::election::shard_holders;
use crate::harness::Harness;
use crate::live::Live;
use crate::machine::Machine;
use crate::measure::{median, pid_cpu_seconds, tree_cpu_seconds, CpuSnapshot};
use crate::report::Block;
use crate::resource::Spec;
use blue_testbed::support::wait::poll;
use blue_testbed::support::{interrupt, temp_dir::TempDir};
use blue_testbed::world::operator::Operator;

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
    /// Numbers replicas and edit rounds (each sets a new value).
    serial: usize,
}

impl<'a> Stage<'a> {
    /// A new namespace and `n` replicas on it, settled.
    fn new(h: &'a Harness<'a>, binary: &'a Path, n: usize) -> Result<Self> {
        let ns = format!("scale-out-{n}");
        h.populate_with(&ns, 0, Spec::IDLE)?;
        let audit = h.work.join(format!("{ns}.audit"));
        let (replicas, serial) = (Vec::new(), 0);
        let mut stage = Self {
            h,
            binary,
            ns,
            audit,
            replicas,
            serial,
        };
        for _ in 0..n {
            stage.start()?;
        }
        stage.wait_settled()?;
        Ok(stage)
    }

    fn start(&mut self) -> Result<()> {
        self.serial += 1;
        let id = format!("{}-r{}", self.ns, self.serial);
        let flags = format!(
            "--shards {SHARDS} --leader-identity {id} --workers 2 \
             --test-hooks callback-delay={CALLBACK_MS}ms,audit-file={}",
            self.audit.display()
        );
        let flags: Vec<String> = flags.split_whitespace().map(String::from).collect();
        let op = self.h.launch(self.binary, &flags, &self.ns, &id)?;
        self.replicas.push((id, op));
        Ok(())
    }

    fn holders(&self) -> Result<BTreeMap<String, String>> {
        let leases = self.h.rt.block_on(self.h.client.list_leases(&self.ns))?;
        Ok(shard_holders(&leases, LEASE))
    }

    /// Polls every [`EVERY`] until `done`; returns the seconds since `t`.
    fn wait(
        &self,
        what: &str,
        t: Instant,
        mut done: impl FnMut(&Self) -> Result<bool>,
    ) -> Result<f64> {
        poll(what, TIMEOUT, EVERY, || {
            ensure!(done(self)?, "not yet");
            Ok(t.elapsed().as_secs_f64())
        })
    }

    fn wait_settled(&self) -> Result<f64> {
        self.wait("the shards settled", Instant::now(), |s| {
            let live: Vec<&str> = s.replicas.iter().map(|(id, _)| id.as_str()).collect();
            Ok(settled(&s.holders()?, &live))
        })
    }

    /// Until each of `shards` names a replica still in the stage.
    fn wait_held(&self, shards: &[String], since: Instant) -> Result<f64> {
        self.wait("the shards held elsewhere", since, |s| {
            let holders = s.holders()?;
            let live = |h: &String| s.replicas.iter().any(|(id, _)| id == h);
            Ok(shards.iter().all(|i| holders.get(i).is_some_and(live)))
        })
    }

    fn wait_ready(&self, since: Instant) -> Result<f64> {
        self.wait("every resource Ready", since, |s| {
            Ok(s.h.ready(&s.ns)? >= RESOURCES)
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

    /// CPU seconds so far of the replicas' process trees (each with its
    /// `kubectl proxy`) and of the API server and etcd.
    fn cpu(&self) -> [f64; 2] {
        let pids = self.replicas.iter().filter_map(|(_, op)| op.pid());
        let server = self.h.server.server_pids.iter();
        [
            pids.map(tree_cpu_seconds).sum(),
            server.filter_map(|p| pid_cpu_seconds(*p)).sum(),
        ]
    }

    /// The busiest replica by the shared audit: its converges, and its
    /// milliseconds per converge per worker (first start to last end).
    fn busiest(&self) -> Result<(usize, f64)> {
        let text = std::fs::read_to_string(&self.audit).context("reading the audit")?;
        let mut per = BTreeMap::<String, (usize, u128, u128)>::new();
        for e in parse_audit(&text)?
            .into_iter()
            .filter(|e| e.callback == "converge")
        {
            let (n, first, last) = per.entry(e.replica).or_insert((0, u128::MAX, 0));
            *n += usize::from(e.phase == Phase::Start);
            (*first, *last) = ((*first).min(e.unix_nanos), (*last).max(e.unix_nanos));
        }
        let (n, first, last) = per.into_values().max().context("no converge audited")?;
        Ok((n, (last - first) as f64 / 1e6 * 2.0 / n as f64))
    }
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
    ensure!(!interrupt::sleep(IDLE_WINDOW), "interrupted");
    let served = Scrape::take(h.server)?.since(&before);
    Ok(served.total(|r| r == "leases") / started.elapsed().as_secs_f64() / 3.0)
}

#[derive(Default)]
struct Figures {
    /// Per replica count: seconds to Ready, the busiest replica's
    /// converges and its time per converge per worker, and the CPU used
    /// meanwhile: replicas, API server and etcd, whole machine (cores).
    throughput: Vec<(f64, usize, f64, [f64; 3])>,
    idle: [f64; 2],
    kill: Vec<f64>,
    dispatch: Vec<f64>,
    handover: Vec<f64>,
    /// Beside live or released slots only, and after a kill: until
    /// settled, and the longest a shard Lease stayed released meanwhile.
    join: [Vec<(f64, f64)>; 2],
}

pub fn run(live: &Live, machine: &Machine) -> Result<Block> {
    let started = Instant::now();
    let binary = blue_testbed::world::operator::build_profile(true)?;
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
    if n == 3 {
        f.idle[0] = idle(h)?;
    }
    let (cpu, ours) = (CpuSnapshot::take(), s.cpu());
    h.create(&s.ns, 0..RESOURCES, Spec::IDLE)?;
    // The harness spaces its lists out, as each costs the API server.
    h.wait_ready(&s.ns, RESOURCES, TIMEOUT)?;
    let (used, now) = (cpu.since(), s.cpu());
    let cpu = [now[0] - ours[0], now[1] - ours[1], used.busy].map(|c| c / used.wall);
    let (busiest, per_converge) = s.busiest()?;
    f.throughput.push((used.wall, busiest, per_converge, cpu));
    eprintln!("[bench] scale-out: {RESOURCES} Ready in {:.1}s", used.wall);
    if n == 3 {
        f.idle[1] = idle(h)?;
        // Stopped ones release their slot; a killed one's stays behind.
        for _ in 0..ROUNDS {
            f.handover.push(graceful(&mut s)?);
            f.join[0].push(join(&mut s)?);
        }
        for _ in 0..ROUNDS {
            let (held, ready) = kill(&mut s)?;
            f.kill.push(held);
            f.dispatch.push(ready);
            f.join[1].push(join(&mut s)?);
        }
    }
    let ns = s.ns.clone();
    drop(s);
    h.discard(&ns)
}

/// SIGTERM to the oldest replica while callbacks run everywhere (90
/// edits); the time until its shards are held by the others.
fn graceful(s: &mut Stage) -> Result<f64> {
    s.serial += 1;
    s.h.edit(&s.ns, 0..90, &format!("edit-{}", s.serial))?;
    std::thread::sleep(Duration::from_millis(CALLBACK_MS * 2));
    let (mut leaving, shards) = s.leave()?;
    let stopping = Instant::now();
    let handover = std::thread::scope(|scope| {
        let stopped = scope.spawn(move || leaving.stop_cleanly("the stopped replica"));
        let handover = s.wait_held(&shards, stopping);
        stopped.join().expect("the stopping thread panicked")?;
        handover
    })?;
    s.wait_ready(Instant::now())?;
    eprintln!("[bench] scale-out: SIGTERM, shards held elsewhere in {handover:.1}s");
    Ok(handover)
}

/// SIGKILL to the oldest replica's process group, then 30 edits (about a
/// third in its shards); the time until its shards are held by others,
/// and until the edits are Ready.
fn kill(s: &mut Stage) -> Result<(f64, f64)> {
    let (mut victim, shards) = s.leave()?;
    let killed = Instant::now();
    victim.kill()?;
    s.serial += 1;
    s.h.edit(&s.ns, 0..30, &format!("edit-{}", s.serial))?;
    let held = s.wait_held(&shards, killed)?;
    let ready = s.wait_ready(killed)?;
    s.wait_settled()?;
    eprintln!("[bench] scale-out: SIGKILL, shards held elsewhere in {held:.1}s, edits Ready in {ready:.1}s");
    Ok((held, ready))
}

/// Starts a replica; returns the time until the shards settled again.
/// and the longest any shard Lease stayed released (dispatched nowhere).
fn join(s: &mut Stage) -> Result<(f64, f64)> {
    let joining = Instant::now();
    s.start()?;
    let (mut since, mut longest) = (BTreeMap::<String, Instant>::new(), 0.0_f64);
    let took = s.wait("the shards settled", joining, |s| {
        let holders = s.holders()?;
        for shard in (0..SHARDS).map(|i| format!("{LEASE}-shard-{i}")) {
            if !holders.contains_key(&shard) {
                since.entry(shard).or_insert_with(Instant::now);
            } else if let Some(t) = since.remove(&shard) {
                longest = longest.max(t.elapsed().as_secs_f64());
            }
        }
        let live: Vec<&str> = s.replicas.iter().map(|(id, _)| id.as_str()).collect();
        Ok(settled(&holders, &live))
    })?;
    eprintln!("[bench] scale-out: joined, settled in {took:.1}s, a shard released for up to {longest:.1}s");
    Ok((took, longest))
}

/// `median (min-max)` in seconds, and whether the worst is within `bound`.
fn span(v: &[f64], bound: f64) -> (String, Option<bool>) {
    let max = v.iter().copied().fold(0.0, f64::max);
    let min = v.iter().copied().fold(max, f64::min);
    let text = format!("{:.1} s ({min:.1}-{max:.1})", median(v));
    (text, Some(max <= bound))
}

fn block(m: &Machine, f: &Figures, took: Duration) -> Block {
    let mut rows = Vec::new();
    let mut row = |what: &str, (value, met): (String, Option<bool>), target| {
        rows.push((what.to_string(), value, target, met));
    };
    let one = f.throughput.first().map_or(f64::NAN, |t| t.0);
    for (i, (secs, busiest, per, cpu)) in f.throughput.iter().enumerate() {
        let ratio = one / secs;
        let value = format!(
            "{secs:.1} s, {:.1}/s, {ratio:.2}x; busiest replica {busiest} converges, {per:.0} ms each per worker; CPU (cores): replicas {:.2}, API server + etcd {:.2}, machine {:.2}",
            RESOURCES as f64 / secs, cpu[0], cpu[1], cpu[2]
        );
        let (target, bound) = [("-", 0.0), ("at least 1.8x", 1.8), ("at least 2.7x", 2.7)][i];
        let what = format!("{RESOURCES} new to Ready beside {} replica(s)", i + 1);
        row(&what, (value, (i > 0).then_some(ratio >= bound)), target);
    }
    let (killed, lease_plus_5) = (LEASE_MS / 1e3 + 5.0, "lease + 5 s = 20 s");
    let what = "SIGKILL to its shards held elsewhere";
    row(what, span(&f.kill, killed), lease_plus_5);
    let what = "SIGKILL to 30 edits (a third in its shards) Ready";
    row(what, span(&f.dispatch, killed), lease_plus_5);
    let bound = 3.0 + CALLBACK_MS as f64 / 1e3;
    let what = "SIGTERM (callbacks running) to its shards held elsewhere";
    row(what, span(&f.handover, bound), "3 s + 200 ms");
    // Joins beside 2 (k = 0) and after a kill (1): until settled (j = 0)
    // and the longest release (1).
    let joins = |k: usize, j: usize| {
        let v: Vec<f64> = f.join[k].iter().map(|x| [x.0, x.1][j]).collect();
        (span(&v, 0.0).0, None)
    };
    row("replica started beside 2 to settled", joins(0, 0), "-");
    let what = "the same after a kill (the killed one's slot still names it)";
    row(what, joins(1, 0), "-");
    let what = "meanwhile, the longest a shard Lease stayed released: beside 2";
    row(what, joins(0, 1), "-");
    row("the same after a kill", joins(1, 1), "-");
    for (i, with) in ["no resources", "600 resources"].iter().enumerate() {
        let value = format!("{:.2}/s ({:.0}/min)", f.idle[i], f.idle[i] * 60.0);
        let what = format!("idle Lease requests per replica, 3 replicas, {with}");
        row(&what, (value, Some(f.idle[i] <= 1.0)), "at most 1/s");
    }
    m.part_block(("scale-out", "Scale-out across replicas"), took, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use blue_kubernetes_client::{Lease, LeaseSpec};

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
        let even = shard_holders(&shards(|i| Some(["a", "b", "c"][i % 3])), LEASE);
        assert_eq!(even.len(), SHARDS, "membership Leases are no shards");
        assert!(settled(&even, &["a", "b", "c"]));
        assert!(!settled(&even, &["a", "b"]), "c is gone");
        let lopsided = shard_holders(&shards(|i| Some(if i < 20 { "a" } else { "b" })), LEASE);
        assert!(!settled(&lopsided, &["a", "b"]));
        let released = shard_holders(&shards(|i| (i > 0).then_some("a")), LEASE);
        assert!(!settled(&released, &["a"]));
        let alone = shard_holders(&shards(|_| Some("a")), LEASE);
        assert!(settled(&alone, &["a"]));
    }
}
