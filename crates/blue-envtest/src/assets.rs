//! Where etcd and kube-apiserver come from, first match per binary: the
//! binary's own variable (`TEST_ASSET_KUBE_APISERVER`, `TEST_ASSET_ETCD`),
//! then `$KUBEBUILDER_ASSETS/<name>`, then the cache that
//! `cargo xtask control-plane provision` fills
//! (`~/.cache/blue-kubernetes/assets/<version>`, or under
//! `$XDG_CACHE_HOME`). Nothing here provisions.

use std::env;
use std::path::{Path, PathBuf};

use crate::Error;

/// Kubernetes version of the cached binaries.
pub const KUBERNETES_VERSION: &str = "1.20.2";

/// File name of the API server binary, in the cache and in `KUBEBUILDER_ASSETS`.
pub const KUBE_APISERVER: &str = "kube-apiserver";
/// File name of the etcd binary, in the cache and in `KUBEBUILDER_ASSETS`.
pub const ETCD: &str = "etcd";

/// Paths of the two binaries a control plane needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assets {
    /// The kube-apiserver binary.
    pub kube_apiserver: PathBuf,
    /// The etcd binary.
    pub etcd: PathBuf,
}

/// `~/.cache/blue-kubernetes/assets/<KUBERNETES_VERSION>` (or under
/// `$XDG_CACHE_HOME`); `None` when neither variable is set.
pub fn cache_dir() -> Option<PathBuf> {
    let home = || Some(env_path("HOME")?.join(".cache"));
    let base = env_path("XDG_CACHE_HOME").or_else(home)?;
    Some(base.join("blue-kubernetes/assets").join(KUBERNETES_VERSION))
}

/// A variable's value as a path, unless unset or empty.
fn env_path(var: &str) -> Option<PathBuf> {
    env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// A regular file with an execute bit.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The binaries. `Ok(None)` when the cache is incomplete and no variable
/// covers the gap; an error when a variable names a non-executable.
pub fn resolve() -> Result<Option<Assets>, Error> {
    let cache = cache_dir();
    let pick = |var: &'static str, name: &str| -> Result<Option<PathBuf>, Error> {
        let named = env_path(var).or_else(|| Some(env_path("KUBEBUILDER_ASSETS")?.join(name)));
        if let Some(path) = named {
            if !is_executable(&path) {
                return Err(Error::NotExecutable { path, var });
            }
            return Ok(Some(path));
        }
        let cached = cache.as_ref().map(|dir| dir.join(name));
        Ok(cached.filter(|path| is_executable(path)))
    };
    let kube_apiserver = pick("TEST_ASSET_KUBE_APISERVER", KUBE_APISERVER)?;
    let etcd = pick("TEST_ASSET_ETCD", ETCD)?;
    let both = kube_apiserver.zip(etcd);
    Ok(both.map(|(kube_apiserver, etcd)| Assets {
        kube_apiserver,
        etcd,
    }))
}

/// The binaries, or [`Error::MissingAssets`] saying how to get them.
pub fn find() -> Result<Assets, Error> {
    resolve()?.ok_or(Error::MissingAssets)
}
