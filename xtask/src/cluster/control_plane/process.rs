//! Child processes of the control plane: spawning with logs, stopping
//! (SIGTERM, grace period, SIGKILL, reap), a watchdog that cleans up when
//! xtask dies, free ports and log tails.

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sys::signal::{self, Signal};
use nix::unistd::Pid;

/// A free TCP port on 127.0.0.1 (free when asked; another process could
/// still take it before we bind it).
pub fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("binding 127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// The last `lines` lines of a (log) file, or a note that it is unreadable.
pub fn log_tail(path: &Path, lines: usize) -> String {
    let mut file = match fs::File::open(path) {
        Ok(f) => f,
        Err(err) => return format!("<cannot read {}: {err}>", path.display()),
    };
    // Only the last 64 KiB matter.
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A long-running child whose stdout and stderr go to a log file.
#[derive(Debug)]
pub struct ManagedProcess {
    name: &'static str,
    child: Child,
    log: PathBuf,
    exited: Option<ExitStatus>,
}

impl ManagedProcess {
    /// Spawns `cmd` with its output appended to `log`. With `group: None` the
    /// child leads a new process group (so a terminal's Ctrl-C does not hit it
    /// directly and we control the shutdown order); else it joins `group`.
    pub fn spawn(
        name: &'static str,
        cmd: &mut Command,
        log: PathBuf,
        group: Option<u32>,
    ) -> Result<Self> {
        use std::os::unix::process::CommandExt;
        let file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| format!("opening {}", log.display()))?;
        let group = group.map_or(0, |g| i32::try_from(g).unwrap_or(0));
        let child = cmd
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .process_group(group)
            .spawn()
            .with_context(|| format!("starting {name} ({:?})", cmd.get_program()))?;
        Ok(Self {
            name,
            child,
            log,
            exited: None,
        })
    }

    /// Process id (also the process-group id when spawned with `group: None`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn log(&self) -> &Path {
        &self.log
    }

    /// `Some(status)` once the process has exited (reaping it).
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().ok().flatten();
        }
        self.exited
    }

    /// SIGKILL at once (no chance to clean up), then reaps.
    pub fn kill(&mut self) -> Result<()> {
        if self.exit_status().is_none() {
            self.kill_and_reap()?;
        }
        Ok(())
    }

    fn kill_and_reap(&mut self) -> Result<()> {
        let _ = self.child.kill();
        let status = self.child.wait();
        self.exited = Some(status.with_context(|| format!("reaping {}", self.name))?);
        Ok(())
    }

    /// SIGTERM, wait up to `grace`, then SIGKILL; always reaps.
    pub fn stop(&mut self, grace: Duration) -> Result<()> {
        if self.exit_status().is_some() {
            return Ok(());
        }
        let pid = Pid::from_raw(i32::try_from(self.child.id()).context("pid out of range")?);
        // ESRCH cannot happen before we reap, but a failure here only means
        // we escalate to SIGKILL below.
        let _ = signal::kill(pid, Signal::SIGTERM);
        if exits_within(grace, || self.exit_status().is_some()) {
            return Ok(());
        }
        eprintln!(
            "[control-plane] {} did not exit within {grace:?} of SIGTERM; sending SIGKILL",
            self.name
        );
        self.kill_and_reap()
    }
}

/// Checks `exited` every 50 ms for up to `grace`; true once it holds. Not
/// support::wait, which ends early on Ctrl-C: a stop must still grant the
/// grace period then.
pub fn exits_within(grace: Duration, mut exited: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if exited() {
            return true;
        }
        thread::sleep(Duration::from_millis(50));
    }
    false
}

impl Drop for ManagedProcess {
    fn drop(&mut self) {
        let _ = self.stop(Duration::from_secs(5));
    }
}

/// Sends SIGKILL to every process left in process group `pgid` (ignoring a
/// group that no longer exists).
pub fn kill_group(pgid: u32) {
    if let Ok(pgid) = i32::try_from(pgid) {
        let _ = signal::killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

/// Kills what is left in process group `pgid` (0: none, or done before)
/// and disarms its watchdog: the last step of stopping a group.
pub fn release_group(pgid: &mut u32, watchdog: &mut Option<Watchdog>) {
    if *pgid != 0 {
        kill_group(std::mem::take(pgid));
    }
    if let Some(w) = watchdog.take() {
        w.disarm();
    }
}

/// A `sh` that waits for EOF on its stdin, which happens when xtask exits
/// for any reason (even SIGKILL), then kills the control plane's process
/// group and removes its directory. Disarmed by [`Watchdog::disarm`] on a
/// normal stop.
#[derive(Debug)]
pub struct Watchdog {
    child: Child,
    // Held open until xtask exits or disarms; never written.
    _pipe: ChildStdin,
}

const WATCHDOG_SCRIPT: &str = r#"read _ignored
kill -s TERM -- "-$1" 2>/dev/null
sleep 3
kill -s KILL -- "-$1" 2>/dev/null
rm -rf -- "$2"
"#;

impl Watchdog {
    /// Arms a watchdog for process group `pgid` and directory `dir`.
    pub fn arm(pgid: u32, dir: &Path) -> Result<Self> {
        use std::os::unix::process::CommandExt;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG_SCRIPT)
            .arg("blue-control-plane-watchdog")
            .arg(pgid.to_string())
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .context("starting the watchdog (sh)")?;
        let pipe = child.stdin.take().context("watchdog stdin")?;
        Ok(Self { child, _pipe: pipe })
    }

    /// Stops the watchdog without letting it act.
    pub fn disarm(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
