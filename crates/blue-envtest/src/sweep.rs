//! Control-plane directories are named after the process that owns them
//! (`blue-envtest-<pid>-<start>-<random>`), so one left behind by a process
//! that died without stopping (the shared control plane lives in a static
//! and is never dropped; a test binary can be SIGKILLed) is swept when the
//! next control plane starts: whatever still runs from it is killed and
//! the directory removed. A live owner's directory is never touched, and
//! neither is another user's.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The name prefix of every control-plane directory.
pub(crate) const PREFIX: &str = "blue-envtest-";

/// `blue-envtest-<pid>-<start>-`: the prefix of a directory this process owns.
pub(crate) fn owned_prefix() -> String {
    let pid = std::process::id();
    format!("{PREFIX}{pid}-{}-", start_time(pid).unwrap_or(0))
}

/// The start time of `pid` in clock ticks since boot, or `None` if it does
/// not exist or is a zombie (which owns nothing any more).
fn start_time(pid: u32) -> Option<u64> {
    let fields = stat_fields(pid)?;
    if fields.first().is_some_and(|state| state == "Z") {
        return None;
    }
    fields.get(19)?.parse().ok()
}

/// The fields of `/proc/PID/stat` after the command name (which may hold
/// spaces): state, ppid, ...
pub(crate) fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// True while the process named in a directory name still runs.
fn owner_alive(name: &str) -> bool {
    let mut parts = name.trim_start_matches(PREFIX).splitn(3, '-');
    let pid = parts.next().and_then(|p| p.parse::<u32>().ok());
    let start = parts.next().and_then(|s| s.parse::<u64>().ok());
    match (pid, start) {
        (Some(pid), Some(start)) => start_time(pid).is_some_and(|now| start == 0 || now == start),
        // Not one of ours after all: leave it alone.
        _ => true,
    }
}

/// Sweeps `parent`'s leftover control-plane directories; returns how many.
/// Errors are ignored: sweeping is hygiene, never a reason to fail.
pub(crate) fn sweep(parent: &Path) -> usize {
    let Ok(entries) = fs::read_dir(parent) else {
        return 0;
    };
    let me = nix::unistd::getuid().as_raw();
    let mut swept = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str().filter(|n| n.starts_with(PREFIX)) else {
            continue;
        };
        // symlink_metadata: never follow a link planted in a shared /tmp.
        let Ok(meta) = fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != me || owner_alive(name) {
            continue;
        }
        kill_processes_mentioning(&entry.path());
        if fs::remove_dir_all(entry.path()).is_ok() {
            swept += 1;
        }
    }
    swept
}

/// SIGKILLs our processes whose command line names `dir` (an etcd or
/// kube-apiserver that outlived its owner where no parent-death signal
/// could be set).
fn kill_processes_mentioning(dir: &Path) {
    let Some(needle) = dir.to_str() else { return };
    let Ok(procs) = fs::read_dir("/proc") else {
        return;
    };
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(needle) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_owners_directory_is_swept_and_a_live_ones_kept() {
        let parent = tempfile::tempdir().unwrap();
        let mine = parent.path().join(format!("{}abc", owned_prefix()));
        // A pid that cannot exist (above the kernel's pid_max).
        let dead = parent.path().join(format!("{PREFIX}99999999-1-abc"));
        let foreign = parent.path().join(format!("{PREFIX}not-ours"));
        for dir in [&mine, &dead, &foreign] {
            fs::create_dir(dir).unwrap();
        }
        assert_eq!(sweep(parent.path()), 1);
        assert!(mine.exists() && foreign.exists() && !dead.exists());
    }
}
