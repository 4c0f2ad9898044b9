//! What a run installs: its namespace, the example's CRD and RBAC. On
//! clusters that outlive the run it is removed again, also after a failed
//! setup.

use anyhow::Result;
use serde_json::json;

use super::{manifests, Cluster};
use crate::support::kube::{Kube, LCM};

/// The second managed namespace and the ignored one of the watch checks,
/// named after the run's, so the installation can remove them.
pub fn extra_namespaces(main: &str) -> [String; 2] {
    [format!("{main}-watched"), format!("{main}-ignored")]
}

/// The namespace, CRD and RBAC of a run. On clusters that outlive the run,
/// removes what it added (also on drop, e.g. after a failed setup).
pub struct Installation {
    kube: Kube,
    created_crd: bool,
    /// Still to be removed: the run created the namespace on a cluster that
    /// outlives it (the demo installs into `default`, never ours to delete).
    pending: bool,
    /// The server evaluates the CRD's CEL rules.
    pub cel: bool,
}

impl Installation {
    /// Creates the namespace (unless it exists), applies the CRD (without
    /// CEL rules on servers before 1.25), waits until it is established, and
    /// applies the RBAC.
    pub fn install(cluster: &Cluster, kube: &Kube) -> Result<Self> {
        let created_namespace = kube.get("namespace", kube.namespace())?.is_none();
        let mut this = Self {
            kube: kube.clone(),
            created_crd: kube.get("crd", manifests::CRD_NAME)?.is_none(),
            pending: created_namespace && !cluster.is_disposable(),
            cel: false,
        };
        if created_namespace {
            kube.ok(&["create", "namespace", kube.namespace()], None)?;
        }
        let (crd, cel) = manifests::crd_for(kube, |cel| {
            local_configmap_operator::cli::runner().crd_yaml(cel)
        })?;
        kube.apply_crd(&crd, manifests::CRD_NAME)?;
        kube.apply(&manifests::in_namespace(manifests::RBAC, kube.namespace()))?;
        this.cel = cel;
        Ok(this)
    }

    /// kubectl in the run's namespace.
    pub fn kube(&self) -> &Kube {
        &self.kube
    }

    /// On a cluster that outlives the run: drops the finalizers of leftover
    /// resources (the operator is stopped by now), deletes the namespace
    /// (and the watch checks' extra ones) and,
    /// if this run created it, the CRD.
    pub fn remove(mut self) -> Result<()> {
        self.remove_now()
    }

    fn remove_now(&mut self) -> Result<()> {
        if !std::mem::take(&mut self.pending) {
            return Ok(());
        }
        let main = self.kube.namespace().to_string();
        let [watched, ignored] = extra_namespaces(&main);
        for ns in [main.clone(), watched, ignored] {
            let kube = self.kube.in_namespace(&ns);
            if ns != main && kube.get("namespace", &ns)?.is_none() {
                continue;
            }
            let names = kube.ok(&["get", LCM, "-o", "name"], None)?;
            // `-o name` prints TYPE/NAME.
            let names: Vec<&str> = (names.lines())
                .filter_map(|l| Some(l.trim().rsplit_once('/')?.1))
                .collect();
            // One kubectl per few hundred names: a process per name took
            // 20 minutes after the bench's 10,000-object migration.
            let patch = json!({"metadata": {"finalizers": null}}).to_string();
            for chunk in names.chunks(500) {
                let mut args = vec!["patch", LCM, "--type=merge", "-p", &patch];
                args.extend(chunk);
                kube.ok(&args, None)?;
            }
            kube.delete("namespace", &ns)?;
        }
        if self.created_crd {
            self.kube.delete("crd", manifests::CRD_NAME)?;
        }
        Ok(())
    }
}

impl Drop for Installation {
    fn drop(&mut self) {
        if let Err(err) = self.remove_now() {
            eprintln!("warning: cleaning up the test namespace: {err:#}");
        }
    }
}
