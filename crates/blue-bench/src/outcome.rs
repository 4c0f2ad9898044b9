//! What the `operators` part measures, as data: the sizes of a run (from
//! `--quick` and `--sizes`) and each contender's outcome (bursts, steady
//! windows, restart, reactions and idle cost per size), which the report
//! renders.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::apimetrics::Served;
use crate::args::pick;
use crate::contender::Rss;
use crate::harness::{Deletions, Reaction};
use crate::measure::median;
use crate::steady::{Restart, Steady};

/// How much of everything a run measures.
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
    /// Each run is the reactions block (see [`block`](crate::block)) after
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
