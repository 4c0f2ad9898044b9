//! The fixture every LocalConfigMap check starts from: a namespace of its
//! own on the shared control plane (or a control plane of its own, for
//! checks that restart it or watch every namespace), the example's CRD
//! and RBAC, kubectl bound to the namespace, a scratch directory and the
//! operator process (restartable). [`World::finish`] stops everything the
//! check started and checks that nothing is left.

pub mod election;
pub mod in_cluster;
pub mod manifests;
pub mod wait;

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use anyhow::{ensure, Context, Result};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use blue_envtest::process::log_tail;
use blue_envtest::Envtest;
use serde_json::Value;

use blue_e2e::status::{condition, phase};
use blue_envtest::operator::{self, Operator};
use blue_envtest::Kubectl;
use manifests::LCM;
use wait::eventually;

/// The LocalConfigMap operator, this package's binary.
pub const LCM_BINARY: &str = env!("CARGO_BIN_EXE_e2e-local-configmap-operator");
/// The LocalConfigMap operator's next release (stored at v1beta1).
pub const LCM_V1BETA1_BINARY: &str = env!("CARGO_BIN_EXE_e2e-local-configmap-operator-v1beta1");
/// The PostgreSQL operator, this package's binary.
pub const PG_BINARY: &str = env!("CARGO_BIN_EXE_e2e-postgres-operator");

/// The operator's poll period here: short, so checks are quick, but not
/// so short that kubectl's ~0.1 s of CPU per call starves two cores.
pub const POLL_MS: u64 = 250;
/// The checks judge each periodic check by the `lastReconcileTime` it
/// records, so the operator writes status on every check (heartbeat 0, as
/// the reference does); quiet checks are the testkit's (tests/quiet_checks.rs).
pub const EVERY_CHECK_WRITES: [&str; 2] = ["--status-heartbeat-ms", "0"];

/// Adds `hooks` (comma-separated) to the operator's `--test-hooks`: to
/// the one `args` has (it takes one), else as a new one.
pub fn add_test_hooks(args: &mut Vec<String>, hooks: &str) {
    match args.iter().position(|a| a == "--test-hooks") {
        Some(at) if at + 1 < args.len() => args[at + 1] = format!("{},{hooks}", args[at + 1]),
        _ => args.extend(["--test-hooks".to_string(), hooks.to_string()]),
    }
}

/// The operator's transport (`--transport`): `BLUE_E2E_TRANSPORT=kubectl`
/// runs the checks on per-call kubectl, else the long-lived proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// One long-lived `kubectl proxy` (the operator's default).
    Proxy,
    /// One kubectl process per request.
    Kubectl,
}

impl Transport {
    fn from_env() -> Self {
        match std::env::var("BLUE_E2E_TRANSPORT").as_deref() {
            Ok("kubectl") => Transport::Kubectl,
            _ => Transport::Proxy,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Proxy => "proxy",
            Transport::Kubectl => "kubectl",
        }
    }
}

/// The control plane a check runs on.
enum Env {
    /// The test process's shared one: the check gets a namespace.
    Shared(&'static Envtest),
    /// One of the check's own, stopped at the end.
    Own(Box<Envtest>),
}

impl Deref for Env {
    type Target = Envtest;
    fn deref(&self) -> &Envtest {
        match self {
            Env::Shared(env) => env,
            Env::Own(env) => env,
        }
    }
}

/// Where the API server is, as seen from this machine.
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    /// PEM of the CA that signed the server certificate.
    pub ca_pem: Vec<u8>,
}

/// One check's cluster, namespace, scratch space and operator.
pub struct World {
    // Fields drop in declaration order: the operators before the scratch
    // directory they use, the control plane last.
    pub operator: Option<Operator>,
    /// kubectl in the check's namespace.
    pub kube: Kubectl,
    /// Extra environment for the operator.
    pub operator_env: Vec<(String, String)>,
    pub transport: Transport,
    /// Whether the API server enforces the CRD's CEL rules (never on 1.20).
    pub cel: bool,
    /// The operator binary started ([`LCM_BINARY`] unless a check runs
    /// another release).
    pub binary: &'static str,
    work: tempfile::TempDir,
    env: Env,
}

impl World {
    /// A namespace of the check's own (`<prefix>-<random>`) on the shared
    /// control plane; no operator runs yet.
    pub fn new(prefix: &str) -> Result<Self> {
        Self::on(Env::Shared(Envtest::shared()?), prefix)
    }

    /// [`World::new`] on a control plane of the check's own: for checks
    /// that restart the API server or manage every namespace.
    pub fn on_own_control_plane(prefix: &str) -> Result<Self> {
        Self::on(Env::Own(Box::new(Envtest::start()?)), prefix)
    }

