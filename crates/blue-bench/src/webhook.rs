//! Part `webhook` (issue 54): what the admission webhook adds. The
//! LocalConfigMap example (release build) on the bench's API server,
//! with and without `--webhook-self-signed`: the p50 of a create through
//! the webhook against the same create without it, the operator's CPU per
//! review, and 100 invalid creates sent at once (each refused within 1 s;
//! the operator's RSS afterwards against before). Writes its own block.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use blue_kubernetes_client::{ApiPath, ApiRequest, Method, RawApi};
use serde_json::{json, Value};

use super::live::Live;
use super::machine::Machine;
use super::measure::{median, pid_cpu_seconds, pid_status_kib};
use super::operator_webhook::{remove_configuration, webhook_args};
use super::report::Block;
use crate::world::{operator, Transport};

/// Creates timed per configuration (`BLUE_BENCH_WEBHOOK_CREATES` for a
/// small proving run).
fn creates() -> usize {
    std::env::var("BLUE_BENCH_WEBHOOK_CREATES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(50)
}
const BURST: usize = 100;
const ADDED_TARGET_MS: f64 = 3.0;
const BURST_TARGET: Duration = Duration::from_secs(1);
const RSS_TARGET_KIB: u64 = 2048;

fn object(name: &str, data: Value) -> Value {
    json!({
        "apiVersion": "examples.blue.dev/v1alpha1",
        "kind": "LocalConfigMap",
        "metadata": {"name": name},
        "spec": {"config": {"data": data}},
    })
}

/// Sends `count` creates named `<prefix>-<i>` one after another: each
/// one's milliseconds.
fn timed_creates(
    live: &Live,
    api: &Arc<dyn RawApi>,
    path: &ApiPath,
    prefix: &str,
) -> Result<Vec<f64>> {
    let mut took = Vec::new();
    for i in 0..creates() {
        let request = ApiRequest::new(Method::Post, path.clone())
            .with_body(object(&format!("{prefix}-{i}"), json!({"k": "v"})));
        let started = Instant::now();
        live.rt.block_on(api.send(request))?;
        took.push(started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(took)
}

pub fn run(live: &Live, machine: &Machine) -> Result<Block> {
    let started = Instant::now();
    let bed = live.testbed("bench-webhook")?;
    let mut world = bed.world(Transport::Proxy);
    world.binary = operator::build(&[operator::PACKAGE], true)?.remove(0);
    let proxy = live.proxy()?;
    let api: Arc<dyn RawApi> = proxy.clone();
    let measured = (|| {
        let ns = world.kube.namespace().to_string();
        let path = ApiPath::parse(&format!(
            "/apis/examples.blue.dev/v1alpha1/namespaces/{ns}/localconfigmaps"
        ))?;
        world.start_operator(&world.connect_args())?;
        let without = timed_creates(live, &api, &path, "plain")?;
        world.start_operator(&webhook_args(&world))?;
        crate::support::wait::eventually(
            "the webhook configuration",
            Duration::from_secs(60),
            || {
                let found = world
                    .kube
                    .get("validatingwebhookconfiguration", "local-configmap-operator")?;
                found.context("not applied yet").map(drop)
            },
        )?;
        // The webhook answers (a refusal) before anything is timed.
        let bad = ApiRequest::new(Method::Post, path.clone())
            .with_body(object("probe", json!({"bad key": "x"})));
        let refused = live.rt.block_on(api.send(bad));
        ensure!(refused.is_err(), "an invalid resource was admitted");
        let with = timed_creates(live, &api, &path, "checked")?;
        let pid = world.operator()?.pid().context("the operator's pid")?;
        let (rss_before, cpu_before) = (pid_status_kib(pid, "VmRSS:"), pid_cpu_seconds(pid));
        let burst = (0..BURST).map(|i| {
            let api = api.clone();
            let request = ApiRequest::new(Method::Post, path.clone())
                .with_body(object(&format!("invalid-{i}"), json!({"bad key": "x"})));
            async move {
                let started = Instant::now();
                let refused = api.send(request).await.is_err();
                (refused, started.elapsed())
            }
        });
        let answers = live.rt.block_on(futures::future::join_all(burst));
        let cpu = pid_cpu_seconds(pid).zip(cpu_before).map(|(a, b)| a - b);
        let rss_after = pid_status_kib(pid, "VmRSS:");
        ensure!(
            answers.iter().all(|(refused, _)| *refused),
            "an invalid create was admitted"
        );
        let slowest = answers
            .iter()
            .map(|(_, took)| *took)
            .max()
            .unwrap_or_default();
        Ok::<_, anyhow::Error>((without, with, cpu, slowest, rss_before, rss_after))
    })();
    live.rt.block_on(proxy.shutdown());
    remove_configuration(&world)?;
    drop(world);
    bed.down()?;
    let (without, with, cpu, slowest, rss_before, rss_after) = measured?;
    let added = median(&with) - median(&without);
    let per_review_ms = cpu.map_or(f64::NAN, |s| s * 1e3 / BURST as f64);
    let grew = rss_after.saturating_sub(rss_before);
    let rows = vec![
        (
            format!("a create through the webhook, p50 added ({} creates each)", creates()),
            format!(
                "{added:.2} ms ({:.2} ms without, {:.2} ms with); {per_review_ms:.2} ms of the operator's CPU per review",
                median(&without),
                median(&with)
            ),
            "at most 3 ms",
            Some(added <= ADDED_TARGET_MS),
        ),
        (
            format!("{BURST} invalid creates at once: the slowest refusal"),
            format!("{} ms", slowest.as_millis()),
            "each within 1 s",
            Some(slowest <= BURST_TARGET),
        ),
        (
            format!("operator RSS after the {BURST} refusals"),
            format!("{grew} KiB above before ({rss_before} KiB)"),
            "at most 2 MiB",
            Some(grew <= RSS_TARGET_KIB),
        ),
    ];
    let title = ("webhook", "Admission webhook");
    Ok(machine.part_block(title, started.elapsed(), rows))
}
