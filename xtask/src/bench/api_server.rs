//! The real API server of the bench: a local control plane with the CRD the
//! library generates for the no-op package, the controller's kubectl client
//! (through a [`Meter`]), population set-up and a direct HTTPS path (curl)
//! for edits and the floor measurement.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use blue_kubernetes::{controller, start, Config, CrdOptions, Runtime};
use blue_kubernetes_client::{kubectl_client, Client, KubectlOptions};
use blue_testkit::FakeClock;
use serde_json::{json, Value};

use super::measure::field;
use super::meter::Meter;
use super::package::{self, resource_type, GROUP, PLURAL};
use crate::cluster::control_plane::{provision::which, ControlPlane};
use crate::support::kube::Kube;
use crate::support::processes::processes_mentioning;
use crate::support::wait::until;

/// Objects per `kubectl apply` List document.
const APPLY_BATCH: usize = 250;

/// A running control plane prepared for the bench.
pub struct ApiServer {
    pub cp: ControlPlane,
    /// kubectl against it (namespaced calls name their namespace).
    pub kube: Kube,
    /// kube-apiserver and etcd.
    pub server_pids: Vec<u32>,
    pub curl: Option<Curl>,
    cache_dir: PathBuf,
}

impl ApiServer {
    pub fn start() -> Result<Self> {
        let cp = ControlPlane::start()?;
        let cache_dir = cp.dir().join("kube-cache");
        let server_pids = server_pids(cp.dir());
        ensure!(
            server_pids.len() == 2,
            "expected etcd and kube-apiserver, found {server_pids:?}"
        );
        let curl = Curl::new(&cp).context("setting up curl")?;
        let kube = cp.kube();
        // The CRD the library generates for the packages (the stepped one's
        // status has the workflow record too); the local 1.20 server knows
        // no CEL rules.
        let options = CrdOptions::default().with_cel(false);
        let crd = blue_kubernetes::crd(&package::converging(1), &options)?;
        kube.apply_crd(&crd.to_string(), &resource_type())?;
        Ok(Self {
            cp,
            kube,
            server_pids,
            curl,
            cache_dir,
        })
    }

    /// Creates resources `w-<i>` for `i` in `range` in `namespace` (created
    /// first when `range` starts at 0) with `spec.reconcileInterval` =
    /// `interval(i)` and `finalizers` already set, using `kubectl apply -f -`
    /// with List batches.
    pub fn create_resources(
        &self,
        namespace: &str,
        range: std::ops::Range<usize>,
        interval: impl Fn(usize) -> &'static str,
        finalizers: &[&str],
    ) -> Result<()> {
        if range.start == 0 {
            self.kube.ok(&["create", "namespace", namespace], None)?;
        }
        for batch in range.collect::<Vec<_>>().chunks(APPLY_BATCH) {
            let items: Vec<Value> = batch
                .iter()
                .map(|i| {
                    json!({
                        "apiVersion": format!("{GROUP}/v1"),
                        "kind": "BenchWidget",
                        "metadata": {
                            "name": package::name(*i),
                            "namespace": namespace,
                            "finalizers": finalizers,
                        },
                        "spec": {"reconcileInterval": interval(*i), "config": {"size": 1}},
                    })
                })
                .collect();
            let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
            self.kube.in_namespace(namespace).apply(&list.to_string())?;
        }
        Ok(())
    }

    /// The controller's client: kubectl through `meter`, with a private
    /// discovery cache (as the control plane's own kubectl uses).
    pub fn client(&self, meter: &Meter) -> Result<Arc<dyn Client>> {
        let mut options = self.kubectl_options();
        options.runner = Some(meter.runner());
        Ok(Arc::new(kubectl_client(options)?))
    }

    /// Transport options for this control plane (admin context, private
    /// discovery cache).
    pub fn kubectl_options(&self) -> KubectlOptions {
        KubectlOptions::for_context(self.cp.context())
            .with_kubeconfig(self.cp.kubeconfig_path())
            .with_env("KUBECACHEDIR", self.cache_dir.display().to_string())
    }

    /// Edits `spec.config.size` (a new generation) and returns the new
    /// generation and when the server answered, i.e. the edit is committed.
    /// Direct HTTPS when curl is there, so the edit adds no kubectl process.
    pub fn edit(&self, namespace: &str, name: &str, size: u64) -> Result<(i64, Instant)> {
        let body = json!({"spec": {"config": {"size": size}}}).to_string();
        let text = match &self.curl {
            Some(curl) => curl.patch(
                &format!("/apis/{GROUP}/v1/namespaces/{namespace}/{PLURAL}/{name}"),
                &body,
            )?,
            None => {
                let kind = resource_type();
                let args = [
                    "patch",
                    &kind,
                    name,
                    "--type=merge",
                    "-p",
                    &body,
                    "-o",
                    "json",
                ];
                self.kube.in_namespace(namespace).ok(&args, None)?
            }
        };
        let at = Instant::now();
        let v: Value = serde_json::from_str(&text).context("edit response")?;
        let generation = v["metadata"]["generation"]
            .as_i64()
            .context("edit response has no generation")?;
        Ok((generation, at))
    }
}

