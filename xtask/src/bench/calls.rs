//! Part `calls`: kubectl invocations per idle poll cycle and per periodic
//! check, counted through the runner against the real API server.

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};

use super::api_server::wait_polls;
use super::live::{checked_count, Live};
use super::measure::{secs, thousands};
use super::meter::Counts;
use super::report::{Report, Section};
use super::timed;
use crate::support::wait::until;

/// Past the checked resources' 1 s interval (not the others' 1 h): each is due once.
const ADVANCE_MS: u64 = 2_000;

struct Row {
    n: usize,
    /// Resources due in the periodic check.
    checked: usize,
    cycles: u64,
    idle: Counts,
    check: Counts,
    check_polls: u64,
    check_wall: f64,
}

fn measure(live: &mut Live, n: usize, idle_cycles: u64) -> Result<Row> {
    let checked = checked_count(n);
    let row = live.on_population(n, |live, ns, runtime| {
        let poll_timeout = Duration::from_secs(120);
        // Counts are taken right after a cycle completes: cycles are then
        // whole, since the next list is a kubectl process that has not
        // finished yet.
        let p0 = wait_polls(runtime, 1, poll_timeout)?;
        let before = live.meter.counts();
        let p1 = wait_polls(runtime, idle_cycles, poll_timeout)?;
        let idle = live.meter.counts().minus(&before);

        let before = live.meter.counts();
        let started = Instant::now();
        live.clock(ns).advance(ADVANCE_MS);
        until(
            &format!("the periodic check of {checked} of {n} resources"),
            Duration::from_secs(120 + checked as u64),
            Duration::from_millis(10),
            || live.meter.counts().minus(&before).status >= checked as u64,
        )?;
        let check_wall = started.elapsed().as_secs_f64();
        live.settle(runtime)?;
        let check = live.meter.counts().minus(&before);
        let p2 = runtime.stats().polls;
        Ok(Row {
            n,
            checked,
            cycles: p1 - p0,
            idle,
            check,
            check_polls: p2 - p1,
            check_wall,
        })
    })?;
    ensure!(
        row.idle.failed == 0 && row.check.failed == 0,
        "kubectl calls failed: {:?}",
        row.check
    );
    Ok(row)
}

pub fn run(live: &mut Live, quick: bool, report: &mut Report) -> Result<()> {
    let sizes: &[usize] = if quick { &[10, 30] } else { &[10, 100, 1_000] };
    let idle_cycles = if quick { 3 } else { 5 };
    let mut rows = Vec::new();
    for &n in sizes {
        let what = format!("calls: {n} resources");
        rows.push(timed(&what, || measure(live, n, idle_cycles))?);
    }

    let mut s = Section::new(
        "calls",
        "kubectl calls per poll cycle and per periodic check",
        "resources | idle: calls / cycle | idle: counted | \
         check: calls / resource | check: counted | check: wall",
    );
    s.order = 10;
    let mut idle_ok = true;
    let mut check_ok = true;
    let mut idle_values = Vec::new();
    let mut check_values = Vec::new();
    let mut stale = Vec::new();
    for r in &rows {
        let per_cycle = r.idle.total() as f64 / r.cycles as f64;
        let per_resource = r.check.per_resource_calls() as f64 / r.checked as f64;
        idle_ok &= r.idle.total() == r.cycles && r.idle.list == r.cycles;
        check_ok &= r.check.per_resource_calls() == 2 * r.checked as u64;
        idle_values.push(format!("{per_cycle:.2} at {}", r.n));
        check_values.push(format!("{per_resource:.3} at {}", r.n));
        s.row(vec![
            thousands(r.n as f64),
            format!("{per_cycle:.2}"),
            format!("{} cycles: {}", r.cycles, r.idle.breakdown()),
            format!("{per_resource:.3}"),
            format!(
                "{} due, {} polls: {}",
                r.checked,
                r.check_polls,
                r.check.breakdown()
            ),
            secs(r.check_wall),
        ]);
        if r.check.get > r.checked as u64 {
            stale.push(format!("{} at {}", r.check.get - r.checked as u64, r.n));
        }
    }
    if !stale.is_empty() {
        s.note(format!("extra GETs in the check: {}", stale.join(", ")));
    }
    for (n, how) in &live.origins {
        if sizes.contains(n) {
            s.note(format!("the {} resources: {how}", thousands(*n as f64)));
        }
    }
    report.sections.push(s);
    report.verdict(
        "idle poll cycle = 1 kubectl call (one package type), independent of N",
        idle_values.join("; "),
        idle_ok,
    );
    report.verdict(
        "periodic check of matching infrastructure = 2 calls per resource",
        check_values.join("; "),
        check_ok,
    );
    Ok(())
}
