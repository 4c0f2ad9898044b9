//! Part `conversion` (issue 55): what reading at an old version costs.
//! The LocalConfigMap example's next release (release build, stored at
//! v1beta1, v1alpha1 served through the conversion its webhook server
//! answers) on the bench's API server, with 1,000 objects written at
//! v1beta1: the p50 of a list of them all at v1alpha1 against the same
//! list at v1beta1 (no conversion), read from etcd and from the watch
//! cache (`resourceVersion=0`), and the operator's CPU per object
//! converted, cross-checked with its `/convert` metric (which also counts
//! the reviews a list takes: kube-apiserver 1.20 sends one per object
//! read from etcd, none for a list from the cache).
//! Three runs over one setup; writes its own block with each run and the
//! median.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use blue_kubernetes_client::{ApiPath, ApiRequest, Method, PatchType, RawApi};
use futures::StreamExt;
use serde_json::{json, Value};

use super::conversion_report::{render, Run, Setup};
use super::convert_metric::{self, Served};
use super::live::Live;
use super::machine::{loadavg, Machine};
use super::measure::{median, pid_cpu_seconds};
use super::operator_webhook::{remove_configuration, webhook_args};
use super::report::Block;
use super::resource::{is_ready, GROUP, PLURAL};
use blue_testbed::cluster::manifests::{crd_for, CRD_NAME};
use blue_testbed::support::wait::eventually;
use blue_testbed::world::{operator, Transport, World};

/// Objects in the namespace: each list holds them all.
const OBJECTS: usize = 1_000;
const RUNS: usize = 3;
/// Lists timed at each version per run, interleaved.
const LISTS: usize = 10;
/// Old-version lists the CPU is measured across, per run.
const CPU_LISTS: usize = 10;
/// Creates in flight at once while the objects are written.
const CREATORS: usize = 16;
/// The next release's binary (blue-e2e builds the example's v1beta1
/// runner under this name).
const BINARY: (&str, &str) = ("blue-e2e", "e2e-local-configmap-operator-v1beta1");
/// How long the operator may take to make the objects Ready before the
/// runs start anyway (the list is what is measured; a settled operator
/// only makes the idle baseline steadier).
const SETTLE: Duration = Duration::from_secs(240);

/// The collection path at `version` in `ns`.
fn collection(ns: &str, version: &str) -> Result<ApiPath> {
    Ok(ApiPath::parse(&format!(
        "/apis/{GROUP}/{version}/namespaces/{ns}/{PLURAL}"
    ))?)
}

/// A LocalConfigMap at v1beta1, with the description v1alpha1 cannot
/// express (so each down-conversion keeps it on the object).
fn object(i: usize) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/v1beta1"), "kind": "LocalConfigMap",
        "metadata": {"name": format!("c-{i:05}")},
        "spec": {
            "reconcileInterval": "1h",
            "config": {"data": {"k": format!("v{i}")}, "description": "bench object"},
        },
    })
}

/// The operator's metrics address: a port free now.
fn metrics_address() -> Result<String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    Ok(format!("127.0.0.1:{port}"))
}

/// What the operator's `/convert` served so far.
fn served(metrics: &str) -> Result<Served> {
    let text = blue_e2e::scrape::http_get(metrics, "/metrics")?;
    Ok(convert_metric::parse(&text))
}

/// Lists `path` once: its milliseconds; every object there, at `version`.
fn timed_list(live: &Live, api: &Arc<dyn RawApi>, path: &ApiPath, version: &str) -> Result<f64> {
    let started = Instant::now();
    let answer = live.rt.block_on(api.send(ApiRequest::get(path.clone())))?;
    let took = started.elapsed().as_secs_f64() * 1e3;
    let body = answer.body.unwrap_or_default();
    let items = body["items"].as_array().context("a list without items")?;
    ensure!(items.len() == OBJECTS, "{} objects listed", items.len());
    let want = format!("{GROUP}/{version}");
    ensure!(
        items.iter().all(|o| o["apiVersion"] == want.as_str()),
        "an object not at {want}"
    );
    Ok(took)
}

