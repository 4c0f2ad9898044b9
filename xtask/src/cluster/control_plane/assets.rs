//! Where the control-plane binaries come from: the envtest variables, then
//! the cache `cargo xtask control-plane provision` fills (the order is in
//! `xtask/README.md`, "Where the binaries come from").

use std::env;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::provision;

/// Kubernetes version built and cached by the provisioning step.
pub const KUBERNETES_VERSION: &str = "1.20.2";

/// File name of the API server binary, in the cache and in `KUBEBUILDER_ASSETS`.
pub const KUBE_APISERVER: &str = "kube-apiserver";
/// File name of the etcd binary, in the cache and in `KUBEBUILDER_ASSETS`.
pub const ETCD: &str = "etcd";

/// Paths of the two binaries a control plane needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assets {
    pub kube_apiserver: PathBuf,
    pub etcd: PathBuf,
}

/// `~/.cache/blue-kubernetes/assets/<KUBERNETES_VERSION>` (or under `$XDG_CACHE_HOME`).
pub fn cache_dir() -> Result<PathBuf> {
    let base = match env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => {
            let home = env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .context("neither XDG_CACHE_HOME nor HOME is set")?;
            PathBuf::from(home).join(".cache")
        }
    };
    Ok(base
        .join("blue-kubernetes")
        .join("assets")
        .join(KUBERNETES_VERSION))
}

/// Where a binary would come from if an envtest variable names it.
fn from_env(single_var: &str, name: &str) -> Option<PathBuf> {
    if let Some(path) = env::var_os(single_var).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(path));
    }
    env::var_os("KUBEBUILDER_ASSETS")
        .filter(|v| !v.is_empty())
        .map(|dir| PathBuf::from(dir).join(name))
}

pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The binaries, without provisioning anything. `Ok(None)` when the cache is
/// incomplete and no environment variable covers the gap.
pub fn resolve() -> Result<Option<Assets>> {
    let cache = cache_dir()?;
    let pick = |var: &str, name: &str| -> Result<Option<PathBuf>> {
        if let Some(path) = from_env(var, name) {
            if !is_executable(&path) {
                bail!(
                    "{} is not an executable file (from {var} or KUBEBUILDER_ASSETS)",
                    path.display()
                );
            }
            return Ok(Some(path));
        }
        let cached = cache.join(name);
        Ok(is_executable(&cached).then_some(cached))
    };
    let kube_apiserver = pick("TEST_ASSET_KUBE_APISERVER", KUBE_APISERVER)?;
    let etcd = pick("TEST_ASSET_ETCD", ETCD)?;
    Ok(match (kube_apiserver, etcd) {
        (Some(kube_apiserver), Some(etcd)) => Some(Assets {
            kube_apiserver,
            etcd,
        }),
        _ => None,
    })
}

/// The binaries, building and caching them first when needed (see
/// [`provision::provision`]; a no-op when they are already there).
pub fn ensure_provisioned() -> Result<Assets> {
    if let Some(assets) = resolve()? {
        return Ok(assets);
    }
    provision::provision()?;
    resolve()?.context("provisioning finished but the control-plane binaries are still missing")
}
