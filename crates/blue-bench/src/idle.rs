//! An operator left alone: waiting until it goes idle, and what idling
//! costs (its CPU, the API server's, its memory, what was served).

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::apimetrics::{operator_resource, Scrape};
use crate::contender::{operator_cpu, operator_rss};
use crate::harness::Harness;
use crate::measure::pid_cpu_seconds;
use crate::outcome::Idle;
use blue_testbed::support::wait::poll;
use blue_testbed::world::operator::Operator;

/// Waits until the API server saw no per-resource request (anything but
/// lists and watches) for 2 s: a restarted operator may pass over every
/// resource first (kube-runtime reconciles all on start).
pub fn settle(h: &Harness, ns: &str) -> Result<()> {
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
