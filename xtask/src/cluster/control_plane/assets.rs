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
    let home = || Some(env_path("HOME")?.join(".cache"));
    let base = env_path("XDG_CACHE_HOME").or_else(home);
    let base = base.context("neither XDG_CACHE_HOME nor HOME is set")?;
    Ok(base.join("blue-kubernetes/assets").join(KUBERNETES_VERSION))
}

/// A variable's value as a path, unless unset or empty.
fn env_path(var: &str) -> Option<PathBuf> {
    env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
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
        // An envtest variable: the binary's own, else the assets directory.
        let named = env_path(var).or_else(|| Some(env_path("KUBEBUILDER_ASSETS")?.join(name)));
        if let Some(path) = named {
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
    let both = kube_apiserver.zip(etcd);
    Ok(both.map(|(kube_apiserver, etcd)| Assets {
        kube_apiserver,
        etcd,
    }))
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
