//! Part `webhook` (issue 54): what the admission webhook adds. The
//! LocalConfigMap example (release build) on the bench's API server with
//! `--webhook-self-signed`, measured in [`ROUNDS`] rounds on one operator:
//!
//! - the p50 of a create through the webhook against the same create
//!   without it: the bench adds an `objectSelector` to the operator's
//!   configuration so that objects labelled `skip` bypass the webhook, and
//!   alternates the two (same objects but the label's value, same
//!   operator, same API server state, the same number of each, either
//!   first in turn); every create waits for the operator to finish with
//!   the one before (Ready), so no create is timed against the
//!   controller's work on the last;
//! - the operator's CPU per review, from `/proc` (per thread, in ns where
//!   the kernel keeps schedstats), less its CPU over as long again without
//!   reviews: for admitted reviews, valid creates sent one after another
//!   with `dryRun` (judged in full, nothing stored, so the controller has
//!   nothing to do); for refusals, the burst below;
//! - 100 invalid creates sent at once: each refused within 1 s, and the
//!   operator's RSS afterwards against before.
//!
//! Writes its own block: the median of the rounds against the targets,
//! then each round.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use blue_kubernetes_client::{ApiPath, ApiRequest, Method, RawApi};
use serde_json::{json, Value};

use super::live::Live;
use super::machine::Machine;
use super::measure::{median, pid_status_kib};
use super::operator_webhook::{remove_configuration, webhook_args, CONFIGURATION};
use super::report::Block;
use super::webhook_report::{self, creates, Round, BURST, ROUNDS};
use blue_testbed::world::{operator, Transport, World};

/// Admitted reviews whose CPU is measured per round.
const DRY_RUNS: usize = 200;
/// The label that keeps an object away from the webhook (`skip`).
const LEG: &str = "bench.blue.dev/webhook";

fn object(name: &str, leg: &str, data: Value) -> Value {
    json!({
        "apiVersion": "examples.blue.dev/v1alpha1",
        "kind": "LocalConfigMap",
        "metadata": {"name": name, "labels": {LEG: leg}},
        "spec": {"config": {"data": data}},
    })
}

/// Ready for its current generation.
fn ready(r: &Value) -> bool {
    r["status"]["phase"] == "Ready"
        && r["status"]["observedGeneration"].as_i64() == r["metadata"]["generation"].as_i64()
}

struct Bench<'a> {
    live: &'a Live,
    api: Arc<dyn RawApi>,
    /// The namespace's LocalConfigMaps.
    path: ApiPath,
}

impl Bench<'_> {
    fn send(&self, request: ApiRequest) -> Result<Option<Value>> {
        let answer = self.live.rt.block_on(self.api.send(request))?;
        Ok(answer.body)
    }

    /// Creates `name` in leg `leg`: how long the create took (ms).
    fn timed_create(&self, name: &str, leg: &str) -> Result<f64> {
        let request = ApiRequest::new(Method::Post, self.path.clone()).with_body(object(
            name,
            leg,
            json!({"k": "v"}),
        ));
        let started = Instant::now();
        self.send(request)?;
        Ok(started.elapsed().as_secs_f64() * 1e3)
    }

    /// Until the operator has made `name` Ready (its finalizer, the
    /// ConfigMap, the status written).
    fn settle(&self, name: &str) -> Result<()> {
        let path = ApiPath::parse(&format!("{}/{name}", self.path.as_str()))?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let found = self.send(ApiRequest::new(Method::Get, path.clone()))?;
            if found.as_ref().is_some_and(ready) {
                // The status write's own watch event reaches the
                // controller too: let it pass.
                std::thread::sleep(Duration::from_millis(10));
                return Ok(());
            }
            ensure!(Instant::now() < deadline, "{name} never Ready");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// `creates()` creates in each leg, alternated, each after the last
    /// settled: (without, with) in ms.
    fn interleaved(&self, round: usize) -> Result<(Vec<f64>, Vec<f64>)> {
        let (mut without, mut with) = (Vec::new(), Vec::new());
        for i in 0..creates() {
            let plain = format!("plain-{round}-{i}");
            let checked = format!("checked-{round}-{i}");
            let legs = [(&plain, "skip"), (&checked, "judge")];
            let order = if i % 2 == 0 { [0, 1] } else { [1, 0] };
            for leg in order {
                let (name, label) = legs[leg];
                let took = self.timed_create(name, label)?;
                [&mut without, &mut with][leg].push(took);
                self.settle(name)?;
            }
        }
        Ok((without, with))
    }

    /// `DRY_RUNS` valid creates through the webhook, one after another,
    /// nothing stored: the operator's CPU per admitted review (ms).
    fn cpu_per_admitted(&self, pid: u32) -> Result<Option<f64>> {
        let dry = self.path.clone().with_query("dryRun", "All");
        let (before, started) = (cpu_ns(pid), Instant::now());
        for i in 0..DRY_RUNS {
            let request = ApiRequest::new(Method::Post, dry.clone()).with_body(object(
                &format!("dry-{i}"),
                "judge",
                json!({"k": "v"}),
            ));
            self.send(request)?;
        }
        Ok(per_review(pid, before, started, DRY_RUNS))
    }

    /// `BURST` invalid creates at once: (all refused, the slowest, the
    /// operator's CPU per refusal in ms).
    fn burst(&self, round: usize, pid: u32) -> (bool, Duration, Option<f64>) {
        let (before, started) = (cpu_ns(pid), Instant::now());
        let burst = (0..BURST).map(|i| {
            let api = self.api.clone();
            let name = format!("invalid-{round}-{i}");
            let request = ApiRequest::new(Method::Post, self.path.clone()).with_body(object(
                &name,
                "judge",
                json!({"bad key": "x"}),
            ));
            async move {
                let started = Instant::now();
                let refused = api.send(request).await.is_err();
                (refused, started.elapsed())
            }
        });
        let answers = self.live.rt.block_on(futures::future::join_all(burst));
        let cpu = per_review(pid, before, started, BURST);
        let refused = answers.iter().all(|(refused, _)| *refused);
        let slowest = answers.iter().map(|(_, took)| *took).max();
        (refused, slowest.unwrap_or_default(), cpu)
    }

    fn round(&self, round: usize, pid: u32) -> Result<Round> {
        let (without, with) = self.interleaved(round)?;
        let admitted_cpu_ms = self.cpu_per_admitted(pid)?;
        let rss_before = pid_status_kib(pid, "VmRSS:");
        let (refused, slowest, refused_cpu_ms) = self.burst(round, pid);
        let rss_after = pid_status_kib(pid, "VmRSS:");
        ensure!(refused, "an invalid create was admitted");
        Ok(Round {
            without: median(&without),
            with: median(&with),
            admitted_cpu_ms,
            refused_cpu_ms,
            slowest,
            rss_before,
            rss_after,
        })
    }
}

