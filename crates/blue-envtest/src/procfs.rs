//! Live processes from `/proc`, and which still mention a path or carry an
//! environment variable: the proof that a test left nothing behind.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// Live processes: pid and `/proc/PID`.
pub fn all() -> Vec<(u32, PathBuf)> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path())))
        .collect()
}

/// The fields of `/proc/PID/stat` after the command name, which may hold
/// spaces: state, ppid, ...; utime and stime are at 11 and 12, the reaped
/// children's cutime and cstime at 13 and 14.
pub fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Pids and command lines of live processes mentioning `dir`.
pub fn processes_mentioning(dir: &Path) -> Vec<(i32, String)> {
    let needle = dir.display().to_string();
    all()
        .into_iter()
        .filter_map(|(pid, path)| {
            let raw = fs::read(path.join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
            let cmd = cmd.trim().to_string();
            cmd.contains(&needle)
                .then_some((i32::try_from(pid).ok()?, cmd))
        })
        .collect()
}

/// Command lines of live processes (zombies left out) whose environment
/// holds `variable` (`NAME=value`), e.g. a marker an operator's children
/// inherit.
pub fn processes_with_env(variable: &str) -> Vec<String> {
    all()
        .into_iter()
        .filter(|(_, path)| {
            fs::read(path.join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == variable.as_bytes()))
        })
        // Zombies own nothing any more.
        .filter(|(pid, _)| stat_fields(*pid).is_some_and(|f| f.first().is_some_and(|s| s != "Z")))
        .map(|(_, path)| {
            let cmd = fs::read(path.join("cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmd).replace('\0', " ")
        })
        .collect()
}

/// The cleanup check: no process mentions any of `dirs`, and they are gone
/// ([`Error::LeftBehind`] names what is left).
pub fn nothing_left(dirs: &[PathBuf]) -> Result<(), Error> {
    for dir in dirs {
        let procs = processes_mentioning(dir);
        if !procs.is_empty() {
            let what = format!("processes {procs:?}");
            return Err(Error::LeftBehind { what });
        }
        if dir.exists() {
            let what = format!("{}", dir.display());
            return Err(Error::LeftBehind { what });
        }
    }
    Ok(())
}
