//! Everything a check needs: kubectl bound to the test namespace, the
//! operator process (restartable), and scratch space; and the testbed that
//! sets all of it up and tears it down.

pub mod election;
pub mod in_cluster;
pub mod operator;
pub mod postgres;
pub mod scrape;
mod testbed;

pub use testbed::Testbed;

use std::path::PathBuf;
use std::process::ExitStatus;

use anyhow::{ensure, Context, Result};
use serde_json::Value;

use crate::cluster::control_plane::process::log_tail;
use crate::cluster::Cluster;
use crate::support::kube::{Kube, LCM};
use crate::support::wait::eventually;
use operator::Operator;

/// The operator's poll period in the e2e: short, so checks are quick, but
/// not so short that kubectl's ~0.1 s of CPU per call starves two cores.
pub const POLL_MS: u64 = 250;
/// The checks judge each periodic check by the `lastReconcileTime` it
/// records, so the operator writes status on every check (heartbeat 0, as
/// the reference does); quiet checks are the testkit's (tests/quiet_checks.rs).
pub const EVERY_CHECK_WRITES: [&str; 2] = ["--status-heartbeat-ms", "0"];

/// The operator's transport (`--transport`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// One long-lived `kubectl proxy` (the operator's default).
    Proxy,
    /// One kubectl process per request.
    Kubectl,
}

impl Transport {
    const NAMES: [(Transport, &'static str); 2] =
        [(Transport::Proxy, "proxy"), (Transport::Kubectl, "kubectl")];

    pub fn parse(text: &str) -> Result<Self> {
        let found = Self::NAMES.iter().find(|(_, name)| *name == text);
        found
            .map(|(t, _)| *t)
            .context("--transport must be proxy or kubectl")
    }

    pub fn as_str(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(t, _)| *t == self)
            .map_or("", |n| n.1)
    }
}

/// Shared state of one e2e run.
pub struct World<'a> {
    pub cluster: &'a Cluster,
    /// kubectl in the test namespace.
    pub kube: Kube,
    pub binary: PathBuf,
    /// The PostgreSQL example operator's binary.
    pub pg_binary: PathBuf,
    /// Scratch directory (removed at the end).
    pub work: PathBuf,
    /// Whether the API server enforces the CRD's CEL rules.
    pub cel: bool,
    pub operator: Option<Operator>,
    /// Extra environment for the operator (e.g. chaos's counting `KUBECTL`).
    pub operator_env: Vec<(String, String)>,
    pub transport: Transport,
}

impl World<'_> {
    pub fn operator_log(&self) -> PathBuf {
        self.work.join("operator.log")
    }

    /// Flags connecting the operator the way this run's kubectl connects,
    /// polling every [`POLL_MS`].
    pub fn admin_args(&self) -> Vec<String> {
        let mut args = self.connect_args();
        args.extend(["--poll-ms".into(), POLL_MS.to_string()]);
        args.extend(EVERY_CHECK_WRITES.map(String::from));
        args
    }

    /// [`World::admin_args`] with the operator's default poll period.
    pub fn connect_args(&self) -> Vec<String> {
        let mut args = vec!["--context".to_string(), self.kube.context().to_string()];
        if let Some(k) = self.kube.kubeconfig() {
            args.extend(["--kubeconfig".into(), k.display().to_string()]);
        }
        args.extend([
            "--namespace".into(),
            self.kube.namespace().to_string(),
            "--transport".into(),
            self.transport.as_str().into(),
        ]);
        args
    }

    /// The operator's TMPDIR (its private files and the proxy's directory).
    pub fn operator_tmp(&self) -> PathBuf {
        operator::tmp_dir(&self.work)
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
    pub fn spawn_operator(&self, args: &[String], log: &std::path::Path) -> Result<Operator> {
        Ok(Operator::start(
            &self.binary,
            args,
            &self.operator_env,
            log,
            &self.work,
        )?)
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

    /// Restarts the operator (context mode) if it is not running.
    pub fn ensure_operator(&mut self) -> Result<()> {
        if self.operator.as_mut().is_some_and(Operator::is_running) {
            return Ok(());
        }
        println!("  (the operator is not running: restarting it)");
        if let Some(mut dead) = self.operator.take() {
            let _ = dead.stop();
        }
        let args = self.admin_args();
        self.start_operator(&args)
    }

    pub fn operator(&mut self) -> Result<&mut Operator> {
        self.operator.as_mut().context("no operator is running")
    }

    /// Prints what helps understand a failed check: the resource's status
    /// and the end of the operator's log.
    pub fn diagnose(&mut self, resource: Option<&str>) {
        if let Some(name) = resource {
            match self.kube.get(LCM, name) {
                Ok(Some(r)) => {
                    println!(
                        "  --- localconfigmap/{name}: generation {}, deletionTimestamp {}, finalizers {}; status:",
                        r["metadata"]["generation"],
                        r["metadata"]["deletionTimestamp"],
                        r["metadata"]["finalizers"]
                    );
                    let status = serde_json::to_string_pretty(&r["status"]).unwrap_or_default();
                    println!("{}", indent(&status));
                }
                Ok(None) => println!("  --- localconfigmap/{name} does not exist"),
                Err(err) => println!("  --- localconfigmap/{name}: {err:#}"),
            }
        }
        let running = self.operator.as_mut().map(Operator::is_running);
        println!(
            "  --- operator ({}), last lines of {}:",
            match running {
                Some(true) => "running",
                Some(false) => "exited",
                None => "not started",
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
        self.work.join(name)
    }
}

/// `text` indented by four spaces, for diagnostics.
pub fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `status.phase` of a resource ("" when absent).
pub fn phase(r: &Value) -> &str {
    r["status"]["phase"].as_str().unwrap_or("")
}

/// The condition of `kind` in a resource's status.
pub fn condition<'v>(r: &'v Value, kind: &str) -> Option<&'v Value> {
    r["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

/// Desired state handled and converged: phase Ready, `Ready=True/Converged`,
/// `observedGeneration == generation` and the request token acknowledged.
pub fn check_ready(r: &Value, request: &str) -> Result<()> {
    let ready = condition(r, "Ready");
    ensure!(
        phase(r) == "Ready"
            && ready.is_some_and(|c| c["status"] == "True" && c["reason"] == "Converged"),
        "phase is {:?}, Ready condition {}",
        phase(r),
        ready.map_or("absent".into(), |c| format!(
            "{}/{}",
            c["status"], c["reason"]
        ))
    );
    check_acknowledged(r, request)
}

/// `observedGeneration == generation` and the request token (annotation
/// `request`) handled.
pub fn check_acknowledged(r: &Value, request: &str) -> Result<()> {
    let generation = &r["metadata"]["generation"];
    let observed = &r["status"]["observedGeneration"];
    ensure!(
        observed == generation,
        "observedGeneration {observed} != generation {generation}"
    );
    let token = r["metadata"]["annotations"][request].as_str().unwrap_or("");
    let handled = r["status"]["lastHandledRequest"].as_str().unwrap_or("");
    ensure!(
        token == handled,
        "lastHandledRequest {handled:?} != annotation {token:?}"
    );
    Ok(())
}
