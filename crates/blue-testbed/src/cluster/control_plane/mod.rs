//! The local control plane: blue-envtest's etcd + kube-apiserver (started,
//! stopped and restarted there), provisioned here first when its binaries
//! are missing. Usage: `xtask/README.md`, "Local control plane"
//! (`cargo xtask control-plane`).

mod apt;
mod command;
pub mod provision;

use anyhow::Result;
pub use blue_envtest::ControlPlane;

use crate::support::kube::Kube;

/// Provisions the binaries if needed ([`provision::ensure_provisioned`]),
/// then starts a fresh control plane and waits until it serves requests.
pub fn start() -> Result<ControlPlane> {
    provision::ensure_provisioned()?;
    Ok(ControlPlane::start()?)
}

/// kubectl bound to `cp` and the `default` namespace, with its private
/// discovery cache (so `~/.kube/cache` does not fill with one per random
/// port).
pub fn kube(cp: &ControlPlane) -> Kube {
    Kube::new(
        cp.kubectl().to_path_buf(),
        Some(cp.kubeconfig_path().to_path_buf()),
        cp.context(),
        cp.kube_cache_dir(),
        "default",
    )
}
