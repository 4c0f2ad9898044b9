//! kubectl bound to one control plane: its kubeconfig, its context and a
//! private discovery cache (so `~/.kube/cache` does not grow one directory
//! per random port).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{io_error, Error};

/// `$KUBECTL`, else `kubectl` from `PATH`.
pub(crate) fn find() -> Result<PathBuf, Error> {
    if let Some(path) = std::env::var_os("KUBECTL").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("kubectl"))
        .find(|p| crate::assets::is_executable(p))
        .ok_or_else(|| {
            io_error("finding kubectl in PATH (or set KUBECTL)")(
                std::io::ErrorKind::NotFound.into(),
            )
        })
}

/// How to run kubectl against one control plane.
#[derive(Debug, Clone)]
pub(crate) struct Kubectl {
    pub(crate) program: PathBuf,
    pub(crate) kubeconfig: PathBuf,
    pub(crate) context: &'static str,
    pub(crate) cache_dir: PathBuf,
}

impl Kubectl {
    /// Runs `kubectl <args>` with a 10 s request deadline; its stdout, or
    /// [`Error::Command`] with its error output.
    pub(crate) fn run(&self, args: &[&str]) -> Result<String, Error> {
        let out = Command::new(&self.program)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["--context", self.context, "--request-timeout=10s"])
            .arg("--cache-dir")
            .arg(&self.cache_dir)
            .args(args)
            .output()
            .map_err(io_error(format!("running {}", self.program.display())))?;
        if !out.status.success() {
            return Err(Error::Command {
                command: format!("kubectl {}", args.join(" ")),
                detail: format!(
                    "{}: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The discovery cache directory.
    pub(crate) fn cache_dir(&self) -> &Path {
        &self.cache_dir
    }
}