/// [`LISTS`] lists at each version, interleaved: their times (ms), the
/// old version's first.
fn interleaved(
    live: &Live,
    api: &Arc<dyn RawApi>,
    old_path: &ApiPath,
    stored_path: &ApiPath,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let (mut old, mut stored) = (Vec::new(), Vec::new());
    for i in 0..LISTS {
        // Alternate which goes first, so neither always follows the other.
        if i % 2 == 0 {
            old.push(timed_list(live, api, old_path, "v1alpha1")?);
            stored.push(timed_list(live, api, stored_path, "v1beta1")?);
        } else {
            stored.push(timed_list(live, api, stored_path, "v1beta1")?);
            old.push(timed_list(live, api, old_path, "v1alpha1")?);
        }
    }
    Ok((old, stored))
}

/// Sends `requests`, [`CREATORS`] at a time; the first failure.
fn send_all(live: &Live, api: &Arc<dyn RawApi>, requests: Vec<ApiRequest>) -> Result<()> {
    let sends = requests.into_iter().map(|r| {
        let api = api.clone();
        async move { api.send(r).await.map(drop) }
    });
    let done = futures::stream::iter(sends).buffer_unordered(CREATORS);
    let results: Vec<_> = live.rt.block_on(done.collect());
    Ok(results.into_iter().collect::<Result<(), _>>()?)
}

/// The next release's CRD (stored at v1beta1) over the testbed's, the
/// operator serving its conversion, and the objects written.
fn set_up(live: &Live, world: &mut World, api: &Arc<dyn RawApi>, metrics: &str) -> Result<u32> {
    let (crd, _) = crd_for(&world.kube, |cel| {
        local_configmap_operator::cli::v1beta1_runner().crd_yaml(cel)
    })?;
    world.kube.apply_crd(&crd, CRD_NAME)?;
    let mut args = webhook_args(world);
    args.extend(["--metrics-bind".into(), metrics.into()]);
    world.start_operator(&args)?;
    eventually(
        "the CRD's conversion pointed at the operator",
        Duration::from_secs(60),
        || {
            let crd = world.kube.json(&["get", "crd", CRD_NAME, "-o", "json"])?;
            let url = &crd["spec"]["conversion"]["webhook"]["clientConfig"]["url"];
            let path = blue_kubernetes::versions::Conversion::PATH;
            ensure!(url.as_str().is_some_and(|u| u.ends_with(path)), "{url}");
            Ok(())
        },
    )?;
    let ns = world.kube.namespace().to_string();
    let stored = collection(&ns, "v1beta1")?;
    let creates =
        (0..OBJECTS).map(|i| ApiRequest::new(Method::Post, stored.clone()).with_body(object(i)));
    let t = Instant::now();
    send_all(live, api, creates.collect())?;
    eprintln!(
        "[conversion] {OBJECTS} objects written at v1beta1 in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let ready = loop {
        let answer = live
            .rt
            .block_on(api.send(ApiRequest::get(stored.clone())))?;
        let body = answer.body.unwrap_or_default();
        let items = body["items"].as_array().cloned().unwrap_or_default();
        let ready = items.iter().filter(|o| is_ready(o)).count();
        if ready == OBJECTS || t.elapsed() > SETTLE {
            break ready;
        }
        std::thread::sleep(Duration::from_secs(2));
    };
    eprintln!(
        "[conversion] {ready} of {OBJECTS} Ready after {:.0}s",
        t.elapsed().as_secs_f64()
    );
    // The first list at v1alpha1 converts (the CA bundle has reached the
    // API server) before anything is timed.
    let old = collection(&ns, "v1alpha1")?;
    eventually("a list at v1alpha1", Duration::from_secs(60), || {
        timed_list(live, api, &old, "v1alpha1").map(drop)
    })?;
    world.operator()?.pid().context("the operator's pid")
}

