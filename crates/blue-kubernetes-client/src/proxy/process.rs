//! The `kubectl proxy` process: spawned in its own process group with a
//! parent-death signal, killed (group and all) and reaped on drop.
//!
//! Linux delivers a parent-death signal when the *thread* that spawned the
//! child ends, so every proxy is spawned from one thread per client that
//! lives exactly as long as the client: if our process dies (even by
//! SIGKILL) the kernel kills the proxy; if the client drops, its guard kills
//! it first. Setting the signal inside the child would need `pre_exec`
//! (unsafe), so `setpriv --pdeathsig KILL` (util-linux) sets it and then
//! execs kubectl; without `setpriv` only the guard protects.

use super::socket_dir::SocketDir;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;

type Job = (
    Command,
    tokio::sync::oneshot::Sender<std::io::Result<Child>>,
);

/// Where `setpriv` usually lives; looked up once per client.
const SETPRIV: &[&str] = &["/usr/bin/setpriv", "/bin/setpriv"];

/// Spawns processes from one long-lived thread (see the module docs).
pub(crate) struct Spawner {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    setpriv: Option<PathBuf>,
}

impl Spawner {
    /// Starts the spawning thread; `parent_death_signal` wraps commands in
    /// `setpriv --pdeathsig KILL` when it is installed.
    pub(crate) fn new(parent_death_signal: bool) -> std::io::Result<Self> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("blue-proxy-spawner".into())
            .spawn(move || {
                for (mut command, reply) in queue {
                    let _ = reply.send(command.spawn());
                }
            })?;
        let setpriv = parent_death_signal
            .then(|| SETPRIV.iter().map(PathBuf::from).find(|p| p.is_file()))
            .flatten();
        Ok(Self {
            jobs: Some(jobs),
            thread: Some(thread),
            setpriv,
        })
    }

    /// True when spawned processes get a parent-death signal.
    pub(crate) fn has_parent_death_signal(&self) -> bool {
        self.setpriv.is_some()
    }

    /// Spawns `argv` with `env`, stdin/stdout/stderr closed (kubectl's output
    /// is never read, so it can never leak), leading its own process group.
    pub(crate) async fn spawn(
        &self,
        argv: &[String],
        env: &[(String, String)],
    ) -> std::io::Result<Child> {
        let Some((program, args)) = argv.split_first() else {
            return Err(std::io::ErrorKind::InvalidInput.into());
        };
        let mut command = match &self.setpriv {
            Some(setpriv) => {
                let mut c = Command::new(setpriv);
                c.args(["--pdeathsig", "KILL", "--"]).arg(program);
                c
            }
            None => Command::new(program),
        };
        command
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let (reply, answer) = tokio::sync::oneshot::channel();
        let jobs = self.jobs.as_ref().ok_or(std::io::ErrorKind::BrokenPipe)?;
        jobs.send((command, reply))
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        answer
            .await
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        // Closing the queue ends the thread. Its processes must be gone by
        // now (the supervisor drops them first), or their parent-death
        // signal fires here, which is the right outcome anyway.
        self.jobs.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A running proxy and its directory. Dropping it kills the whole process
/// group, reaps the leader, then removes the directory.
pub(crate) struct ProxyProcess {
    child: Child,
    killed: bool,
    dir: SocketDir,
}

impl ProxyProcess {
    pub(crate) fn new(child: Child, dir: SocketDir) -> Self {
        Self {
            child,
            killed: false,
            dir,
        }
    }

    /// The process id (and process group id).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn socket(&self) -> &Path {
        self.dir.socket()
    }

    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// False once the process has exited (it is reaped then).
    pub(crate) fn is_alive(&mut self) -> bool {
        !self.killed && matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGKILL to the group, then reap the leader. Idempotent.
    pub(crate) fn kill(&mut self) {
        if self.killed {
            return;
        }
        self.killed = true;
        // The leader is unreaped until `wait` below, so the group id cannot
        // have been reused. ESRCH (already gone) is fine.
        if let Ok(pgid) = i32::try_from(self.child.id()) {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

impl Drop for ProxyProcess {
    fn drop(&mut self) {
        self.kill();
        // `dir` drops after this body: the socket directory goes last.
    }
}
