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
//! e2e uses. Writes its own block of BENCHMARKS.md.

use std::time::{Duration, Instant};

use crate::cluster::manifests::REQUEST_ANNOTATION;
use anyhow::{ensure, Context, Result};
use serde_json::json;

use super::machine::{loadavg, Machine};
use super::measure::median;
use super::report::{markdown_table, Block};
use crate::cluster::manifests::manifest;
use crate::cluster::Mode;
use crate::support::kube::LCM;
use crate::support::wait::poll;
use crate::world::election::{self, Timing, SHORT};
use crate::world::operator::Operator;
use crate::world::{Testbed, Transport, World};

const ROUNDS: usize = 5;
const DEFAULTS: Timing = Timing {
    lease_ms: 15_000,
    renew_ms: 10_000,
    retry_ms: 2_000,
};
const RESOURCE: &str = "failover-probe";

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
    let block = block(&machine, &rows, started.elapsed());
    println!("{}", block.body);
    let path = super::workspace_root().join("BENCHMARKS.md");
    super::write_blocks(&path, &[block])?;
    eprintln!("[bench] wrote the failover block of {}", path.display());
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
        w.kube.create(&manifest(
            RESOURCE,
            json!({"config": {"data": {"probe": "1"}}}),
        ))?;
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
            &json!({"metadata": {"annotations": {REQUEST_ANNOTATION: token}}}),
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
    let what = format!("request {token} acknowledged");
    poll(&what, timeout, Duration::from_millis(50), || {
        let r = w.kube.get(LCM, RESOURCE)?.context("the probe vanished")?;
        let handled = r["status"]["lastHandledRequest"].as_str().unwrap_or("");
        let wanted = r["metadata"]["annotations"][REQUEST_ANNOTATION]
            .as_str()
            .unwrap_or("");
        ensure!(
            handled == wanted
                && (token == "start" || handled == token)
                && r["status"]["phase"] == "Ready",
            "handled {handled:?}, phase {}",
            r["status"]["phase"]
        );
        Ok(())
    })
}

/// The `failover` block: when and where, then one row per timing.
fn block(m: &Machine, rows: &[Row], took: Duration) -> Block {
    let header = [
        "lease / renew deadline / retry",
        "takeover, median (min-max)",
        "bound: lease + retry",
        "failover to first reconcile",
        "graceful handover",
    ]
    .map(String::from);
    let span = |v: &[u128]| {
        let median = median(&v.iter().map(|x| *x as f64).collect::<Vec<_>>());
        let (min, max) = (v.iter().min(), v.iter().max());
        format!(
            "{median:.0} ms ({}-{})",
            min.unwrap_or(&0),
            max.unwrap_or(&0)
        )
    };
    let secs = |ms: u64| ms as f64 / 1000.0;
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let t = r.timing;
            vec![
                format!(
                    "{} s / {} s / {} s",
                    secs(t.lease_ms),
                    secs(t.renew_ms),
                    secs(t.retry_ms)
                ),
                span(&r.takeover_ms),
                format!("{} ms", t.lease_ms + t.retry_ms),
                span(&r.failover_ms),
                span(&r.handover_ms),
            ]
        })
        .collect();
    Block {
        key: "failover",
        title: "Failover".into(),
        body: format!(
            "{ROUNDS} rounds in {:.0} s; {}, commit {}, load {} at start, {} at end.\n\n{}",
            took.as_secs_f64(),
            m.date,
            m.commit,
            m.load_start,
            loadavg(),
            markdown_table(&header, &rows)
        ),
    }
}
