//! The commands provisioning runs: as root (through sudo unless we are
//! root already), their output in a log, with a heartbeat while they run.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use blue_envtest::process::log_tail;

/// Runs a command with output to `log`, printing a heartbeat every 30 s and
/// the log tail on failure.
pub fn run_logged(cmd: &mut Command, log: &Path) -> Result<()> {
    let file = fs::File::create(log)?;
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .spawn()
        .with_context(|| format!("spawning {cmd:?}"))?;
    let mut next_beat = Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() >= next_beat {
            println!(
                "               ... still running ({}s)",
                next_beat.as_secs()
            );
            next_beat += Duration::from_secs(30);
        }
        thread::sleep(Duration::from_millis(200));
    };
    if !status.success() {
        bail!(
            "{:?} failed ({status}); last lines of {}:\n{}",
            cmd.get_program(),
            log.display(),
            log_tail(log, 30)
        );
    }
    Ok(())
}

/// `program` as root: through sudo unless we are root already.
pub fn as_root(sudo: bool, program: &str) -> Command {
    if !sudo {
        return Command::new(program);
    }
    let mut cmd = Command::new("sudo");
    cmd.arg(program);
    cmd
}