/// One run: the interleaved lists timed, then the CPU across old-version
/// lists against an idle wall time as long.
fn one_run(live: &Live, api: &Arc<dyn RawApi>, ns: &str, pid: u32, metrics: &str) -> Result<Run> {
    let (old_path, stored_path) = (collection(ns, "v1alpha1")?, collection(ns, "v1beta1")?);
    let (old, stored) = interleaved(live, api, &old_path, &stored_path)?;
    // The same lists served from the watch cache (`resourceVersion=0`, as
    // informers and reflectors list): the API server keeps a cache per
    // served version, converted once as objects enter it.
    let cached = |p: &ApiPath| p.clone().with_query("resourceVersion", "0");
    let before_cached = served(metrics)?;
    let (cached_old, cached_stored) =
        interleaved(live, api, &cached(&old_path), &cached(&stored_path))?;
    let cached_reviews = before_cached.until(served(metrics)?).reviews;
    let cpu = || pid_cpu_seconds(pid).context("the operator is gone");
    let (served_before, cpu_before, t) = (served(metrics)?, cpu()?, Instant::now());
    for _ in 0..CPU_LISTS {
        timed_list(live, api, &old_path, "v1alpha1")?;
    }
    let (wall, cpu_lists, served_after) = (t.elapsed(), cpu()?, served(metrics)?);
    std::thread::sleep(wall);
    let cpu_idle = cpu()?;
    let busy = (cpu_lists - cpu_before) - (cpu_idle - cpu_lists);
    let converted = (CPU_LISTS * OBJECTS) as f64;
    let by_webhook = served_before.until(served_after);
    Ok(Run {
        old_ms: median(&old),
        stored_ms: median(&stored),
        cached_old_ms: median(&cached_old),
        cached_stored_ms: median(&cached_stored),
        cached_reviews,
        cpu_us_per_object: busy * 1e6 / converted,
        reviews: by_webhook.reviews,
        served_us_per_object: by_webhook.seconds * 1e6 / converted,
    })
}

/// Stops the operator and removes what it and the runs left: its webhook
/// configuration, then the objects' finalizers and the objects
/// (concurrently: the installation's own removal patches them one
/// kubectl at a time).
fn tear_down(live: &Live, world: &mut World, api: &Arc<dyn RawApi>) -> Result<()> {
    if world.operator.is_some() {
        world.stop_operator()?;
    }
    remove_configuration(world)?;
    let ns = world.kube.namespace().to_string();
    let stored = collection(&ns, "v1beta1")?;
    let answer = live
        .rt
        .block_on(api.send(ApiRequest::get(stored.clone())))?;
    let body = answer.body.unwrap_or_default();
    let names: Vec<String> = (body["items"].as_array().into_iter().flatten())
        .filter(|o| o["metadata"]["finalizers"].is_array())
        .filter_map(|o| o["metadata"]["name"].as_str().map(String::from))
        .collect();
    let patches = names.iter().map(|name| {
        let path = ApiPath::parse(&format!("{}/{name}", stored.as_str()));
        let patch = json!({"metadata": {"finalizers": null}});
        path.map(|p| ApiRequest::new(Method::Patch(PatchType::Merge), p).with_body(patch))
    });
    send_all(live, api, patches.collect::<Result<_, _>>()?)?;
    let delete = ApiRequest::new(Method::Delete, stored);
    live.rt.block_on(api.send(delete))?;
    Ok(())
}

pub fn run(live: &Live, machine: &Machine) -> Result<Block> {
    let started = Instant::now();
    let bed = live.testbed("bench-conversion")?;
    let mut world = bed.world(Transport::Proxy);
    world.binary = operator::build_bins(&[BINARY], true)?.remove(0);
    let proxy = live.proxy()?;
    let api: Arc<dyn RawApi> = proxy.clone();
    let metrics = metrics_address()?;
    let measured = (|| {
        let pid = set_up(live, &mut world, &api, &metrics)?;
        let ns = world.kube.namespace().to_string();
        (1..=RUNS)
            .map(|i| {
                let run = one_run(live, &api, &ns, pid, &metrics)?;
                eprintln!(
                    "[conversion] run {i}: {:.2} ms at v1alpha1, {:.2} ms at v1beta1 ({:.2}x), {:.2} µs CPU per object",
                    run.old_ms,
                    run.stored_ms,
                    run.ratio(),
                    run.cpu_us_per_object
                );
                Ok(run)
            })
            .collect::<Result<Vec<Run>>>()
    })();
    let cleaned = tear_down(live, &mut world, &api);
    live.rt.block_on(proxy.shutdown());
    drop(world);
    bed.down()?;
    let runs = measured?;
    cleaned?;
    let load_start: f64 = (machine.load_start.split(' ').next())
        .and_then(|l| l.parse().ok())
        .unwrap_or(0.0);
    let setup = Setup {
        objects: OBJECTS,
        lists: LISTS,
        cpu_lists: CPU_LISTS,
        context: format!(
            "{RUNS} runs of `cargo xtask bench --only conversion` in {:.0} s; {}, commit {}, load {} at start, {} at end",
            started.elapsed().as_secs_f64(),
            machine.date,
            machine.commit,
            machine.load_start,
            loadavg()
        ),
        busy: load_start > machine.cores as f64,
    };
    Ok(Block {
        key: "conversion",
        title: "Conversion webhook".into(),
        body: render(&setup, &runs),
    })
}
