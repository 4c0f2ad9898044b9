//! A private scratch directory per client, and the sweep that removes the
//! directories of processes that died without cleaning up (SIGKILL, OOM).
//!
//! Input documents (which may hold Secrets) and the in-cluster kubeconfig
//! live in `<temp>/blue-kubectl-<pid>-<start>-<random>` (mode 0700), the
//! proxy transport's socket in `<temp>/blue-proxy-<pid>-<start>-<random>`.
//! Drop removes them; a killed process cannot, so creating a client sweeps
//! the directories whose owner (the process with that pid *and* that start
//! time, so a reused pid does not count) is gone. A live process's
//! directory is never touched, and neither is another user's.

use crate::Error;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tempfile::TempDir;

const PREFIX: &str = "blue-kubectl-";

/// The name prefix of the proxy transport's socket directory
/// (`proxy/socket_dir.rs`). Defined here, with the sweep that must know it,
/// so this shared module depends on neither transport.
pub(crate) const PROXY_DIR_PREFIX: &str = "blue-proxy-";

/// Every prefix a swept directory may have.
const PREFIXES: [&str; 2] = [PREFIX, PROXY_DIR_PREFIX];

/// `<kind><pid>-<start>-`: the name prefix of a directory this process owns,
/// so that [`sweep`] can tell when its owner is gone.
pub(crate) fn owned_prefix(kind: &str) -> String {
    let owner = Owner::current();
    format!("{kind}{}-{}-", owner.pid, owner.start)
}

/// A process, as identified in directory names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Owner {
    pid: u32,
    /// Start time in clock ticks since boot (`/proc/PID/stat` field 22); 0
    /// where `/proc` is unavailable, and then only the pid is compared.
    start: u64,
}

impl Owner {
    fn current() -> Self {
        let pid = std::process::id();
        Self {
            pid,
            start: start_time(pid).unwrap_or(0),
        }
    }

    fn is_alive(self) -> bool {
        match start_time(self.pid) {
            Some(start) => self.start == 0 || start == self.start,
            None if Path::new("/proc/self/stat").exists() => false,
            // No /proc: ask the kernel whether the pid exists at all.
            None => i32::try_from(self.pid).is_ok_and(|pid| {
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
                    != Err(nix::errno::Errno::ESRCH)
            }),
        }
    }

    fn parse(name: &str) -> Option<Self> {
        let rest = PREFIXES.iter().find_map(|p| name.strip_prefix(p))?;
        let mut parts = rest.splitn(3, '-');
        let pid = parts.next()?.parse().ok()?;
        let start = parts.next()?.parse().ok()?;
        parts.next()?;
        Some(Self { pid, start })
    }
}

/// The start time of `pid`, or `None` if it does not exist (or is a zombie,
/// which owns nothing any more).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: fields are
    // counted after the last ')'. Field 3 is the state, 22 the start time.
    let fields: Vec<&str> = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    if fields.first() == Some(&"Z") {
        return None;
    }
    fields.get(19)?.parse().ok()
}

/// The scratch directory of one client; removed (with its contents) on drop.
#[derive(Debug)]
pub(crate) struct Scratch {
    dir: TempDir,
}

impl Scratch {
    /// Creates a fresh private directory in `parent` (the system temporary
    /// directory when `None`).
    pub(crate) fn create(parent: Option<&Path>) -> Result<Self, Error> {
        let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let dir = tempfile::Builder::new()
            .prefix(&owned_prefix(PREFIX))
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(&parent)
            .map_err(|e| Error::TempFile(e.kind()))?;
        Ok(Self { dir })
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Removes the scratch directories in `parent` (the system temporary
/// directory when `None`) whose owner is dead; returns what was removed.
/// Errors are ignored: sweeping is hygiene, never a reason to fail.
pub(crate) fn sweep(parent: Option<&Path>) -> Vec<PathBuf> {
    let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
    let Ok(entries) = std::fs::read_dir(&parent) else {
        return Vec::new();
    };
    let me = nix::unistd::getuid().as_raw();
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name.to_str().and_then(Owner::parse) else {
            continue;
        };
        // symlink_metadata: never follow a link planted in a shared /tmp.
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != me || owner.is_alive() {
            continue;
        }
        if std::fs::remove_dir_all(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_directory_is_private_named_after_its_owner_and_removed_on_drop() {
        let parent = tempfile::tempdir().unwrap();
        let scratch = Scratch::create(Some(parent.path())).unwrap();
        let path = scratch.path().to_path_buf();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let name = path.file_name().unwrap().to_str().unwrap();
        assert_eq!(Owner::parse(name), Some(Owner::current()));
        drop(scratch);
        assert!(!path.exists());
    }

    #[test]
    fn sweep_removes_dead_owners_directories_only() {
        let parent = tempfile::tempdir().unwrap();
        let live = Scratch::create(Some(parent.path())).unwrap();
        std::fs::write(live.path().join("input"), "x").unwrap();
        let me = Owner::current();
        // Same pid, another start time: a previous process that had our pid.
        let reused = parent
            .path()
            .join(format!("{PREFIX}{}-{}-abc", me.pid, me.start + 1));
        // A pid above the kernel's maximum never runs.
        let dead = parent.path().join(format!("{PREFIX}4194305-7-abc"));
        let dead_proxy = parent.path().join("blue-proxy-4194305-7-abc");
        let unrelated = parent.path().join("blue-kubectl-notes");
        for dir in [&reused, &dead, &dead_proxy, &unrelated] {
            std::fs::create_dir(dir).unwrap();
            std::fs::write(dir.join("input"), "secret").unwrap();
        }
        let mut removed = sweep(Some(parent.path()));
        removed.sort();
        let mut expected = vec![reused.clone(), dead.clone(), dead_proxy.clone()];
        expected.sort();
        assert_eq!(removed, expected);
        assert!(
            live.path().join("input").exists(),
            "a live owner's files stay"
        );
        assert!(unrelated.exists(), "names we did not make stay");
    }

    #[test]
    fn process_start_time_survives_odd_command_names() {
        let me = Owner::current();
        assert!(me.start > 0, "/proc is available on Linux");
        assert!(me.is_alive());
        assert!(!Owner {
            pid: 4_194_305,
            start: 1
        }
        .is_alive());
    }
}
