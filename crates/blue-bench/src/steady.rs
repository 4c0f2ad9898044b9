//! The cost of a healthy fleet (part of `operators`): a steady window, and
//! a restart of the same population. The peer's periodic checks are
//! counted as its ConfigMap GETs (one per check), from the API server's own
//! counters; ours read the ConfigMap from their cache, so their checks are
//! counted from their `/metrics` (passes that ended well).

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::api_server::ApiServer;
use crate::apimetrics::{operator_resource, Scrape, Served};
use crate::contender::operator_cpu;
use crate::measure::pid_cpu_seconds;
use blue_testbed::world::operator::Operator;

#[derive(Clone, Debug, Default)]
pub struct Steady {
    pub n: usize,
    /// Every resource's `reconcileInterval`, seconds.
    pub interval: u64,
    /// Cores: the operator and its children (our `kubectl proxy`).
    pub operator_cpu: f64,
    pub apiserver_cpu: f64,
    /// The API server's CPU with the same population and no operator
    /// running, measured just before.
    pub apiserver_idle_cpu: f64,
    pub etcd_cpu: f64,
    pub served: Served,
    pub wall: f64,
    /// Checks the operator counted itself, when it counts them.
    pub checks: Option<f64>,
}

const WRITES: [&str; 4] = ["POST", "PUT", "PATCH", "DELETE"];

impl Steady {
    fn checks(&self) -> f64 {
        (self.checks).unwrap_or_else(|| self.served.count("GET", "configmaps"))
    }

    pub fn checks_per_second(&self) -> f64 {
        self.checks() / self.wall.max(1e-9)
    }

    pub fn requests_per_second(&self) -> f64 {
        self.served.total(operator_resource) / self.wall.max(1e-9)
    }

    pub fn writes_per_second(&self) -> f64 {
        writes(&self.served) / self.wall.max(1e-9)
    }

    pub fn status_writes_per_second(&self) -> f64 {
        let status = ["PUT", "PATCH"].map(|v| self.served.count(v, "localconfigmaps/status"));
        status.iter().sum::<f64>() / self.wall.max(1e-9)
    }

    /// Requests per periodic check; NaN when nothing was checked.
    pub fn requests_per_check(&self) -> f64 {
        let checks = self.checks();
        if checks == 0.0 {
            f64::NAN
        } else {
            self.served.total(operator_resource) / checks
        }
    }
}

/// Writes (by [`WRITES`] verbs) on the operator's resources.
pub fn writes(served: &Served) -> f64 {
    let verbs = served.by_verb(operator_resource);
    // A fold from +0.0: an empty float `sum()` is -0.0, shown as "-0.0".
    WRITES
        .iter()
        .filter_map(|v| verbs.get(*v))
        .fold(0.0, |a, n| a + n)
}

/// CPU seconds so far: kube-apiserver and etcd apart.
fn server_cpu(server: &ApiServer) -> (f64, f64) {
    let mut out = (0.0, 0.0);
    for &pid in &server.server_pids {
        let cpu = pid_cpu_seconds(pid).unwrap_or(0.0);
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() == "etcd" {
            out.1 += cpu;
        } else {
            out.0 += cpu;
        }
    }
    out
}

/// The API server's CPU (cores) over `window` with nothing driving it.
pub fn server_idle(server: &ApiServer, window: Duration) -> f64 {
    let (a0, t0) = (server_cpu(server).0, Instant::now());
    std::thread::sleep(window);
    (server_cpu(server).0 - a0) / t0.elapsed().as_secs_f64()
}

/// `op` left to check `n` resources due every `interval` s, for `window`.
pub fn window(
    server: &ApiServer,
    (op, checks): (&Operator, &dyn Fn() -> Option<f64>),
    (n, interval): (usize, u64),
    window: Duration,
) -> Result<Steady> {
    let before = Scrape::take(server)?;
    let cpu = || (operator_cpu(op), server_cpu(server));
    let ((c0, (a0, e0)), k0, t0) = (cpu(), checks(), Instant::now());
    std::thread::sleep(window);
    let ((c1, (a1, e1)), k1, wall) = (cpu(), checks(), t0.elapsed().as_secs_f64());
    let served = Scrape::take(server)?.since(&before);
    // The breakdown behind the totals, for the log: which resource each
    // verb's requests went to.
    let mine: Vec<_> = (served.requests.iter())
        .filter(|((_, resource), _)| operator_resource(resource.split('/').next().unwrap_or("")))
        .collect();
    eprintln!("[bench] steady {n} every {interval}s: {mine:?}");
    Ok(Steady {
        n,
        interval,
        operator_cpu: (c1 - c0) / wall,
        apiserver_cpu: (a1 - a0) / wall,
        apiserver_idle_cpu: 0.0,
        etcd_cpu: (e1 - e0) / wall,
        served,
        wall,
        checks: k0.zip(k1).map(|(k0, k1)| k1 - k0),
    })
}

/// A restart on `n` Ready resources due every `interval` s.
#[derive(Clone, Debug, Default)]
pub struct Restart {
    pub n: usize,
    pub interval: u64,
    /// Seconds from the start until `n` checks were made; `None` when not
    /// within the timeout.
    pub all_checked: Option<f64>,
    /// Seconds from the start until 10%, 50% and 90% of `n` checks.
    pub quantiles: [Option<f64>; 3],
    /// Peaks per second: checks, requests (operator resources), and
    /// requests in flight at the API server (sampled each second).
    pub peak_checks: f64,
    pub peak_requests: f64,
    pub peak_in_flight: f64,
    /// Until every resource was checked.
    pub requests_per_second: f64,
}

/// Samples the API server once a second from `started` (the operator's
/// start; `first` was scraped just before it) until `n` checks were
/// counted or `timeout` passed.
pub fn restart(
    server: &ApiServer,
    (first, started, checks): (Scrape, Instant, &dyn Fn() -> Option<f64>),
    (n, interval): (usize, u64),
    timeout: Duration,
) -> Result<Restart> {
    let mut out = Restart {
        n,
        interval,
        ..Restart::default()
    };
    let mut last = first.clone();
    let marks = [0.1, 0.5, 0.9].map(|q| q * n as f64);
    let mut checked_before = 0.0;
    while started.elapsed() < timeout {
        std::thread::sleep(Duration::from_secs(1));
        let now = Scrape::take(server)?;
        let step = now.since(&last);
        let total = now.since(&first);
        let at = started.elapsed().as_secs_f64();
        let checked = checks().unwrap_or_else(|| total.count("GET", "configmaps"));
        out.peak_checks = out.peak_checks.max(checked - checked_before);
        checked_before = checked;
        out.peak_requests = out.peak_requests.max(step.total(operator_resource));
        out.peak_in_flight = out.peak_in_flight.max(now.in_flight());
        for (mark, quantile) in marks.iter().zip(out.quantiles.iter_mut()) {
            if quantile.is_none() && checked >= *mark {
                *quantile = Some(at);
            }
        }
        if checked >= n as f64 {
            out.all_checked = Some(at);
            out.requests_per_second = total.total(operator_resource) / at;
            break;
        }
        last = now;
    }
    Ok(out)
}