    /// [`World::new`] with the operator started with [`World::admin_args`].
    pub fn with_operator(prefix: &str) -> Result<Self> {
        let mut w = Self::new(prefix)?;
        w.start_operator(&w.admin_args())?;
        Ok(w)
    }

    fn on(env: Env, prefix: &str) -> Result<Self> {
        env.install_crd(&manifests::crd()?)?;
        let namespace = env.namespace(prefix)?;
        let work = tempfile::Builder::new()
            .prefix(&format!("blue-e2e-{namespace}-"))
            .tempdir()
            .context("creating the scratch directory")?;
        let cp = env.control_plane();
        let kube = Kubectl::new(
            cp.kubectl().to_path_buf(),
            Some(cp.kubeconfig_path().to_path_buf()),
            cp.context(),
            &work.path().join("kube-cache"),
            &namespace,
        );
        kube.apply(&manifests::in_namespace(manifests::RBAC, &namespace))?;
        Ok(Self {
            operator: None,
            kube,
            operator_env: Vec::new(),
            transport: Transport::from_env(),
            cel: false,
            binary: LCM_BINARY,
            work,
            env,
        })
    }

    /// Installs a CRD (once per control plane) and waits until it is served.
    pub fn install_crd(&self, crd: &Value) -> Result<()> {
        Ok(self.env.install_crd(crd)?)
    }

    /// The Envtest underneath (a test's own webhook, its client).
    pub fn envtest(&self) -> &Envtest {
        &self.env
    }

    /// The control plane underneath (to restart the API server).
    pub fn control_plane(&self) -> &blue_envtest::ControlPlane {
        self.env.control_plane()
    }

    /// True when the control plane is the check's own.
    pub fn owns_the_control_plane(&self) -> bool {
        matches!(self.env, Env::Own(_))
    }

    /// The API server endpoint and CA from the kubeconfig, for running the
    /// operator "in-cluster" from outside.
    pub fn endpoint(&self) -> Result<Endpoint> {
        let view = self
            .kube
            .json(&["config", "view", "--minify", "--raw", "-o", "json"])?;
        let cluster = &view["clusters"][0]["cluster"];
        let server = cluster["server"].as_str().context("no server")?;
        let authority = server.strip_prefix("https://").context("not https")?;
        let (host, port) = authority.rsplit_once(':').context("no port")?;
        let ca_pem = match (
            cluster["certificate-authority-data"].as_str(),
            cluster["certificate-authority"].as_str(),
        ) {
            (Some(data), _) => STANDARD.decode(data.trim())?,
            (None, Some(path)) => std::fs::read(path).with_context(|| format!("reading {path}"))?,
            (None, None) => anyhow::bail!("the kubeconfig names no certificate authority"),
        };
        Ok(Endpoint {
            host: host.to_string(),
            port: port.parse().context("bad API server port")?,
            ca_pem,
        })
    }

    /// The scratch directory (removed at the end).
    pub fn work(&self) -> &Path {
        self.work.path()
    }

    pub fn operator_log(&self) -> PathBuf {
        self.scratch("operator.log")
    }

    /// Flags connecting the operator the way the checks' kubectl connects,
    /// polling every [`POLL_MS`].
    pub fn admin_args(&self) -> Vec<String> {
        let mut args = self.connect_args();
        args.extend(["--poll-ms".into(), POLL_MS.to_string()]);
        args.extend(EVERY_CHECK_WRITES.map(String::from));
        args
    }

    /// [`World::admin_args`] with the operator's default poll period.
    pub fn connect_args(&self) -> Vec<String> {
        blue_e2e::connect::connect_args(&self.kube, self.transport.as_str())
    }

    /// The operator's TMPDIR (its private files and the proxy's directory).
    pub fn operator_tmp(&self) -> PathBuf {
        operator::tmp_dir(self.work())
    }

    /// Starts the operator with `args` (stopping a running one first).
    pub fn start_operator(&mut self, args: &[String]) -> Result<()> {
        if self.operator.is_some() {
            self.stop_operator()?;
        }
        let log = self.operator_log();
        self.operator = Some(self.spawn_operator(args, &log)?);
        Ok(())
    }

    /// Starts one more operator process with `args`, logging to `log`; the
    /// caller owns (and stops) it.
    pub fn spawn_operator(&self, args: &[String], log: &Path) -> Result<Operator> {
        let binary = Path::new(self.binary);
        Ok(Operator::start(
            binary,
            args,
            &self.operator_env,
            log,
            self.work(),
        )?)
    }

    /// Starts one more operator process from `binary` (another release)
    /// with `args`, logging to `early.log` in the scratch directory; the
    /// caller owns (and stops) it.
    pub fn spawn_with(&self, binary: &str, args: &[String]) -> Result<Operator> {
        let log = self.scratch("early.log");
        let (env, work) = (&self.operator_env, self.work());
        Ok(Operator::start(Path::new(binary), args, env, &log, work)?)
    }

