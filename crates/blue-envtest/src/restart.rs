//! Restarting one component in place (same command line, ports and etcd
//! data), for checks that what runs against the control plane survives it.

use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::control_plane::{Component, ControlPlane, READY_TIMEOUT};
use crate::process::{exits_within, log_tail, ManagedProcess};
use crate::sweep::stat_fields;
use crate::wait::{poll, Probe};
use crate::Error;

/// How long a stopped component may drain before SIGKILL. Short: an API
/// server with open watches does not exit within 10 s of SIGTERM anyway,
/// and a crash is as good a test as a drain.
const STOP_GRACE: Duration = Duration::from_secs(3);

impl ControlPlane {
    /// Stops `component` (SIGTERM, SIGKILL after 3 s), starts it
    /// again with its original command line and waits until the API server
    /// serves again (`/readyz`). The replacement is stopped with the control
    /// plane; a later restart replaces it.
    pub fn restart(&self, component: Component) -> Result<(), Error> {
        let mut restarted = self.restarted.lock().unwrap_or_else(|e| e.into_inner());
        match restarted.iter().rposition(|p| p.name() == component.name()) {
            Some(i) => restarted.remove(i).stop(STOP_GRACE)?,
            None => {
                let pid = self
                    .pid(component)
                    .ok_or_else(|| Error::Stop(format!("{} is not running", component.name())))?;
                // Reaped later by `shutdown`; here only its exit matters.
                stop_unreaped(pid, component.name())?;
            }
        }
        let mut fresh = self.respawn(component)?;
        let serving = self.wait_serving(&mut fresh);
        restarted.push(fresh);
        serving
    }

    fn wait_serving(&self, fresh: &mut ManagedProcess) -> Result<(), Error> {
        let process = fresh.name();
        let what = format!("the API server serves again after restarting {process}");
        poll(&what, READY_TIMEOUT, Duration::from_millis(200), || {
            if let Some(status) = fresh.exit_status() {
                return Err(Probe::GiveUp(Error::Exited {
                    process,
                    status: status.to_string(),
                    logs: log_tail(fresh.log(), 30),
                }));
            }
            self.serves("/readyz")
                .map_err(|e| Probe::NotYet(e.to_string()))
        })
    }
}

/// SIGTERM to a child another handle owns (and reaps), SIGKILL after the
/// grace period; returns once it has exited (gone or a zombie), so its
/// ports are free.
fn stop_unreaped(pid: u32, name: &str) -> Result<(), Error> {
    let raw = i32::try_from(pid).map_err(|_| Error::Stop(format!("{name}: pid out of range")))?;
    for signal in [Signal::SIGTERM, Signal::SIGKILL] {
        let _ = kill(Pid::from_raw(raw), signal);
        if exits_within(STOP_GRACE, || exited(pid)) {
            return Ok(());
        }
    }
    Err(Error::Stop(format!("{name} did not exit after SIGKILL")))
}

/// The process is gone or a zombie (its state in `/proc/PID/stat` is `Z`).
fn exited(pid: u32) -> bool {
    stat_fields(pid).is_none_or(|f| f.first().is_some_and(|state| state.starts_with(['Z', 'X'])))
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
        assert!(!exited(child.id()));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(exited(child.id()));
    }
}
