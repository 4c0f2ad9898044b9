//! An example operator as a separate process: started with its output in
//! a log file, stopped with SIGTERM (it drains), and cleaned up by a
//! watchdog if the test process dies.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Duration;

use anyhow::{Context, Result};

use blue_envtest::process::{kill_group, release_group, ManagedProcess, Watchdog};

use super::processes::{all, stat_fields};

/// How long a SIGTERM'd operator may take to drain before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// The LocalConfigMap operator, this package's binary.
pub const LCM_BINARY: &str = env!("CARGO_BIN_EXE_e2e-local-configmap-operator");
/// The PostgreSQL operator, this package's binary.
pub const PG_BINARY: &str = env!("CARGO_BIN_EXE_e2e-postgres-operator");

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
    /// if the test process dies without stopping it.
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
        let process = ManagedProcess::spawn("operator", cmd, log.to_path_buf(), None)?;
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

    /// Current length of the log, to look for lines written after it.
    pub fn log_offset(&self) -> u64 {
        log_len(&self.log)
    }

    /// True when a line containing `needle` was written after `offset`.
    pub fn logged_since(&self, offset: u64, needle: &str) -> bool {
        log_since(&self.log, offset).contains(needle)
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
