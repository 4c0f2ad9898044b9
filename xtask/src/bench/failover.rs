//! `cargo xtask bench --only failover`: how long a replica set of the
//! example operator goes without a leader. Two candidates against the local
//! control plane; five rounds each of
//! - failover: SIGKILL the leader (its whole process group), then time until
//!   the new leader acknowledges a reconcile request made right after the
//!   kill (its first reconcile);
//! - handover: SIGTERM the leader (it drains and releases the Lease), then
//!   time until the other candidate holds the Lease;
//!
//! with controller-runtime's default timing and with the short timing the
//! e2e uses. Writes its own section of BENCHMARKS.md (kept by full runs).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use serde_json::json;

use super::machine::{loadavg, Machine};
use super::measure::median;
use crate::cluster::Mode;
use crate::support::kube::LCM;
use crate::world::election::{self, Timing, SHORT};
use crate::world::operator::Operator;
use crate::world::{Testbed, Transport, World};

const ROUNDS: usize = 5;
const START: &str = "<!-- failover:start -->";
const END: &str = "<!-- failover:end -->";
const DEFAULTS: Timing = Timing {
    lease_ms: 15_000,
    renew_ms: 10_000,
    retry_ms: 2_000,
};
const RESOURCE: &str = "failover-probe";
const REQUEST: &str = "colors.getcolors.ai/reconcile-request";

/// `--only failover` (alone) selects this bench.
pub fn requested(args: &[String]) -> bool {
    args.windows(2)
        .any(|w| w[0] == "--only" && w[1] == "failover")
}

struct Row {
    timing: Timing,
    takeover_ms: Vec<u128>,
    failover_ms: Vec<u128>,
    handover_ms: Vec<u128>,
}

pub fn main() -> Result<()> {
    let machine = Machine::gather();
    let started = Instant::now();
    let testbed = Testbed::up("bench-ha", &Mode::Local, None)?;
    let mut world = testbed.world(Transport::Proxy);
    let rows = [DEFAULTS, SHORT]
        .into_iter()
        .map(|timing| measure(&mut world, timing))
        .collect::<Result<Vec<_>>>();
    drop(world);
    testbed.down()?;
    let rows = rows?;
    let section = render(&machine, &rows, started.elapsed());
    println!("{section}");
    let path = super::workspace_root().join("BENCHMARKS.md");
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    std::fs::write(&path, with_section(&old, &section))
        .with_context(|| format!("writing {}", path.display()))?;
    eprintln!("[bench] wrote the failover section of {}", path.display());
    Ok(())
}

fn measure(w: &mut World<'_>, timing: Timing) -> Result<Row> {
    eprintln!(
        "[bench] failover with lease {} ms, renew deadline {} ms, retry {} ms",
        timing.lease_ms, timing.renew_ms, timing.retry_ms
    );
    let mut n = 0;
    let mut spawn = |w: &World<'_>| -> Result<(String, Operator)> {
        n += 1;
        let id = format!("bench-{}-{n}", timing.lease_ms);
        let mut args = w.admin_args();
        args.extend(election::election_args(&id, timing));
        let op = w.spawn_operator(&args, &w.scratch(&format!("{id}.log")))?;
        Ok((id, op))
    };
    let deadline = Duration::from_millis(timing.lease_ms * 3);
    // The first candidate leads; the probe resource is Ready before rounds.
    let (first, mut leader) = spawn(w)?;
    election::wait_holder(&w.kube, &first, Instant::now(), deadline)?;
    if w.kube.get(LCM, RESOURCE)?.is_none() {
        w.kube.create(
            &json!({
                "apiVersion": "examples.blue.dev/v1alpha1",
                "kind": "LocalConfigMap",
                "metadata": {"name": RESOURCE},
                "spec": {"config": {"data": {"probe": "1"}}},
            })
            .to_string(),
        )?;
    }
    let (mut follower_id, mut follower) = spawn(w)?;
    acknowledged(w, "start", deadline)?;

    let mut row = Row {
        timing,
        takeover_ms: vec![],
        failover_ms: vec![],
        handover_ms: vec![],
    };
    for round in 0..ROUNDS {
        // Let the follower observe the leader's record at least once.
        std::thread::sleep(Duration::from_millis(timing.retry_ms * 2));
        let killed = Instant::now();
        leader.kill()?;
        let token = format!("failover-{}-{round}", timing.lease_ms);
        w.kube.merge_patch(
            LCM,
            RESOURCE,
            &json!({"metadata": {"annotations": {REQUEST: token}}}),
        )?;
        let takeover = election::wait_holder(&w.kube, &follower_id, killed, deadline)?;
        row.takeover_ms.push(takeover.as_millis());
        acknowledged(w, &token, deadline)?;
        row.failover_ms.push(killed.elapsed().as_millis());
        leader = follower;
        (follower_id, follower) = spawn(w)?;

        std::thread::sleep(Duration::from_millis(timing.retry_ms * 2));
        let stopping = Instant::now();
        ensure!(
            leader.stop()?.success(),
            "the leader failed its graceful stop"
        );
        let took = election::wait_holder(&w.kube, &follower_id, stopping, deadline)?;
        row.handover_ms.push(took.as_millis());
        leader = follower;
        (follower_id, follower) = spawn(w)?;
        eprintln!(
            "[bench]   round {}: takeover {} ms, failover {} ms, handover {} ms",
            round + 1,
            row.takeover_ms[round],
            row.failover_ms[round],
            row.handover_ms[round]
        );
    }
    leader.stop()?;
    follower.stop()?;
    Ok(row)
}

