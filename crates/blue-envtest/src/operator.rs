//! An operator binary as a separate process in a test: its output in a
//! log file, its private files under a scratch directory, stopped with
//! SIGTERM (it drains) and reaped; a watchdog kills its process group and
//! removes the directory if the test process dies first.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Duration;

use crate::error::{io_error, Error};
use crate::process::{kill_group, release_group, ManagedProcess, Watchdog};
use crate::procfs::processes_with_env;

/// How long a SIGTERM'd operator may take to drain before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(30);

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
/// nothing else has it.
pub fn processes_of(work: &Path) -> Vec<String> {
    processes_with_env(&format!("KUBECACHEDIR={}", kube_cache_dir(work).display()))
}

/// A running operator process. Stopped (SIGTERM, then SIGKILL) on drop.
///
/// ```no_run
/// # fn main() -> Result<(), blue_envtest::Error> {
/// use blue_envtest::operator::Operator;
/// let env = blue_envtest::Envtest::shared()?;
/// let work = tempfile::tempdir().unwrap();
/// let args = ["--kubeconfig".to_string(), env.kubeconfig().display().to_string()];
/// let mut op = Operator::start("target/debug/my-operator".as_ref(), &args, &[],
///     &work.path().join("operator.log"), work.path())?;
/// // ... the test's steps ...
/// op.stop_cleanly("my-operator")?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Operator {
    process: Option<ManagedProcess>,
    watchdog: Option<Watchdog>,
    pgid: u32,
    log: PathBuf,
    exit: Option<ExitStatus>,
}

impl Operator {
    /// Starts `binary args...` (with `extra_env`) in its own process group
    /// with stdout and stderr appended to `log`, its private files under
    /// `work`: kubectl honours KUBECACHEDIR, so the discovery cache stays
    /// private, and TMPDIR takes the operator's files (input documents, the
    /// in-cluster kubeconfig, the proxy's directory), removed with `work`
    /// even if the operator is killed. A watchdog kills the group (and
    /// removes `work`) if the test process dies without stopping it.
    pub fn start(
        binary: &Path,
        args: &[String],
        extra_env: &[(String, String)],
        log: &Path,
        work: &Path,
    ) -> Result<Self, Error> {
        let tmp = tmp_dir(work);
        fs::create_dir_all(&tmp).map_err(io_error("creating the operator's TMPDIR"))?;
        let opening = format!("opening {}", log.display());
        let mut header = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(io_error(opening.clone()))?;
        writeln!(header, "=== {} {}", binary.display(), args.join(" "))
            .map_err(io_error(opening))?;
        let mut cmd = Command::new(binary);
        cmd.args(args)
            .env("KUBECACHEDIR", kube_cache_dir(work))
            .env("TMPDIR", tmp);
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

    /// The operator's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(ManagedProcess::pid)
    }

    /// Crashes the operator: SIGKILL to its process alone (not its group:
    /// kubectl children must die by themselves), then reaps it (one dead
    /// already is only reaped). Returns its exit status.
    pub fn crash(&mut self) -> Result<Option<ExitStatus>, Error> {
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
    pub fn stop_cleanly(&mut self, who: &str) -> Result<(), Error> {
        let status = self.stop()?;
        match status.success() {
            true => Ok(()),
            false => Err(Error::NotGraceful {
                who: who.to_string(),
                status: status.to_string(),
            }),
        }
    }

    /// SIGTERM, wait for the drain (SIGKILL after a grace period), reap,
    /// kill anything left in its group. Returns the exit status.
    pub fn stop(&mut self) -> Result<ExitStatus, Error> {
        if let Some(mut p) = self.process.take() {
            p.stop(STOP_GRACE)?;
            self.exit = p.exit_status();
        }
        release_group(&mut self.pgid, &mut self.watchdog);
        self.exit.ok_or_else(|| Error::Command {
            command: "stopping the operator".into(),
            detail: "its exit status is unknown".into(),
        })
    }

    /// SIGKILL to the whole process group (the operator and any kubectl it
    /// is running), as a node failure would; then reaps.
    pub fn kill(&mut self) -> Result<ExitStatus, Error> {
        if self.pgid != 0 {
            kill_group(self.pgid);
        }
        self.stop()
    }

    /// The log file (shared by restarts).
    pub fn log(&self) -> &Path {
        &self.log
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
                eprintln!("warning: stopping the operator: {err}");
            }
        }
    }
}
