//! The example operator as a separate process: built with cargo, started
//! with its output in a log file, stopped with SIGTERM (it drains), and
//! cleaned up by a watchdog if xtask itself dies.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::cluster::control_plane::process::{kill_group, release_group, ManagedProcess, Watchdog};
use crate::support::processes::{all, stat_fields};

/// Cargo package (and binary) name of the example operator.
pub const PACKAGE: &str = "local-configmap-operator";

/// How long a SIGTERM'd operator may take to drain before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// Cargo package (and binary) name of the PostgreSQL example operator.
pub const PG_PACKAGE: &str = "postgres-operator";

/// Builds the operator with cargo, optimised when `release` (for
/// measurements), and returns the binary's path.
pub fn build_profile(release: bool) -> Result<PathBuf> {
    Ok(build(&[PACKAGE], release)?.remove(0))
}

/// Builds the binaries of `packages` (each named like its package) in one
/// cargo run, so they share one build of their dependencies; returns their
/// paths in order.
pub fn build(packages: &[&str], release: bool) -> Result<Vec<PathBuf>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("build");
    for package in packages {
        cmd.args(["--package", package, "--bin", package]);
    }
    let mut child = cmd
        .arg("--message-format=json-render-diagnostics")
        .args(release.then_some("--release"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("running cargo build")?;
    let mut binaries = vec![None; packages.len()];
    let stdout = child.stdout.take().context("cargo stdout")?;
    for line in BufReader::new(stdout).lines() {
        let Ok(msg) = serde_json::from_str::<Value>(&line?) else {
            continue;
        };
        let built = packages.iter().position(|p| msg["target"]["name"] == *p);
        if let (Some(i), "compiler-artifact") = (built, msg["reason"].as_str().unwrap_or("")) {
            if let Some(exe) = msg["executable"].as_str() {
                binaries[i] = Some(PathBuf::from(exe));
            }
        }
    }
    let status = child.wait().context("waiting for cargo build")?;
    if !status.success() {
        bail!("cargo build of {} failed ({status})", packages.join(", "));
    }
    let named = binaries.into_iter().zip(packages);
    named
        .map(|(b, p)| b.with_context(|| format!("cargo build reported no {p} executable")))
        .collect()
}

/// The TMPDIR of the operators started with scratch directory `work`.
pub fn tmp_dir(work: &Path) -> PathBuf {
    work.join("operator-tmp")
}

/// Their KUBECACHEDIR: kubectl inherits it, so it marks their children.
pub fn kube_cache_dir(work: &Path) -> PathBuf {
    work.join("operator-kube-cache")
}

/// Live processes started by the operators with scratch directory `work`
/// (themselves included): kubectl inherits their private `KUBECACHEDIR`,
/// nothing else here has it.
pub fn processes_of(work: &Path) -> Vec<String> {
    let marker = format!("KUBECACHEDIR={}", kube_cache_dir(work).display());
    all()
        .into_iter()
        .filter(|(_, path)| {
            fs::read(path.join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == marker.as_bytes()))
        })
        // Zombies own nothing any more.
        .filter(|(pid, _)| stat_fields(*pid).is_some_and(|f| f.first().is_some_and(|s| s != "Z")))
        .map(|(_, path)| {
            let cmd = fs::read(path.join("cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmd).replace('\0', " ")
        })
        .collect()
}

/// A running operator. Stopped (SIGTERM, then SIGKILL) on drop.
#[derive(Debug)]
pub struct Operator {
    process: Option<ManagedProcess>,
    watchdog: Option<Watchdog>,
    pgid: u32,
    log: PathBuf,
    exit: Option<ExitStatus>,
}

impl Operator {
    /// Starts `binary args...` in its own process group with stdout and
    /// stderr appended to `log`, its private files under `work`: kubectl
    /// honours KUBECACHEDIR, so the discovery cache stays private, and
    /// TMPDIR takes the operator's files (input documents, the in-cluster
    /// kubeconfig, the proxy's directory), removed with `work` even if the
    /// operator is killed. A watchdog kills the group (and removes `work`)
    /// if xtask dies without stopping it.
    pub fn start(
        binary: &Path,
        args: &[String],
        extra_env: &[(String, String)],
        log: &Path,
        work: &Path,
    ) -> Result<Self> {
        let tmp = tmp_dir(work);
        fs::create_dir_all(&tmp).context("creating the operator's TMPDIR")?;
        let cache = kube_cache_dir(work);
        let mut header = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("opening {}", log.display()))?;
        writeln!(header, "=== {} {}", binary.display(), args.join(" "))?;
        let mut cmd = Command::new(binary);
        cmd.args(args).env("KUBECACHEDIR", cache).env("TMPDIR", tmp);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let process = crate::support::interrupt::with_default_mask(|| {
            ManagedProcess::spawn("operator", cmd, log.to_path_buf(), None)
        })?;
        let pgid = process.pid();
        let watchdog = Watchdog::arm(pgid, work)?;
        Ok(Self {
            process: Some(process),
            watchdog: Some(watchdog),
            pgid,
            log: log.to_path_buf(),
            exit: None,
        })
    }

    /// The operator's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(ManagedProcess::pid)
    }

    /// Crashes the operator: SIGKILL to its process alone (not its group:
    /// kubectl children must die by themselves), then reaps it (one dead
    /// already is only reaped). Returns its exit status.
    pub fn crash(&mut self) -> Result<Option<ExitStatus>> {
        if let Some(p) = self.process.as_mut() {
            p.kill()?;
            self.exit = p.exit_status();
        }
        Ok(self.exit)
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        self.process
            .as_mut()
            .is_some_and(|p| p.exit_status().is_none())
    }

    /// Stops it like [`Operator::stop`] and requires exit status 0 (a
    /// graceful drain); `who` names it in the error.
    pub fn stop_cleanly(&mut self, who: &str) -> Result<()> {
        let status = self.stop()?;
        anyhow::ensure!(status.success(), "{who} exited with {status} on SIGTERM");
        Ok(())
    }

    /// SIGTERM, wait for the drain (SIGKILL after a grace period), reap,
    /// kill anything left in its group. Returns the exit status.
    pub fn stop(&mut self) -> Result<ExitStatus> {
        if let Some(mut p) = self.process.take() {
            p.stop(STOP_GRACE)?;
            self.exit = p.exit_status();
        }
        release_group(&mut self.pgid, &mut self.watchdog);
        self.exit.context("the operator's exit status is unknown")
    }

    /// SIGKILL to the whole process group (the operator and any kubectl it
    /// is running), as a node failure would; then reaps.
    pub fn kill(&mut self) -> Result<ExitStatus> {
        if self.pgid != 0 {
            kill_group(self.pgid);
        }
        self.stop()
    }

    /// The log file (shared by restarts).
    pub fn log(&self) -> &Path {
        &self.log
    }
}

/// Current length of the log at `path`.
pub fn log_len(path: &Path) -> u64 {
    fs::metadata(path).map_or(0, |m| m.len())
}

/// What was written to the log at `path` after `offset` ("" if unreadable).
pub fn log_since(path: &Path, offset: u64) -> String {
    let bytes = fs::read(path).unwrap_or_default();
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(bytes.len());
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

impl Drop for Operator {
    fn drop(&mut self) {
        if self.process.is_some() || self.pgid != 0 {
            if let Err(err) = self.stop() {
                eprintln!("warning: stopping the operator: {err:#}");
            }
        }
    }
}
