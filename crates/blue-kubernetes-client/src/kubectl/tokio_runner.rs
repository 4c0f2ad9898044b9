//! The default runner: an async tokio child process in its own process group.

use super::operation::operation_of;
use super::parent_death;
use crate::{Error, Invocation, Output, Runner};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::process::Command;

/// Runs processes with `tokio::process`, never blocking the runtime.
///
/// - No shell: `argv[0]` is executed directly with `argv[1..]`.
/// - stdin is closed (inputs travel as files), stdout and stderr are captured.
/// - kubectl gets `SIGKILL` if this process dies (even by `SIGKILL`): it is
///   started through util-linux's `setpriv --pdeathsig KILL` when that is
///   installed (see the notes in `kubectl/parent_death.rs`).
/// - The process leads its own process group. When the deadline passes the
///   whole group (kubectl and anything it spawned, e.g. credential plugins)
///   gets `SIGKILL`, the process is reaped and [`Error::Timeout`] is returned.
/// - If the returned future is dropped early (cancellation, a panic nearby)
///   the group is killed as well.
/// - A process that exits but leaves a child holding stdout or stderr open
///   counts as unfinished until the deadline, which then kills that child.
///
/// Needs a tokio runtime with the time driver enabled (`#[tokio::main]` and
/// `Builder::enable_all` do that) for the deadline.
///
/// Public so callers can wrap it, e.g. to log or meter invocations:
///
/// ```
/// use blue_kubernetes_client::{Invocation, KubectlConfig, Runner, TokioRunner};
/// let counted = |inv: Invocation| async move {
///     // count, log the operation, ... then delegate
///     TokioRunner::new().run(inv).await
/// };
/// let options = KubectlConfig::for_context("dev").with_runner(counted);
/// # let _ = options;
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioRunner;

impl TokioRunner {
    /// The default runner.
    pub fn new() -> Self {
        Self
    }
}

#[async_trait::async_trait]
impl Runner for TokioRunner {
    async fn run(&self, invocation: Invocation) -> Result<Output, Error> {
        let operation = invocation
            .argv
            .get(1..)
            .map_or_else(|| "unknown".to_owned(), operation_of);
        let spawn_error = |kind| Error::Spawn {
            operation: operation.clone(),
            source_kind: kind,
        };
        let Some((program, args)) = invocation.argv.split_first() else {
            return Err(spawn_error(std::io::ErrorKind::InvalidInput));
        };

        // PATH as kubectl would see it: an override in the invocation wins.
        let path = invocation
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == "PATH")
            .map_or_else(|| std::env::var_os("PATH"), |(_, v)| Some(v.into()));
        let program = parent_death::resolve(program, path).map_err(spawn_error)?;
        let argv = parent_death::wrapped(program);
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .args(args)
            .envs(invocation.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0)
            .spawn()
            .map_err(|e| spawn_error(e.kind()))?;
        // Declared after `child`, so it drops first: the group is killed while
        // its leader is still unreaped and the group id cannot be reused.
        let mut group = GroupKiller::new(child.id());

        let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take())
        else {
            return Err(spawn_error(std::io::ErrorKind::BrokenPipe));
        };
        let deadline = Duration::from_millis(invocation.timeout_ms);
        let finished = tokio::time::timeout(deadline, async {
            let mut out = Vec::new();
            let mut err = Vec::new();
            // Read both pipes while waiting, so a chatty process never blocks
            // on a full pipe. A child that leaves a grandchild holding the
            // pipes open keeps this pending until the deadline kills the group.
            let (read_out, read_err, status) = tokio::join!(
                stdout.read_to_end(&mut out),
                stderr.read_to_end(&mut err),
                child.wait()
            );
            read_out.and(read_err).and(status).map(|status| Output {
                exit_code: status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&out).into_owned(),
                stderr: String::from_utf8_lossy(&err).into_owned(),
            })
        })
        .await;

        match finished {
            Ok(result) => {
                group.disarm();
                result.map_err(|e| spawn_error(e.kind()))
            }
            Err(_elapsed) => {
                group.kill();
                // Reap the leader; its children were reparented and are reaped by init.
                let _ = child.wait().await;
                Err(Error::Timeout {
                    operation,
                    timeout_ms: invocation.timeout_ms,
                })
            }
        }
    }
}

/// Kills a process group with `SIGKILL` when told to or when dropped armed.
struct GroupKiller {
    pgid: Option<Pid>,
}

impl GroupKiller {
    fn new(leader: Option<u32>) -> Self {
        // `process_group(0)` makes the group id equal to the leader's pid.
        let pgid = leader
            .and_then(|pid| i32::try_from(pid).ok())
            .map(Pid::from_raw);
        Self { pgid }
    }

    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // ESRCH (group already gone) is fine: nothing is left to kill.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }

    fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}
