//! The real API server of the bench: a local control plane, its processes
//! and kubectl options for it.

use std::path::{Path, PathBuf};

use anyhow::{ensure, Result};
use blue_kubernetes_client::KubectlConfig;

use blue_envtest::procfs::processes_mentioning;
use blue_testbed::cluster::control_plane::{self, ControlPlane};
use blue_testbed::support::kube::Kube;

/// A running control plane prepared for the bench.
pub struct ApiServer {
    pub cp: ControlPlane,
    /// kubectl against it (namespaced calls name their namespace).
    pub kube: Kube,
    /// kube-apiserver and etcd.
    pub server_pids: Vec<u32>,
    cache_dir: PathBuf,
}

impl ApiServer {
    pub fn start() -> Result<Self> {
        let cp = control_plane::start()?;
        let cache_dir = cp.dir().join("kube-cache");
        let server_pids = server_pids(cp.dir());
        ensure!(
            server_pids.len() == 2,
            "expected etcd and kube-apiserver, found {server_pids:?}"
        );
        let kube = control_plane::kube(&cp);
        Ok(Self {
            cp,
            kube,
            server_pids,
            cache_dir,
        })
    }

    /// Transport options for this control plane (admin context, private
    /// discovery cache).
    pub fn kubectl_options(&self) -> KubectlConfig {
        KubectlConfig::for_context(self.cp.context())
            .with_kubeconfig(self.cp.kubeconfig_path())
            .with_env("KUBECACHEDIR", self.cache_dir.display().to_string())
    }
}

/// The etcd and kube-apiserver processes whose command line mentions
/// `dir` (the control plane's private directory).
fn server_pids(dir: &Path) -> Vec<u32> {
    processes_mentioning(dir)
        .into_iter()
        .filter(|(_, cmd)| {
            let program = cmd.split(' ').next().unwrap_or_default();
            matches!(program.rsplit('/').next(), Some("etcd" | "kube-apiserver"))
        })
        .filter_map(|(pid, _)| u32::try_from(pid).ok())
        .collect()
}
