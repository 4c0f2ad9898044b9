//! Part `migration` (issue 56): what a storage migration costs a running
//! operator. The LocalConfigMap example (release build) on the bench's
//! API server: its CRD gains `v0alpha1` (a copy of `v1alpha1`, the same
//! schema, so the API server converts alone) and stores there; [`objects`]
//! LocalConfigMaps (`BLUE_BENCH_MIGRATION_OBJECTS`, default 10,000) are
//! written at it and made Ready by the namespace-scoped operator; storage
//! moves back to `v1alpha1`; then the example's documented way for a
//! namespaced install, the one-shot `migrate-storage` at its default
//! rate, runs beside the operator until it exits. Measured:
//!
//! - the migration's duration (the one-shot's start to its exit);
//! - the API server's requests a second over it (two scrapes of
//!   `apiserver_request_total`) and the CPU of kube-apiserver and etcd;
//! - the operator's edit -> ConfigMap p50 while it runs, edits one after
//!   another on the migrated objects, against a quiet window of as many
//!   edits just before (the same operator, population and API server);
//! - the operator's passes stopped by Conflict over the migration
//!   (`controller_runtime_reconcile_total{result="conflict"}`).
//!
//! The CRD is left as it was (`v0alpha1` dropped once retired).

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use blue_kubernetes_client::ResourceDescriptor;
use serde_json::{json, Value};

use crate::apimetrics::Scrape;
use crate::changes::{named, Changes};
use crate::live::Live;
use crate::machine::Machine;
use crate::measure::{core_pct, median, pid_cpu_seconds, thousands};
use crate::report::Block;
use blue_testbed::support::kube::LCM;
use blue_testbed::world::{operator, Transport, World};

/// The objects migrated unless `BLUE_BENCH_MIGRATION_OBJECTS` says.
const DEFAULT_OBJECTS: usize = 10_000;
/// Edits timed in the quiet window (and at most during the migration).
const EDITS: usize = 30;
const TIMEOUT: Duration = Duration::from_secs(120);
const TARGET_SECS: f64 = 300.0;
const TARGET_RATIO: f64 = 1.5;
/// The older version the objects are written at.
const OLD: &str = "v0alpha1";

fn objects() -> Result<usize> {
    match std::env::var("BLUE_BENCH_MIGRATION_OBJECTS") {
        Ok(n) => n
            .replace('_', "")
            .parse()
            .context("BLUE_BENCH_MIGRATION_OBJECTS"),
        Err(_) => Ok(DEFAULT_OBJECTS),
    }
}

fn name(i: usize) -> String {
    format!("m-{i:05}")
}

/// The version discovery reports as stored (its `storageVersionHash`).
fn storage_hash(world: &World) -> Result<Value> {
    let group = world
        .kube
        .json(&["get", "--raw", "/apis/examples.blue.dev/v1alpha1"])?;
    let found = group["resources"].as_array().and_then(|r| {
        r.iter()
            .find(|r| r["name"] == "localconfigmaps")
            .map(|r| r["storageVersionHash"].clone())
    });
    found.context("localconfigmaps not discovered")
}

/// Patches the CRD with `ops` (JSON patch), then waits until discovery's
/// storage hash differs from what it was.
fn patch_crd_storage(world: &World, ops: &Value) -> Result<()> {
    let before = storage_hash(world)?;
    let args = ["patch", "crd", LCM, "--type=json", "-p", &ops.to_string()];
    world.kube.ok(&args, None)?;
    blue_testbed::support::wait::eventually("the storage version in effect", TIMEOUT, || {
        ensure!(storage_hash(world)? != before, "not yet");
        Ok(())
    })
}

/// Adds [`OLD`] (a copy of `v1alpha1`) and stores there.
fn store_at_old(world: &World) -> Result<()> {
    let crd = world.kube.json(&["get", "crd", LCM, "-o", "json"])?;
    let versions = crd["spec"]["versions"].as_array().context("versions")?;
    ensure!(
        versions.len() == 1,
        "the CRD serves {} versions",
        versions.len()
    );
    let mut copy = versions[0].clone();
    copy["name"] = json!(OLD);
    copy["storage"] = json!(true);
    copy.as_object_mut().map(|v| v.remove("deprecated"));
    patch_crd_storage(
        world,
        &json!([
            {"op": "add", "path": "/spec/conversion", "value": {"strategy": "None"}},
            {"op": "replace", "path": "/spec/versions/0/storage", "value": false},
            {"op": "add", "path": "/spec/versions/-", "value": copy},
        ]),
    )
}

/// Storage back at `v1alpha1` (the migration's target).
fn store_at_new(world: &World) -> Result<()> {
    patch_crd_storage(
        world,
        &json!([
            {"op": "test", "path": "/spec/versions/1/name", "value": OLD},
            {"op": "replace", "path": "/spec/versions/0/storage", "value": true},
            {"op": "replace", "path": "/spec/versions/1/storage", "value": false},
        ]),
    )
}

