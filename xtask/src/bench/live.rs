//! State shared by the real-API-server parts: the control plane, the
//! counting runner, the controller's client, the controllers' clocks and
//! the populations of Ready resources already built.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::cluster::manifests::FINALIZER;
use anyhow::Result;
use blue_identity::state_identity_hash;
use blue_kubernetes_client::Client;
use blue_testkit::FakeClock;
use serde_json::json;

use super::api_server::{start_controller, wait_polls, ApiServer};
use super::meter::Meter;
use super::package;
use crate::support::wait::until;

/// How long to wait for a population to become Ready (kubectl-bound:
/// roughly 3 calls per new resource).
fn ready_timeout(n: usize) -> Duration {
    Duration::from_secs(120 + n as u64)
}

/// How many resources of a population of `n` take part in the periodic
/// check measurement: all up to 100, else a tenth. The calls per checked
/// resource do not depend on how many are checked at once, while checking
/// all of 1,000 would cost 2,000 kubectl calls (minutes of the time budget).
pub fn checked_count(n: usize) -> usize {
    if n <= 100 {
        n
    } else {
        n / 10
    }
}

pub struct Live {
    pub rt: tokio::runtime::Runtime,
    pub server: ApiServer,
    pub meter: Meter,
    pub client: Arc<dyn Client>,
    /// The controllers' clock per namespace. It only moves when a
    /// measurement moves it, so Ready resources stay idle (not due) and
    /// counts are exact; one per namespace, so moving one namespace's time
    /// (a periodic check) never makes another's resources due.
    clocks: Mutex<BTreeMap<String, FakeClock>>,
    /// Resources -> namespace of a Ready population (see [`Live::population`]).
    populations: BTreeMap<usize, String>,
    /// How each population was built, for the report.
    pub origins: BTreeMap<usize, String>,
}

impl Live {
    pub fn start() -> Result<Self> {
        let rt = super::tokio_runtime()?;
        let server = ApiServer::start()?;
        let meter = Meter::default();
        let client = server.client(&meter)?;
        Ok(Self {
            rt,
            server,
            meter,
            client,
            clocks: Mutex::new(BTreeMap::new()),
            populations: BTreeMap::new(),
            origins: BTreeMap::new(),
        })
    }

    /// Runs the controller (`workers`, poll_ms 500) on `namespace` until
    /// `n` resources there are Ready and the queue has settled. Returns the
    /// time from controller start to all Ready.
    pub fn make_ready(&self, namespace: &str, n: usize, workers: usize) -> Result<Duration> {
        self.with_controller(namespace, workers, 500, |runtime| {
            let took = until(
                &format!("{n} Ready in {namespace}"),
                ready_timeout(n),
                Duration::from_millis(10),
                || self.meter.ready_in(namespace) >= n,
            )?;
            // Resources finished while a list was in flight are listed stale
            // and re-read once more (NotDue); let those drain before measuring.
            self.settle(runtime)?;
            Ok(took)
        })
    }

