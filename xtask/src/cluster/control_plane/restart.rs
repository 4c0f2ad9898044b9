//! Restarting one component in place (same command line, ports and etcd
//! data), for checks that what runs against the control plane survives it.

use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::process::{exits_within, log_tail, ManagedProcess};
use super::{Component, ControlPlane, READY_TIMEOUT};
use crate::support::processes::stat_fields;
use crate::support::wait::{poll, GiveUp};

/// How long a stopped component may drain before SIGKILL. Short: an API
/// server with open watches does not exit within 10 s of SIGTERM anyway,
/// and a crash is as good a test as a drain.
const STOP_GRACE: Duration = Duration::from_secs(3);

impl ControlPlane {
    /// Stops `component` (SIGTERM, SIGKILL after 3 s), starts it
    /// again with its original command line and waits until the API server
    /// serves again (`/readyz`). The replacement is stopped with the control
    /// plane; a later restart replaces it.
    pub fn restart(&self, component: Component) -> Result<()> {
        let mut restarted = self.restarted.lock().unwrap_or_else(|e| e.into_inner());
        match restarted.iter().rposition(|p| p.name() == component.name()) {
            Some(i) => restarted.remove(i).stop(STOP_GRACE)?,
            None => {
                let pid = self
                    .pid(component)
                    .with_context(|| format!("{} is not running", component.name()))?;
                // Reaped later by `shutdown`; here only its exit matters.
                stop_unreaped(pid, component.name())?;
            }
        }
        let mut fresh = self.respawn(component)?;
        let serving = self.wait_serving(&mut fresh);
        restarted.push(fresh);
        serving
    }

    fn wait_serving(&self, fresh: &mut ManagedProcess) -> Result<()> {
        let name = fresh.name();
        let what = format!("the API server serves again after restarting {name}");
        poll(&what, READY_TIMEOUT, Duration::from_millis(200), || {
            if let Some(status) = fresh.exit_status() {
                let log = log_tail(fresh.log(), 30);
                return Err(anyhow!("restarted {name} exited ({status})\n{log}")).context(GiveUp);
            }
            self.serves("/readyz")
        })
    }
}

/// SIGTERM to a child another handle owns (and reaps), SIGKILL after the
/// grace period; returns once it has exited (gone or a zombie), so its
/// ports are free.
fn stop_unreaped(pid: u32, name: &str) -> Result<()> {
    let pid = Pid::from_raw(i32::try_from(pid).context("pid out of range")?);
    for (signal, wait) in [(Signal::SIGTERM, STOP_GRACE), (Signal::SIGKILL, STOP_GRACE)] {
        let _ = kill(pid, signal);
        if exits_within(wait, || exited(pid)) {
            return Ok(());
        }
    }
    bail!("{name} did not exit after SIGKILL")
}

/// The process is gone or a zombie (its state in `/proc/PID/stat` is `Z`).
fn exited(pid: Pid) -> bool {
    let fields = u32::try_from(pid.as_raw()).ok().and_then(stat_fields);
    fields.is_none_or(|f| f.first().is_some_and(|state| state.starts_with(['Z', 'X'])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_child_has_not_exited_and_a_reaped_one_has() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(child.id() as i32);
        assert!(!exited(pid));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(exited(pid));
    }
}