/// Waits until the probe's status acknowledges request `token`.
fn acknowledged(w: &World<'_>, token: &str, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let r = w.kube.get(LCM, RESOURCE)?.context("the probe vanished")?;
        let handled = r["status"]["lastHandledRequest"].as_str().unwrap_or("");
        let wanted = r["metadata"]["annotations"][REQUEST].as_str().unwrap_or("");
        if handled == wanted
            && (token == "start" || handled == token)
            && r["status"]["phase"] == "Ready"
        {
            return Ok(());
        }
        ensure!(
            Instant::now() < deadline,
            "request {token} not acknowledged within {timeout:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn render(m: &Machine, rows: &[Row], took: Duration) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{START}\n## Failover\n");
    let _ = writeln!(
        out,
        "`cargo xtask bench --only failover` ({:.0} s; {}, commit {}, load {} at start, {} at end). \
         Two replicas of the example operator (debug build, poll every 250 ms) against the local \
         API server. *Takeover*: SIGKILL of the leader's process group until the Lease names the other \
         replica. *Failover*: the same kill until the new leader has acknowledged a reconcile \
         request annotated right after the kill (its first reconcile). \
         *Handover*: SIGTERM of the leader (it drains, then releases the Lease) until the other \
         replica holds the Lease. Median (min-max) of {ROUNDS} rounds each.\n",
        took.as_secs_f64(),
        m.date,
        m.commit,
        m.load_start,
        loadavg()
    );
    let _ = writeln!(
        out,
        "| lease / renew deadline / retry | takeover, median (min-max) | bound: lease + retry | failover to first reconcile | graceful handover |\n|---|---|---|---|---|"
    );
    for r in rows {
        let span = |v: &[u128]| {
            format!(
                "{:.0} ms ({}-{})",
                median(&v.iter().map(|x| *x as f64).collect::<Vec<_>>()),
                v.iter().min().unwrap_or(&0),
                v.iter().max().unwrap_or(&0)
            )
        };
        let _ = writeln!(
            out,
            "| {} s / {} s / {} s | {} | {} ms | {} | {} |",
            r.timing.lease_ms as f64 / 1000.0,
            r.timing.renew_ms as f64 / 1000.0,
            r.timing.retry_ms as f64 / 1000.0,
            span(&r.takeover_ms),
            r.timing.lease_ms + r.timing.retry_ms,
            span(&r.failover_ms),
            span(&r.handover_ms),
        );
    }
    let _ = writeln!(
        out,
        "\n- a follower takes over when it has seen the record unchanged for a lease duration, \
         counted from when it first saw the leader's last renewal (at most one retry period after \
         that renewal, which preceded the kill): so the Lease changes hands within lease + retry \
         of the kill, plus kubectl latency (a Lease read and write per attempt, slower under \
         load); the first reconcile then adds up to one poll, a list and the reconcile's own \
         kubectl calls\n\
         - handover needs no expiry: the follower finds the Lease released at its next attempt \
         (at most one retry period), plus the time the stopping leader takes to drain and exit\n{END}"
    );
    out
}

/// `doc` with its failover section replaced by `section` (or appended).
pub fn with_section(doc: &str, section: &str) -> String {
    match (doc.find(START), doc.find(END)) {
        (Some(s), Some(e)) if e > s => {
            format!(
                "{}{}{}",
                &doc[..s],
                section.trim_end(),
                &doc[e + END.len()..]
            )
        }
        _ => format!("{}\n\n{}", doc.trim_end(), section),
    }
}

/// The failover section of `doc`, if any (a full bench run keeps it).
pub fn section_of(doc: &str) -> Option<&str> {
    let s = doc.find(START)?;
    let e = doc.find(END)?;
    (e > s).then(|| &doc[s..e + END.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_replaced_in_place_or_appended() {
        let section = format!("{START}\nnew\n{END}\n");
        let doc = format!("# B\n\n{START}\nold\n{END}\n\n## Next\n");
        let replaced = with_section(&doc, &section);
        assert_eq!(replaced, format!("# B\n\n{START}\nnew\n{END}\n\n## Next\n"));
        assert_eq!(section_of(&replaced), Some(section.trim_end()));
        assert!(with_section("# B\n", &section).ends_with(&section));
    }
}
