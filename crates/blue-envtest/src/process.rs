//! Long-running children: spawning with a log file, stopping (SIGTERM,
//! grace period, SIGKILL, reap), dying with this process, the watchdog that
//! cleans up after it, free ports and log tails. Public because xtask runs
//! its operators and database servers the same way.

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{self, Signal};
use nix::unistd::Pid;

use crate::error::{io_error, Error};
use crate::spawner;

/// A free TCP port on 127.0.0.1 (free when asked; another process could
/// still take it before it is bound).
pub fn free_port() -> Result<u16, Error> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0));
    let port = listener.and_then(|l| l.local_addr());
    Ok(port.map_err(io_error("binding 127.0.0.1:0"))?.port())
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

/// A command running `program` that gets SIGKILL when this process dies,
/// even by SIGKILL: util-linux's `setpriv --pdeathsig KILL` sets the signal
/// and execs `program`, which keeps its pid and process group. (Setting it
/// in the child directly needs `pre_exec`, which is unsafe.) Without
/// `setpriv`, a plain command: the [`Watchdog`] then stops it.
pub fn dying_with_this_process(program: &Path) -> Command {
    const SETPRIV: [&str; 2] = ["/usr/bin/setpriv", "/bin/setpriv"];
    match SETPRIV.iter().map(Path::new).find(|p| p.is_file()) {
        Some(setpriv) => {
            let mut cmd = Command::new(setpriv);
            cmd.args(["--pdeathsig", "KILL", "--"]).arg(program);
            cmd
        }
        None => Command::new(program),
    }
}

/// A long-running child whose stdout and stderr go to a log file. Stopped
/// (SIGTERM, 5 s, SIGKILL) on drop.
#[derive(Debug)]
pub struct ManagedProcess {
    name: &'static str,
    child: Child,
    log: PathBuf,
    exited: Option<ExitStatus>,
}

impl ManagedProcess {
    /// Spawns `cmd` with its output appended to `log`, from a thread that
    /// lives as long as this process (so a parent-death signal, see
    /// [`dying_with_this_process`], means this process's death) and with
    /// SIGINT and SIGTERM deliverable. With `group: None` the child leads a
    /// new process group (a terminal's Ctrl-C does not hit it directly, so
    /// the shutdown order is ours); else it joins `group`.
    pub fn spawn(
        name: &'static str,
        mut cmd: Command,
        log: PathBuf,
        group: Option<u32>,
    ) -> Result<Self, Error> {
        let file = fs::OpenOptions::new().create(true).append(true).open(&log);
        let file = file.map_err(io_error(format!("opening {}", log.display())))?;
        let output = file.try_clone();
        let output = output.map_err(io_error(format!("opening {}", log.display())))?;
        let group = group.map_or(0, |g| i32::try_from(g).unwrap_or(0));
        cmd.stdin(Stdio::null())
            .stdout(output)
            .stderr(file)
            .process_group(group);
        let started = format!("starting {name} ({:?})", cmd.get_program());
        let child = spawner::spawn(cmd).map_err(io_error(started))?;
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

    /// The name it was spawned with.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The log file its output goes to.
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
    pub fn kill(&mut self) -> Result<(), Error> {
        if self.exit_status().is_none() {
            self.kill_and_reap()?;
        }
        Ok(())
    }

    fn kill_and_reap(&mut self) -> Result<(), Error> {
        let _ = self.child.kill();
        let status = self.child.wait();
        self.exited = Some(status.map_err(io_error(format!("reaping {}", self.name)))?);
        Ok(())
    }

    /// SIGTERM, wait up to `grace`, then SIGKILL; always reaps.
    pub fn stop(&mut self, grace: Duration) -> Result<(), Error> {
        if self.exit_status().is_some() {
            return Ok(());
        }
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // Failing only means escalating to SIGKILL below.
            let _ = signal::kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        if exits_within(grace, || self.exit_status().is_some()) {
            return Ok(());
        }
        eprintln!(
            "[envtest] {} did not exit within {grace:?} of SIGTERM; sending SIGKILL",
            self.name
        );
        self.kill_and_reap()
    }
}

impl Drop for ManagedProcess {
    fn drop(&mut self) {
        let _ = self.stop(Duration::from_secs(5));
    }
}

/// Checks `exited` every 50 ms for up to `grace`; true once it holds.
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

/// A `sh` that waits for EOF on its stdin, which comes when this process
/// exits for any reason (even SIGKILL), then stops a process group
/// (SIGTERM, 3 s, SIGKILL; at once if the group is already gone) and
/// removes a directory. Disarmed by [`Watchdog::disarm`] on a normal stop.
#[derive(Debug)]
pub struct Watchdog {
    child: Child,
    // Held open until this process exits or disarms; never written.
    _pipe: ChildStdin,
}

const WATCHDOG_SCRIPT: &str = r#"read _ignored
if kill -s TERM -- "-$1" 2>/dev/null; then
  n=0
  while [ $n -lt 30 ] && kill -s 0 -- "-$1" 2>/dev/null; do sleep 0.1; n=$((n+1)); done
  kill -s KILL -- "-$1" 2>/dev/null
fi
rm -rf -- "$2"
"#;

impl Watchdog {
    /// Arms a watchdog for process group `pgid` and directory `dir`.
    pub fn arm(pgid: u32, dir: &Path) -> Result<Self, Error> {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(WATCHDOG_SCRIPT)
            .arg("blue-envtest-watchdog")
            .arg(pgid.to_string())
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let mut child = spawner::spawn(cmd).map_err(io_error("starting the watchdog (sh)"))?;
        let pipe = child.stdin.take().ok_or(std::io::ErrorKind::BrokenPipe);
        let pipe = pipe.map_err(|kind| io_error("the watchdog's stdin")(kind.into()))?;
        Ok(Self { child, _pipe: pipe })
    }

    /// Stops the watchdog without letting it act.
    pub fn disarm(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