    /// The clock of `namespace`'s controllers, starting at the real time.
    pub fn clock(&self, namespace: &str) -> FakeClock {
        let mut clocks = self.clocks.lock().unwrap_or_else(PoisonError::into_inner);
        clocks
            .entry(namespace.to_string())
            .or_insert_with(|| {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64);
                FakeClock::new(now)
            })
            .clone()
    }

    /// Starts the polling runtime over `namespace` with the no-op package
    /// and that namespace's clock.
    pub fn start_controller(
        &self,
        namespace: &str,
        workers: usize,
        poll_ms: u64,
    ) -> Result<blue_kubernetes::Runtime> {
        start_controller(
            &self.rt,
            self.client.clone(),
            namespace,
            workers,
            poll_ms,
            &self.clock(namespace),
        )
    }

    /// Runs `f` with the polling runtime of [`Live::start_controller`],
    /// stopping it either way.
    pub fn with_controller<T>(
        &self,
        namespace: &str,
        workers: usize,
        poll_ms: u64,
        f: impl FnOnce(&blue_kubernetes::Runtime) -> Result<T>,
    ) -> Result<T> {
        let runtime = self.start_controller(namespace, workers, poll_ms)?;
        let result = f(&runtime);
        self.rt.block_on(runtime.stop());
        result
    }

    /// Runs `f` with the polling runtime (2 workers, poll_ms 500) over the
    /// Ready population of `n` ([`Live::population`]) and its namespace,
    /// stopping it either way.
    pub fn on_population<T>(
        &mut self,
        n: usize,
        f: impl FnOnce(&Live, &str, &blue_kubernetes::Runtime) -> Result<T>,
    ) -> Result<T> {
        let ns = self.population(n)?;
        self.with_controller(&ns, 2, 500, |runtime| f(self, &ns, runtime))
    }

    /// Waits until a whole poll cycle passes with no per-resource call.
    pub fn settle(&self, runtime: &blue_kubernetes::Runtime) -> Result<()> {
        for _ in 0..100 {
            wait_polls(runtime, 1, Duration::from_secs(60))?;
            let before = self.meter.counts();
            wait_polls(runtime, 1, Duration::from_secs(60))?;
            if self.meter.counts().minus(&before).per_resource_calls() == 0 {
                return Ok(());
            }
        }
        anyhow::bail!("the controller never went idle")
    }

    /// The namespace of a Ready population of `n`, idle under its frozen
    /// clock, built on first use. The first [`checked_count`] resources have
    /// a 1 s interval, the others 1 h.
    pub fn population(&mut self, n: usize) -> Result<String> {
        if let Some(ns) = self.populations.get(&n) {
            return Ok(ns.clone());
        }
        let ns = population_namespace(n);
        self.server
            .create_resources(&ns, 0..n, |i| population_interval(n, i), &[])?;
        let took = self.make_ready(&ns, n, 4)?;
        self.populations.insert(n, ns.clone());
        self.origins.insert(
            n,
            format!("all {n} made Ready by the controller (4 workers) in {took:.1?}"),
        );
        Ok(ns)
    }

    pub fn has_population(&self, n: usize) -> bool {
        self.populations.contains_key(&n)
    }

    /// Completes a population of `n` whose first `have` resources were
    /// created (with [`population_interval`]) and made Ready elsewhere, e.g.
    /// by a throughput run: with filler resources where it can
    /// ([`Live::fill_with_copies`]), else through the controller.
    pub fn adopt_population(&mut self, n: usize, have: usize) -> Result<()> {
        let ns = population_namespace(n);
        let made = "made Ready by the controller in a throughput run";
        let how = if have >= n {
            format!("all {n} {made}")
        } else if self.fill_with_copies(&ns, n, have)? {
            let fillers = n - have;
            format!("{have} {made}, {fillers} filler resources with a copied Ready status")
        } else {
            let interval = |i| population_interval(n, i);
            self.server.create_resources(&ns, have..n, interval, &[])?;
            let took = self.make_ready(&ns, n, 4)?;
            let more = n - have;
            format!("{have} {made}, {more} more by the controller (4 workers) in {took:.1?}")
        };
        self.origins.insert(n, how);
        self.populations.insert(n, ns);
        Ok(())
    }

    /// Creates resources `have..n` of `namespace` with our finalizer and
    /// gives each, by one direct HTTPS status patch, a copy of the Ready
    /// status the controller wrote on resource `have - 1` (with their own
    /// profile and state-identity hash), so they list exactly like idle
    /// Ready resources. None of them is ever due or measured; building them
    /// through the controller would cost 3 kubectl calls each, minutes of
    /// the time budget. The controller then polls twice and must find
    /// nothing to do. False (and nothing created) without curl or without
    /// a Ready resource `have - 1` of the 1 h interval to copy.
    fn fill_with_copies(&self, namespace: &str, n: usize, have: usize) -> Result<bool> {
        let curl = match &self.server.curl {
            Some(curl) if have > checked_count(n) => curl,
            _ => return Ok(false),
        };
        let kube = self.server.kube.in_namespace(namespace);
        let last = kube.get(&package::resource_type(), &package::name(have - 1))?;
        let template = last.unwrap_or_default()["status"].clone();
        if template["phase"] != "Ready" {
            return Ok(false);
        }
        let interval = |i| population_interval(n, i);
        self.server
            .create_resources(namespace, have..n, interval, &[FINALIZER])?;
        for i in have..n {
            let name = package::name(i);
            let profile = format!("{namespace}--{name}");
            let mut status = template.clone();
            status["stateIdentity"] = json!(state_identity_hash(&[Some(profile.clone())]));
            status["profile"] = json!(profile);
            let (group, plural) = (package::GROUP, package::PLURAL);
            let path = format!("/apis/{group}/v1/namespaces/{namespace}/{plural}/{name}/status");
            curl.patch(&path, &json!({ "status": status }).to_string())?;
        }
        self.check_idle(namespace)?;
        Ok(true)
    }

    /// Two whole poll cycles over `namespace` must make no per-resource call.
    fn check_idle(&self, namespace: &str) -> Result<()> {
        self.with_controller(namespace, 2, 500, |runtime| {
            wait_polls(runtime, 1, Duration::from_secs(60))?;
            let before = self.meter.counts();
            wait_polls(runtime, 2, Duration::from_secs(60))?;
            let calls = self.meter.counts().minus(&before);
            anyhow::ensure!(
                calls.per_resource_calls() == 0,
                "the population in {namespace} is not idle: {}",
                calls.breakdown()
            );
            Ok(())
        })
    }
}

pub fn population_namespace(n: usize) -> String {
    format!("pop-{n}")
}

/// `spec.reconcileInterval` of resource `i` of a population of `n`.
pub fn population_interval(n: usize, i: usize) -> &'static str {
    if i < checked_count(n) {
        "1s"
    } else {
        "1h"
    }
}
