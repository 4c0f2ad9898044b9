//! Which live processes still mention a path: the proof that a run left
//! nothing behind.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{ensure, Result};

/// Pids and command lines (from `/proc`) of live processes mentioning `dir`.
pub fn processes_mentioning(dir: &Path) -> Vec<(i32, String)> {
    let needle = dir.display().to_string();
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_string_lossy().parse::<i32>().ok()?;
            let raw = fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&raw)
                .replace('\0', " ")
                .trim()
                .to_string();
            cmd.contains(&needle).then_some((pid, cmd))
        })
        .collect()
}

/// The cleanup check: no process mentions any of `dirs`, and they are gone.
pub fn nothing_left(dirs: &[PathBuf]) -> Result<()> {
    for dir in dirs {
        let procs = processes_mentioning(dir);
        ensure!(procs.is_empty(), "processes left behind: {procs:?}");
        ensure!(!dir.exists(), "{} was not removed", dir.display());
    }
    Ok(())
}