/// Drops [`OLD`] again (the migration retired it).
fn drop_old(world: &World) -> Result<()> {
    let ops = json!([
        {"op": "test", "path": "/spec/versions/1/name", "value": OLD},
        {"op": "remove", "path": "/spec/versions/1"},
    ]);
    let args = ["patch", "crd", LCM, "--type=json", "-p", &ops.to_string()];
    world.kube.ok(&args, None)?;
    Ok(())
}

/// `n` objects written at [`OLD`], in lists of 500.
fn create(world: &World, n: usize) -> Result<()> {
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let items: Vec<Value> = chunk
            .iter()
            .map(|&i| {
                json!({
                    "apiVersion": format!("examples.blue.dev/{OLD}"), "kind": "LocalConfigMap",
                    "metadata": {"name": name(i)},
                    "spec": {"reconcileInterval": "1h",
                             "config": {"configMapName": name(i), "data": {"v": "0"}}},
                })
            })
            .collect();
        let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
        world.kube.create(&list.to_string())?;
    }
    Ok(())
}

/// Until `n` objects are Ready.
fn wait_all_ready(world: &World, n: usize) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60 + n as u64 / 10);
    loop {
        let phases = world.kube.ok(
            &["get", LCM, "-o", "jsonpath={.items[*].status.phase}"],
            None,
        )?;
        let ready = phases.split_whitespace().filter(|p| *p == "Ready").count();
        if ready >= n {
            return Ok(());
        }
        ensure!(Instant::now() < deadline, "{ready} of {n} Ready");
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// The operator's passes stopped by Conflict so far.
fn conflicts(metrics: &str) -> Result<f64> {
    let text = blue_e2e::scrape::http_get(metrics, "/metrics")?;
    Ok(text
        .lines()
        .filter(|l| {
            l.starts_with("controller_runtime_reconcile_total") && l.contains("result=\"conflict\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// The CPU seconds of kube-apiserver and etcd.
fn server_cpu(live: &Live) -> Vec<(String, f64)> {
    (live.server.server_pids.iter())
        .filter_map(|&pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            Some((comm.trim().to_string(), pid_cpu_seconds(pid)?))
        })
        .collect()
}

struct Edits<'a> {
    world: &'a World<'a>,
    lcms: Changes,
    config_maps: Changes,
    n: usize,
    next: usize,
}

impl Edits<'_> {
    /// Edits the next object's data; from the watch event showing the
    /// edit to the one showing its ConfigMap with the new value (ms).
    fn one(&mut self) -> Result<f64> {
        let (object, value) = (name(self.next * 7919 % self.n), format!("e{}", self.next));
        self.next += 1;
        let patch = json!({"spec": {"config": {"data": {"v": value}}}});
        self.world.kube.merge_patch(LCM, &object, &patch)?;
        let shows = |o: &Value| named(o, &object) && o["spec"]["config"]["data"]["v"] == value;
        let edited = self.lcms.until(&format!("{object} edited"), shows)?;
        let converged = self
            .config_maps
            .until(&format!("{object}'s ConfigMap"), |o| {
                named(o, &object) && o["data"]["v"] == value
            })?;
        Ok(converged.saturating_duration_since(edited).as_secs_f64() * 1e3)
    }
}

struct Measured {
    n: usize,
    took: Duration,
    requests_per_sec: f64,
    cpu: Vec<(String, f64)>,
    quiet: Vec<f64>,
    during: Vec<f64>,
    conflicts: f64,
    /// The migration's own Conflicts, per pass it finished.
    passes: Vec<u64>,
}

fn measure(live: &Live, world: &mut World, n: usize) -> Result<Measured> {
    store_at_old(world)?;
    create(world, n)?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let metrics = format!("127.0.0.1:{port}");
    let mut args = world.connect_args();
    args.extend(["--metrics-bind".into(), metrics.clone()]);
    world.start_operator(&args)?;
    wait_all_ready(world, n)?;
    let client = live.proxy()?;
    let ns = world.kube.namespace().to_string();
    let open = |d: &ResourceDescriptor| Changes::open(&live.rt, &client, d, &ns, TIMEOUT);
    let config_maps = ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap");
    let world = &*world;
    let mut edits = Edits {
        world,
        lcms: open(&crate::resource::descriptor())?,
        config_maps: open(&config_maps)?,
        n,
        next: 0,
    };
    let quiet = (0..EDITS)
        .map(|_| edits.one())
        .collect::<Result<Vec<_>>>()?;

    store_at_new(world)?;
    // Moving the storage version restarts the kind's storage in the API
    // server, which ends its watches: a new one from here.
    edits.lcms = open(&crate::resource::descriptor())?;
    let (scrape, cpu, conflicts0) = (
        Scrape::take(&live.server)?,
        server_cpu(live),
        conflicts(&metrics)?,
    );
    let started = Instant::now();
    let mut one_shot_args = world.connect_args();
    one_shot_args.push("migrate-storage".into());
    let log = world.work.join("migrate-storage.log");
    let mut one_shot = world.spawn_operator(&one_shot_args, &log)?;
    let mut during = Vec::new();
    while one_shot.is_running() {
        during.push(edits.one()?);
    }
    let took = started.elapsed();
    let served = Scrape::take(&live.server)?.since(&scrape);
    let cpu_after = server_cpu(live);
    let conflicts = conflicts(&metrics)? - conflicts0;
    let status: ExitStatus = one_shot.stop()?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    ensure!(
        status.success() && text.contains("storage migration done"),
        "migrate-storage failed ({status}):\n{text}"
    );
    let passes = passes(&text);
    live.rt.block_on(client.shutdown());
    drop_old(world)?;
    let cpu = (cpu.iter().zip(&cpu_after))
        .map(|((name, before), (_, after))| (name.clone(), after - before))
        .collect();
    Ok(Measured {
        n,
        took,
        requests_per_sec: served.total(|_| true) / took.as_secs_f64(),
        cpu,
        quiet,
        during,
        conflicts,
        passes,
    })
}

/// What the one-shot's log says of each pass it finished: the Conflicts
/// its writes met (someone wrote the object after its list, so it is
/// stored at the new version already), per pass.
fn passes(log: &str) -> Vec<u64> {
    (log.lines())
        .filter(|l| l.contains("the pass wrote every object"))
        .filter_map(|l| {
            let (_, after) = l.split_once(" conflicts=")?;
            after.split(' ').next()?.parse().ok()
        })
        .collect()
}

fn block(machine: &Machine, took: Duration, m: &Measured) -> Block {
    let secs = m.took.as_secs_f64();
    let at_target_size = m.n >= DEFAULT_OBJECTS;
    let (quiet, during) = (median(&m.quiet), median(&m.during));
    let ratio = during / quiet;
    let cpu = (m.cpu.iter())
        .map(|(name, cpu)| format!("{name} {}", core_pct(*cpu, secs)))
        .collect::<Vec<_>>()
        .join(", ");
    let rows = vec![
        (
            format!(
                "{} objects migrated at the default rate, beside the operator",
                thousands(m.n as f64)
            ),
            format!("{secs:.1} s ({:.0} objects a second)", m.n as f64 / secs),
            "10,000 within 5 minutes",
            at_target_size.then_some(secs <= TARGET_SECS),
        ),
        (
            "API server requests a second during the migration".into(),
            format!("{:.0}", m.requests_per_sec),
            "-",
            None,
        ),
        (
            "CPU during the migration (of a core)".into(),
            cpu,
            "-",
            None,
        ),
        (
            format!(
                "edit -> ConfigMap p50 during the migration ({} edits) against quiet ({} edits)",
                m.during.len(),
                m.quiet.len()
            ),
            format!("{during:.1} ms against {quiet:.1} ms: {ratio:.2}x"),
            "within 1.5x of quiet",
            (!m.during.is_empty()).then_some(ratio <= TARGET_RATIO),
        ),
        (
            "operator passes stopped by Conflict during the migration".into(),
            format!("{:.0}", m.conflicts),
            "-",
            None,
        ),
        (
            "the migration's passes, and its writes that met a Conflict (the object written since its list)".into(),
            format!(
                "{} pass(es): {}",
                m.passes.len(),
                (m.passes.iter().map(|c| thousands(*c as f64)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "-",
            None,
        ),
    ];
    let title = ("migration", "Storage migration beside a running operator");
    machine.part_block(title, took, rows)
}

pub fn run(live: &Live, machine: &Machine) -> Result<Block> {
    let started = Instant::now();
    let n = objects()?;
    let bed = live.testbed("bench-migration")?;
    let mut world = bed.world(Transport::Proxy);
    world.binary = operator::build(&[operator::PACKAGE], true)?.remove(0);
    let measured = measure(live, &mut world, n);
    let ns = world.kube.namespace().to_string();
    // Stops the operator: nothing may re-add a finalizer from here.
    drop(world);
    // The block is made before the teardown: a teardown that fails
    // afterwards costs the figures nothing.
    let block = measured.map(|m| block(machine, started.elapsed(), &m));
    if let Err(err) = tear_down(live, &ns).and_then(|()| bed.down().map(drop)) {
        eprintln!("warning: tearing down the migration testbed: {err:#}");
    }
    block
}

/// Strips the finalizers of the objects and deletes them and their
/// ConfigMaps many at a time (the installation's own removal patches
/// them a kubectl call per few hundred, minutes for 10,000).
fn tear_down(live: &Live, ns: &str) -> Result<()> {
    let scratch = std::env::temp_dir();
    crate::harness::Harness::new(&live.rt, &live.server, &scratch)?.discard(ns)
}

#[cfg(test)]
mod tests {
    use super::passes;

    #[test]
    fn each_finished_pass_gives_its_conflicts_from_the_one_shots_log() {
        let log = "\
x INFO storage migration in progress kind=\"k\" rewritten=10 current=0 conflicts=1 gone=0
x INFO storage migration: the pass wrote every object kind=\"k\" rewritten=9397 current=0 conflicts=603 gone=0
x INFO storage migration: the pass wrote every object kind=\"k\" rewritten=3 current=9997 conflicts=0 gone=0
x INFO storage migration done";
        assert_eq!(passes(log), vec![603, 0]);
    }
}
