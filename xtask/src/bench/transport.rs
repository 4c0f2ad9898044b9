//! Part `transport`: the two transports side by side on the same API
//! server: wall time and CPU per get, per list of N and per status write.
//! CPU is this process plus the kubectl processes it reaped (per-call) or
//! plus the proxy process read from `/proc` (proxy).

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use blue_kubernetes_client::{
    kubectl_client, proxy_client, Client, ProxyClient, ProxyOptions, ResourceDescriptor,
};
use serde_json::{json, Value};

use super::live::Live;
use super::measure::{median, pid_cpu_seconds, secs, thousands, CpuSnapshot};
use super::package::{self, descriptor};
use super::report::{Report, Section};

/// One operation's cost through one transport.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cost {
    /// Median wall seconds per call.
    pub wall: f64,
    /// CPU seconds per call (client process + kubectl or proxy).
    pub cpu: f64,
    pub calls: usize,
}

/// Runs `op` `times` times; wall is the median, CPU the mean: this
/// process, reaped children (kubectl) and, given its pid, the proxy.
fn cost(proxy_pid: Option<u32>, times: usize, mut op: impl FnMut() -> Result<()>) -> Result<Cost> {
    let proxy_cpu = |gone: f64| proxy_pid.and_then(pid_cpu_seconds).unwrap_or(gone);
    let (cpu0, proxy0) = (CpuSnapshot::take(), proxy_cpu(0.0));
    let mut walls = Vec::with_capacity(times);
    for _ in 0..times {
        let started = Instant::now();
        op()?;
        walls.push(started.elapsed().as_secs_f64());
    }
    let used = cpu0.since();
    let cpu = used.own + used.children + proxy_cpu(proxy0) - proxy0;
    Ok(Cost {
        wall: median(&walls),
        cpu: cpu / times as f64,
        calls: times,
    })
}

/// Costs of get, list and status write through one client.
pub struct Costs {
    pub get: Cost,
    pub list: Cost,
    pub status: Cost,
}

fn measure(
    live: &Live,
    client: &dyn Client,
    proxy_pid: Option<u32>,
    namespace: &str,
    reps: (usize, usize),
) -> Result<Costs> {
    let d: ResourceDescriptor = descriptor();
    let one = package::name(0);
    let rt = &live.rt;
    // Warm-up: discovery cache, connections.
    rt.block_on(client.get_resource(&d, namespace, &one))?;
    let get = cost(proxy_pid, reps.0, || {
        rt.block_on(client.get_resource(&d, namespace, &one))?
            .context("missing")?;
        Ok(())
    })?;
    let list = cost(proxy_pid, reps.1, || {
        rt.block_on(client.list_resources(&d, namespace))?;
        Ok(())
    })?;
    let mut current: Value = rt
        .block_on(client.get_resource(&d, namespace, &one))?
        .context("missing")?;
    let mut i = 0;
    let status = cost(proxy_pid, reps.0, || {
        i += 1;
        current = rt.block_on(client.update_status(&d, &current, &json!({"bench": i})))?;
        Ok(())
    })?;
    Ok(Costs { get, list, status })
}

/// A started proxy client and its pid.
fn proxy(live: &Live) -> Result<(Arc<ProxyClient>, u32)> {
    let client = Arc::new(proxy_client(ProxyOptions::new(
        live.server.kubectl_options(),
    ))?);
    live.rt.block_on(client.start())?;
    let pid = live.rt.block_on(client.pid()).context("no proxy pid")?;
    Ok((client, pid))
}

pub fn run(live: &mut Live, quick: bool, report: &mut Report) -> Result<()> {
    let n = if quick { 100 } else { 1_000 };
    let ns = format!("transport-{n}");
    live.server.create_resources(&ns, 0..n, |_| "1h", &[])?;
    let kubectl = kubectl_client(live.server.kubectl_options())?;
    let per_call = measure(
        live,
        &kubectl,
        None,
        &ns,
        if quick { (10, 3) } else { (30, 5) },
    )?;
    let (client, pid) = proxy(live)?;
    let proxied = measure(
        live,
        client.as_ref(),
        Some(pid),
        &ns,
        if quick { (100, 10) } else { (300, 30) },
    )?;
    live.rt.block_on(client.shutdown());

    let mut s = Section::new(
        "transport",
        "Transports side by side: one request",
        "operation | kubectl: wall | kubectl: CPU | proxy: wall | \
         proxy: CPU | wall ratio | CPU ratio",
    );
    s.order = 5;
    let rows = [
        ("get", per_call.get, proxied.get),
        (
            &*format!("list of {}", thousands(n as f64)),
            per_call.list,
            proxied.list,
        ),
        ("status write", per_call.status, proxied.status),
    ];
    for (name, k, p) in rows {
        s.row(vec![
            name.to_string(),
            secs(k.wall),
            secs(k.cpu),
            secs(p.wall),
            secs(p.cpu),
            format!("{:.0}x", k.wall / p.wall.max(1e-9)),
            format!("{:.0}x", k.cpu / p.cpu.max(1e-6)),
        ]);
    }
    s.note(format!(
        "calls per transport: get {} / {}, list {} / {}, status {} / {} (kubectl / proxy)",
        per_call.get.calls,
        proxied.get.calls,
        per_call.list.calls,
        proxied.list.calls,
        per_call.status.calls,
        proxied.status.calls
    ));
    report.sections.push(s);
    report.verdict(
        "one get through the proxy: at most 3 ms wall",
        secs(proxied.get.wall),
        proxied.get.wall <= 0.003,
    );
    let ratio = per_call.get.cpu / proxied.get.cpu.max(1e-6);
    report.verdict(
        "one get through the proxy: at least 30x less CPU than one kubectl process",
        format!(
            "{ratio:.0}x ({} vs {})",
            secs(proxied.get.cpu),
            secs(per_call.get.cpu)
        ),
        ratio >= 30.0,
    );
    Ok(())
}
