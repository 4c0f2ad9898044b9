//! The real API server of the bench: a local control plane with the CRD the
//! library generates for the no-op package, kubectl options for it, and
//! population set-up.

use std::path::{Path, PathBuf};

use anyhow::{ensure, Result};
use blue_kubernetes::CrdOptions;
use blue_kubernetes_client::KubectlOptions;
use serde_json::{json, Value};

use super::package::{self, resource_type, GROUP};
use crate::cluster::control_plane::ControlPlane;
use crate::support::kube::Kube;
use crate::support::processes::processes_mentioning;

/// Objects per `kubectl apply` List document.
const APPLY_BATCH: usize = 250;

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
        let cp = ControlPlane::start()?;
        let cache_dir = cp.dir().join("kube-cache");
        let server_pids = server_pids(cp.dir());
        ensure!(
            server_pids.len() == 2,
            "expected etcd and kube-apiserver, found {server_pids:?}"
        );
        let kube = cp.kube();
        // The CRD the library generates for the packages (the stepped one's
        // status has the workflow record too); the local 1.20 server knows
        // no CEL rules.
        let options = CrdOptions::default().with_cel(false);
        let crd = blue_kubernetes::crd(&package::converging(1), &options)?;
        kube.apply_crd(&crd.to_string(), &resource_type())?;
        Ok(Self {
            cp,
            kube,
            server_pids,
            cache_dir,
        })
    }

    /// Creates resources `w-<i>` for `i` in `range` in `namespace` (created
    /// first when `range` starts at 0) with `spec.reconcileInterval` =
    /// `interval(i)` and `finalizers` already set, using `kubectl apply -f -`
    /// with List batches.
    pub fn create_resources(
        &self,
        namespace: &str,
        range: std::ops::Range<usize>,
        interval: impl Fn(usize) -> &'static str,
        finalizers: &[&str],
    ) -> Result<()> {
        if range.start == 0 {
            self.kube.ok(&["create", "namespace", namespace], None)?;
        }
        for batch in range.collect::<Vec<_>>().chunks(APPLY_BATCH) {
            let items: Vec<Value> = batch
                .iter()
                .map(|i| {
                    json!({
                        "apiVersion": format!("{GROUP}/v1"),
                        "kind": "BenchWidget",
                        "metadata": {
                            "name": package::name(*i),
                            "namespace": namespace,
                            "finalizers": finalizers,
                        },
                        "spec": {"reconcileInterval": interval(*i), "config": {"size": 1}},
                    })
                })
                .collect();
            let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
            self.kube.in_namespace(namespace).apply(&list.to_string())?;
        }
        Ok(())
    }

    /// Transport options for this control plane (admin context, private
    /// discovery cache).
    pub fn kubectl_options(&self) -> KubectlOptions {
        KubectlOptions::for_context(self.cp.context())
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