/// The operator's CPU per review (ms) of `reviews` sent since `started`
/// (its CPU then `before`), less what it uses without reviews (its other
/// work: the Lease, periodic checks of the resources made) over as long
/// again, measured right after.
fn per_review(pid: u32, before: Option<u64>, started: Instant, reviews: usize) -> Option<f64> {
    let (during, took) = (cpu_ns(pid)?, started.elapsed());
    std::thread::sleep(took);
    let idle = cpu_ns(pid)?.saturating_sub(during);
    let used = during.saturating_sub(before?).saturating_sub(idle);
    Some(used as f64 / 1e6 / reviews as f64)
}

/// CPU time of `pid`'s live threads, ns: `/proc/PID/task/*/schedstat`
/// (ns) where the kernel keeps it, else `stat`'s ticks (10 ms).
fn cpu_ns(pid: u32) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut ns = 0;
    for task in tasks.flatten() {
        let schedstat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
        ns += schedstat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    match ns {
        0 => super::measure::pid_cpu_seconds(pid).map(|s| (s * 1e9) as u64),
        ns => Some(ns),
    }
}

/// Once the operator applied its configuration: objects labelled `skip`
/// bypass the webhook from now on (checked: an invalid one is admitted,
/// and deleted again).
fn split_legs(world: &World, bench: &Bench<'_>) -> Result<()> {
    let selector = json!([{"op": "add", "path": "/webhooks/0/objectSelector", "value":
        {"matchExpressions": [{"key": LEG, "operator": "NotIn", "values": ["skip"]}]}}]);
    let selector = selector.to_string();
    let patch = ["patch", "validatingwebhookconfiguration", CONFIGURATION];
    let args = [patch.as_slice(), &["--type=json", "-p", &selector]].concat();
    world.kube.ok(&args, None)?;
    let mut tries = 0;
    blue_testbed::support::wait::eventually(
        "the skip label honoured",
        Duration::from_secs(60),
        || {
            tries += 1;
            let name = format!("skip-probe-{tries}");
            let bad = ApiRequest::new(Method::Post, bench.path.clone().with_query("dryRun", "All"))
                .with_body(object(&name, "skip", json!({"bad key": "x"})));
            bench.send(bad).map(drop)
        },
    )
}

pub fn run(live: &Live, machine: &Machine) -> Result<Block> {
    let started = Instant::now();
    let bed = live.testbed("bench-webhook")?;
    let mut world = bed.world(Transport::Proxy);
    world.binary = operator::build(&[operator::PACKAGE], true)?.remove(0);
    let proxy = live.proxy()?;
    let measured = (|| {
        let ns = world.kube.namespace().to_string();
        let bench = Bench {
            live,
            api: proxy.clone(),
            path: ApiPath::parse(&format!(
                "/apis/examples.blue.dev/v1alpha1/namespaces/{ns}/localconfigmaps"
            ))?,
        };
        world.start_operator(&webhook_args(&world))?;
        blue_testbed::support::wait::eventually(
            "the webhook configuration",
            Duration::from_secs(60),
            || {
                let found = world
                    .kube
                    .get("validatingwebhookconfiguration", CONFIGURATION)?;
                found.context("not applied yet").map(drop)
            },
        )?;
        // The webhook answers (a refusal) before anything is timed.
        let bad = ApiRequest::new(Method::Post, bench.path.clone()).with_body(object(
            "probe",
            "judge",
            json!({"bad key": "x"}),
        ));
        ensure!(bench.send(bad).is_err(), "an invalid resource was admitted");
        split_legs(&world, &bench)?;
        let pid = world.operator()?.pid().context("the operator's pid")?;
        (0..ROUNDS)
            .map(|round| bench.round(round, pid))
            .collect::<Result<Vec<_>>>()
    })();
    live.rt.block_on(proxy.shutdown());
    remove_configuration(&world)?;
    drop(world);
    bed.down()?;
    Ok(webhook_report::block(
        machine,
        started.elapsed(),
        &measured?,
    ))
}
