//! The cluster under test: the local control plane (default) or an existing
//! cluster by context; and what a run installs into it.

use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;

pub mod control_plane;
pub mod installation;
pub mod manifests;

use crate::support::interrupt;
use crate::support::kube::{kubectl_binary, Kube};
use control_plane::ControlPlane;

/// Which cluster a run uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Start a local etcd + kube-apiserver (provisioned on first use).
    Local,
    /// An existing cluster: this context (in this kubeconfig, if given).
    Context {
        /// The kubeconfig context.
        context: String,
        /// kubeconfig file; kubectl's default lookup when `None`.
        kubeconfig: Option<PathBuf>,
    },
}

/// Where the API server is, as seen from this machine.
#[derive(Debug)]
pub struct Endpoint {
    /// Host name or IP address (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// PEM of the CA that signed the server certificate.
    pub ca_pem: Vec<u8>,
}

/// A cluster ready for kubectl; a local one goes away on drop.
pub struct Cluster {
    /// The local control plane; `None` for an existing cluster.
    local: Option<ControlPlane>,
    /// kubectl bound to this cluster, in the `default` namespace.
    kube: Kube,
}

impl Cluster {
    /// Opens (or creates) the cluster for `mode`; `work` holds scratch files.
    pub fn open(mode: &Mode, work: &Path) -> Result<Self> {
        let kubectl = kubectl_binary()?;
        let cache_dir = work.join("kube-cache");
        let (local, kubeconfig, context) = match mode {
            Mode::Local => {
                let cp = interrupt::with_default_mask(control_plane::start)?;
                let (k, c) = (cp.kubeconfig_path().to_path_buf(), cp.context().to_string());
                (Some(cp), Some(k), c)
            }
            Mode::Context {
                context,
                kubeconfig,
            } => (None, kubeconfig.clone(), context.clone()),
        };
        let kube = Kube::new(kubectl, kubeconfig, &context, &cache_dir, "default");
        Ok(Self { local, kube })
    }

    /// kubectl bound to this cluster and `namespace`.
    pub fn kube(&self, namespace: &str) -> Kube {
        self.kube.in_namespace(namespace)
    }

    /// True for clusters created for this run (nothing inside needs cleanup).
    pub fn is_disposable(&self) -> bool {
        self.local.is_some()
    }

    /// One line for humans.
    pub fn describe(&self) -> String {
        match &self.local {
            Some(cp) => format!(
                "local control plane at {} (ready in {:.1}s)",
                cp.server(),
                cp.startup_time().as_secs_f64()
            ),
            None => format!("existing cluster, context {}", self.kube.context()),
        }
    }

    /// The local control plane, if this is one.
    pub fn control_plane(&self) -> Option<&ControlPlane> {
        self.local.as_ref()
    }

    /// The API server endpoint and CA from the kubeconfig, for running the
    /// operator "in-cluster" from outside.
    pub fn endpoint(&self) -> Result<Endpoint> {
        let view = self
            .kube
            .json(&["config", "view", "--minify", "--raw", "-o", "json"])?;
        let cluster = &view["clusters"][0]["cluster"];
        let server = cluster["server"]
            .as_str()
            .context("the kubeconfig names no server")?;
        let (host, port) = split_server(server)?;
        let ca_pem = if let Some(data) = cluster["certificate-authority-data"].as_str() {
            STANDARD
                .decode(data.trim())
                .context("decoding certificate-authority-data")?
        } else if let Some(path) = cluster["certificate-authority"].as_str() {
            std::fs::read(path).with_context(|| format!("reading {path}"))?
        } else {
            bail!("the kubeconfig has no certificate authority for the server")
        };
        Ok(Endpoint { host, port, ca_pem })
    }

    /// Stops what this run started.
    pub fn stop(self) -> Result<()> {
        Ok(self.local.map_or(Ok(()), ControlPlane::stop)?)
    }
}

/// `https://HOST:PORT` (IPv6 in brackets) into host and port.
fn split_server(server: &str) -> Result<(String, u16)> {
    let rest = server
        .strip_prefix("https://")
        .context("the API server is not https")?;
    let authority = rest.trim_end_matches('/');
    ensure!(
        !authority.contains('/'),
        "API servers behind a path prefix are not supported"
    );
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !p.contains(']') => (h, p.parse().context("bad API server port")?),
        _ => (authority, 443),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok((host.to_string(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_split_into_host_and_port() {
        for (server, host, port) in [
            ("https://127.0.0.1:6443", "127.0.0.1", 6443),
            ("https://[::1]:8443/", "::1", 8443),
            ("https://api.example.com", "api.example.com", 443),
        ] {
            assert_eq!(split_server(server).unwrap(), (host.to_string(), port));
        }
        assert!(split_server("http://x:80").is_err());
        assert!(split_server("https://x:80/prefix").is_err());
    }
}