/// Starts the runtime over `namespace` with the no-op package, polling.
pub fn start_controller(
    rt: &tokio::runtime::Runtime,
    client: Arc<dyn Client>,
    namespace: &str,
    workers: usize,
    poll_ms: u64,
    clock: &FakeClock,
) -> Result<Runtime> {
    let mut config = Config::new(client, vec![package::noop()]);
    config.namespace = namespace.into();
    config.workers = workers;
    config.poll_ms = poll_ms;
    // These parts count kubectl calls per poll cycle: the per-call
    // transport cannot watch, so its runtime lists every poll_ms.
    config.watch = false;
    // Every check writes status, as the reference does: the calls part
    // counts a periodic check's re-read and write, which a quiet check
    // (the default between heartbeats) leaves at the re-read.
    config.status_heartbeat_ms = 0;
    config.now = clock.as_fn();
    let ctl = controller(config)?;
    let _entered = rt.enter();
    Ok(start(ctl)?)
}

/// Waits until `runtime` has completed `k` more poll cycles; returns the
/// poll count. Checked every millisecond, so the caller acts right after a
/// cycle ends (the next list is a process that takes far longer than that).
pub fn wait_polls(runtime: &Runtime, k: u64, timeout: Duration) -> Result<u64> {
    let target = runtime.stats().polls + k;
    let what = format!("{k} poll cycles");
    until(&what, timeout, Duration::from_millis(1), || {
        runtime.stats().polls >= target
    })?;
    Ok(runtime.stats().polls)
}

/// The etcd and kube-apiserver processes whose command line mentions
/// `dir` (the control plane's private directory).
fn server_pids(dir: &Path) -> Vec<u32> {
    processes_mentioning(dir)
        .into_iter()
        .filter(|(_, cmd)| {
            let program = cmd.split(' ').next().unwrap_or_default();
            matches!(program.rsplit('/').next(), Some("etcd" | "kube-apiserver"))
        })
        .filter_map(|(pid, _)| u32::try_from(pid).ok())
        .collect()
}

/// Direct HTTPS requests to the API server with curl and the admin token.
pub struct Curl {
    server: String,
    ca: String,
    /// `Authorization: Bearer ...` in a private file, read with `-H @file`,
    /// so the token is not on any command line.
    header_file: PathBuf,
}

/// One curl request's timings, seconds.
#[derive(Clone, Copy, Debug)]
pub struct CurlTiming {
    /// The curl process, start to exit (spawn, TLS handshake, request).
    pub process: f64,
    /// curl's `time_total`: connect + TLS + request + response.
    pub total: f64,
    /// `time_total - time_appconnect`: the request on an established TLS
    /// connection.
    pub request: f64,
}

impl Curl {
    /// `None` when curl is missing and cannot be installed with apt-get.
    fn new(cp: &ControlPlane) -> Result<Option<Self>> {
        if which("curl").is_none() {
            eprintln!("[bench] curl not found; trying apt-get install -y curl");
            let _ = Command::new("apt-get")
                .args(["install", "-y", "-q", "curl"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            if which("curl").is_none() {
                eprintln!("[bench] no curl: skipping the direct-HTTPS floor");
                return Ok(None);
            }
        }
        let kubeconfig = fs::read_to_string(cp.kubeconfig_path())?;
        let value = |key: &str| {
            let found = field(&kubeconfig, key).map(str::to_string);
            found.with_context(|| format!("no {key} in the kubeconfig"))
        };
        let token = value("token:")?;
        let ca = value("certificate-authority:")?;
        let header_file = cp.dir().join("bench-auth-header");
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&header_file)?
            .write_all(format!("Authorization: Bearer {token}\n").as_bytes())?;
        Ok(Some(Self {
            server: cp.server().to_string(),
            ca,
            header_file,
        }))
    }

    /// GET `path`, discarding the body; timings.
    pub fn get(&self, path: &str) -> Result<CurlTiming> {
        let started = Instant::now();
        let text = self.run(
            "GET",
            path,
            &["-o", "/dev/null", "-w", "%{time_appconnect} %{time_total}"],
        )?;
        let process = started.elapsed().as_secs_f64();
        let nums: Vec<f64> = text
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        ensure!(nums.len() == 2, "unexpected curl timing output {text:?}");
        Ok(CurlTiming {
            process,
            total: nums[1],
            request: nums[1] - nums[0],
        })
    }

    /// A JSON merge patch of `path`; returns the response body.
    pub fn patch(&self, path: &str, body: &str) -> Result<String> {
        let json = "Content-Type: application/merge-patch+json";
        self.run(
            "PATCH",
            path,
            &["-X", "PATCH", "-H", json, "--data-binary", body],
        )
    }

    /// curl `args` against `path`; its stdout. `what` names it in errors.
    fn run(&self, what: &str, path: &str, args: &[&str]) -> Result<String> {
        let out = Command::new("curl")
            .args(["-sS", "--fail", "--cacert", &self.ca, "-H"])
            .arg(format!("@{}", self.header_file.display()))
            .args(args)
            .arg(format!("{}{path}", self.server))
            .output()
            .context("running curl")?;
        ensure!(
            out.status.success(),
            "curl {what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}
