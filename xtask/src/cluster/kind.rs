//! A kind cluster created for one run and deleted afterwards.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, ensure, Context, Result};

use super::control_plane::provision::which;
use crate::support::random::random_hex;

/// A kind cluster created for this run.
pub struct KindCluster {
    kind: PathBuf,
    pub name: String,
    pub kubeconfig: PathBuf,
    deleted: bool,
}

impl KindCluster {
    pub fn create(work: &Path) -> Result<Self> {
        let kind = which("kind")
            .context("--kind needs the `kind` CLI in PATH (https://kind.sigs.k8s.io)")?;
        let docker = which("docker").context("--kind needs Docker (`docker` not in PATH)")?;
        let info = Command::new(docker)
            .args(["info", "--format", "{{.ServerVersion}}"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .context("running docker info")?;
        ensure!(
            info.success(),
            "--kind needs a running Docker engine (`docker info` failed)"
        );
        let cluster = Self {
            kind,
            name: format!("blue-e2e-{}", random_hex(3)?),
            kubeconfig: work.join("kind-kubeconfig"),
            deleted: false,
        };
        println!("creating kind cluster {} (a minute or two)", cluster.name);
        let status = Command::new(&cluster.kind)
            .args(["create", "cluster", "--name", &cluster.name])
            .args(["--wait", "120s", "--kubeconfig"])
            .arg(&cluster.kubeconfig)
            .stdin(Stdio::null())
            .status()
            .context("running kind create cluster")?;
        if !status.success() {
            // The Drop deletes whatever half-exists.
            bail!("kind create cluster failed ({status})");
        }
        Ok(cluster)
    }

    pub fn context(&self) -> String {
        format!("kind-{}", self.name)
    }

    pub fn delete(mut self) -> Result<()> {
        self.delete_now()
    }

    fn delete_now(&mut self) -> Result<()> {
        if self.deleted {
            return Ok(());
        }
        self.deleted = true;
        let status = Command::new(&self.kind)
            .args(["delete", "cluster", "--name", &self.name])
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .stdin(Stdio::null())
            .status()
            .context("running kind delete cluster")?;
        ensure!(status.success(), "kind delete cluster failed ({status})");
        Ok(())
    }
}

impl Drop for KindCluster {
    fn drop(&mut self) {
        if let Err(err) = self.delete_now() {
            eprintln!("warning: {err:#}");
        }
    }
}