    /// Stops the operator (SIGTERM, drain) and returns its exit status.
    pub fn stop_operator(&mut self) -> Result<ExitStatus> {
        let mut op = self.operator.take().context("no operator is running")?;
        Ok(op.stop()?)
    }

    /// Stops the operator and requires a graceful exit 0.
    pub fn stop_operator_cleanly(&mut self) -> Result<()> {
        let mut op = self.operator.take().context("no operator is running")?;
        Ok(op.stop_cleanly("the operator")?)
    }

    /// Restarts the operator with the usual flags if it is not running.
    pub fn ensure_operator(&mut self) -> Result<()> {
        if self.operator.as_mut().is_some_and(Operator::is_running) {
            return Ok(());
        }
        if let Some(mut dead) = self.operator.take() {
            let _ = dead.stop();
        }
        let args = self.admin_args();
        self.start_operator(&args)
    }

    pub fn operator(&mut self) -> Result<&mut Operator> {
        self.operator.as_mut().context("no operator is running")
    }

    /// Prints what helps understand a failed check (the harness shows a
    /// failed test's output): the resource's status and the end of the
    /// operator's log.
    pub fn diagnose(&mut self, resource: Option<&str>) {
        if let Some(name) = resource {
            match self.kube.get(LCM, name) {
                Ok(Some(r)) => {
                    println!(
                        "--- localconfigmap/{name}: generation {}, deletionTimestamp {}, finalizers {}; status:",
                        r["metadata"]["generation"],
                        r["metadata"]["deletionTimestamp"],
                        r["metadata"]["finalizers"]
                    );
                    let status = serde_json::to_string_pretty(&r["status"]).unwrap_or_default();
                    println!("{}", indent(&status));
                }
                Ok(None) => println!("--- localconfigmap/{name} does not exist"),
                Err(err) => println!("--- localconfigmap/{name}: {err:#}"),
            }
        }
        let running = self.operator.as_mut().map(Operator::is_running);
        println!(
            "--- operator ({}), last lines of {}:",
            match running {
                Some(true) => "running",
                Some(false) => "exited",
                None => "not running",
            },
            self.operator_log().display()
        );
        println!("{}", indent(&log_tail(&self.operator_log(), 25)));
    }

    /// Waits up to `deadline` for resource `name` to reach phase `want`
    /// with the Ready condition's `reason` and to pass `also`.
    pub fn wait_phase(
        &self,
        name: &str,
        (want, reason): (&str, &str),
        deadline: std::time::Duration,
        also: impl Fn(&Value) -> Result<()>,
    ) -> Result<Value> {
        eventually(&format!("{name} {want}/{reason}"), deadline, || {
            let r = self.kube.get(LCM, name)?;
            let r = r.with_context(|| format!("localconfigmap {name} does not exist"))?;
            let got = condition(&r, "Ready").map(|c| c["reason"].clone());
            ensure!(
                phase(&r) == want && got.as_ref().is_some_and(|g| g == reason),
                "phase is {:?}, Ready reason {}",
                phase(&r),
                got.unwrap_or(Value::Null)
            );
            also(&r)?;
            Ok(r)
        })
    }

    /// A path in the scratch directory.
    pub fn scratch(&self, name: &str) -> PathBuf {
        self.work().join(name)
    }

    /// Stops the operator, removes the scratch directory (and stops a
    /// control plane of the check's own), then checks that no process
    /// mentions them any more and that they are gone.
    pub fn finish(mut self) -> Result<()> {
        if let Some(mut op) = self.operator.take() {
            op.stop()?;
        }
        let mut gone = vec![self.work().to_path_buf()];
        if let Env::Own(env) = &self.env {
            gone.push(env.control_plane().dir().to_path_buf());
        }
        let World { work, env, .. } = self;
        drop(work);
        if let Env::Own(env) = env {
            (*env).stop()?;
        }
        Ok(blue_envtest::procfs::nothing_left(&gone)?)
    }
}

/// Runs `check` on `w`; after a failure prints the diagnostics (showing
/// `resource`), and in every case [`World::finish`]es.
pub fn run(
    mut w: World,
    resource: Option<&str>,
    check: impl FnOnce(&mut World) -> Result<()>,
) -> Result<()> {
    let result = check(&mut w);
    if result.is_err() {
        w.diagnose(resource);
    }
    let cleanup = w.finish();
    result.and(cleanup)
}

/// `text` indented by four spaces, for diagnostics.
pub fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `metadata.name` of an object ("" when absent).
pub fn name_of(r: &Value) -> &str {
    r["metadata"]["name"].as_str().unwrap_or("")
}
