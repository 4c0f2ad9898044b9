//! kubectl dies with the process that started it.
//!
//! Linux can send a process a signal when its parent dies
//! (`PR_SET_PDEATHSIG`), but only the child can ask for it, between fork and
//! exec, which needs `unsafe` (`pre_exec`) that this crate denies. util-linux's
//! `setpriv --pdeathsig KILL -- PROGRAM ARGS...` does exactly that step and
//! then execs the program, which keeps its pid, its process group and the
//! parent-death signal. So the runner starts kubectl through `setpriv` when
//! it is installed (it is part of util-linux, in every Debian-family image);
//! without it, kubectl still runs, and a SIGKILLed operator's in-flight
//! kubectl then lives until its own request timeout.
//!
//! Linux sends the signal when the *thread* that started the child exits.
//! The runner spawns from tokio's worker threads, which live as long as the
//! runtime; a runtime shut down while kubectl runs kills it anyway
//! (`kill_on_drop`), so the signal never fires early in practice.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The command line that runs `program` (already resolved) so that it gets
/// SIGKILL when this process dies: `[setpriv, --pdeathsig, KILL, --, program]`,
/// or just `[program]` where `setpriv` is missing.
pub(crate) fn wrapped(program: PathBuf) -> Vec<OsString> {
    static SETPRIV: OnceLock<Option<PathBuf>> = OnceLock::new();
    let setpriv = SETPRIV.get_or_init(|| resolve("setpriv", std::env::var_os("PATH")).ok());
    match setpriv {
        Some(setpriv) => vec![
            setpriv.clone().into(),
            "--pdeathsig".into(),
            "KILL".into(),
            "--".into(),
            program.into(),
        ],
        None => vec![program.into()],
    }
}

/// Finds `program` the way `execvp` would, so that a missing or unusable
/// binary is still a spawn error rather than a wrapper's exit code.
pub(crate) fn resolve(
    program: &str,
    path: Option<OsString>,
) -> Result<PathBuf, std::io::ErrorKind> {
    if program.contains('/') {
        return executable(Path::new(program)).map(|()| PathBuf::from(program));
    }
    let mut last = std::io::ErrorKind::NotFound;
    for dir in std::env::split_paths(&path.unwrap_or_default()) {
        let candidate = dir.join(program);
        match executable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(kind) if kind != std::io::ErrorKind::NotFound => last = kind,
            Err(_) => {}
        }
    }
    Err(last)
}

fn executable(path: &Path) -> Result<(), std::io::ErrorKind> {
    let meta = std::fs::metadata(path).map_err(|e| e.kind())?;
    if !meta.is_file() {
        return Err(std::io::ErrorKind::NotFound);
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(std::io::ErrorKind::PermissionDenied);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_resolve_like_execvp() {
        let sh = resolve("sh", std::env::var_os("PATH")).unwrap();
        assert!(sh.is_absolute());
        assert_eq!(
            resolve("no-such-program-blue", std::env::var_os("PATH")),
            Err(std::io::ErrorKind::NotFound)
        );
        assert_eq!(
            resolve("/no/such/file", None),
            Err(std::io::ErrorKind::NotFound)
        );
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "").unwrap();
        assert_eq!(
            resolve(plain.to_str().unwrap(), None),
            Err(std::io::ErrorKind::PermissionDenied)
        );
    }

    #[test]
    fn kubectl_runs_under_setpriv_when_installed() {
        let argv = wrapped(PathBuf::from("/usr/bin/kubectl"));
        assert_eq!(argv.last().unwrap(), "/usr/bin/kubectl");
        if resolve("setpriv", std::env::var_os("PATH")).is_ok() {
            assert_eq!(&argv[1..4], ["--pdeathsig", "KILL", "--"]);
        }
    }
}
