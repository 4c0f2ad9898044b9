//! Every long-lived child is spawned from one thread that lives as long as
//! the process.
//!
//! Linux sends the parent-death signal (`PR_SET_PDEATHSIG`) when the
//! *thread* that forked the child ends, not the process: a child spawned
//! from a test thread would be killed when that test returns, while the
//! shared control plane must outlive it. Spawning from this thread, which
//! never ends before the process does, makes "dies with its parent" mean
//! the process.
//!
//! Children inherit the spawning thread's signal mask. A program that
//! blocks SIGINT and SIGTERM to handle them on a thread of its own (as
//! xtask does) would hand its children a mask under which SIGTERM cannot
//! stop them; so this thread keeps both blocked for itself (a Ctrl-C is
//! never delivered here) and unblocks them only for the moment of each
//! spawn.

use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use nix::sys::signal::{SigSet, SigmaskHow, Signal};

type Job = (Command, mpsc::Sender<std::io::Result<Child>>);

/// Spawns `command` from the process-wide spawning thread.
pub(crate) fn spawn(command: Command) -> std::io::Result<Child> {
    static JOBS: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let jobs = JOBS.get_or_init(|| {
        let (jobs, queue) = mpsc::channel::<Job>();
        // If the thread cannot start, every spawn below fails with the
        // closed channel's error instead.
        let _ = std::thread::Builder::new()
            .name("blue-envtest-spawner".into())
            .spawn(move || serve(queue));
        Mutex::new(jobs)
    });
    let (reply, answer) = mpsc::channel();
    let sent = jobs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((command, reply));
    let gone = || std::io::Error::other("the spawning thread is gone");
    sent.map_err(|_| gone())?;
    answer.recv().map_err(|_| gone())?
}

fn serve(queue: mpsc::Receiver<Job>) {
    let stop_signals = SigSet::from_iter([Signal::SIGINT, Signal::SIGTERM]);
    let _ = stop_signals.thread_block();
    for (mut command, reply) in queue {
        let before = stop_signals.thread_swap_mask(SigmaskHow::SIG_UNBLOCK);
        let child = command.spawn();
        if let Ok(before) = before {
            let _ = before.thread_set_mask();
        }
        let _ = reply.send(child);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_start_with_stop_signals_deliverable_whatever_the_caller_blocks() {
        let stop_signals = SigSet::from_iter([Signal::SIGINT, Signal::SIGTERM]);
        stop_signals.thread_block().unwrap();
        let mut command = Command::new("sh");
        command.args(["-c", "grep SigBlk /proc/self/status"]);
        command.stdout(std::process::Stdio::piped());
        let out = spawn(command).unwrap().wait_with_output().unwrap();
        stop_signals.thread_unblock().unwrap();
        let line = String::from_utf8(out.stdout).unwrap();
        let mask = u64::from_str_radix(line.trim().trim_start_matches("SigBlk:").trim(), 16);
        // SIGINT is 2 and SIGTERM 15: bits 1 and 14.
        assert_eq!(mask.unwrap() & (1 << 1 | 1 << 14), 0, "{line}");
    }
}
