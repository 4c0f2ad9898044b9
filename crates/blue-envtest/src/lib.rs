#![doc = include_str!("../README.md")]

mod error;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use error::Error;

/// A running etcd and kube-apiserver for tests.
#[derive(Debug)]
pub struct Envtest {
    kubeconfig: PathBuf,
}

impl Envtest {
    /// The process-wide control plane, started on first use; tests in one
    /// process share it (use a namespace each).
    pub fn shared() -> Result<&'static Envtest, Error> {
        Err(Error::MissingAssets)
    }

    /// A control plane of its own (e.g. for another version of a CRD),
    /// stopped on drop.
    pub fn start() -> Result<Envtest, Error> {
        Err(Error::MissingAssets)
    }

    /// The kubeconfig file (server, CA, admin token).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The kubeconfig context to use.
    pub fn context(&self) -> &str {
        "blue-envtest"
    }

    /// Installs a CRD and waits until it is Established; idempotent.
    pub fn install_crd(&self, _crd: &serde_json::Value) -> Result<(), Error> {
        Err(Error::MissingAssets)
    }

    /// Creates a fresh namespace named `<prefix>-<random>` and returns its name.
    pub fn namespace(&self, _prefix: &str) -> Result<String, Error> {
        Err(Error::MissingAssets)
    }

    /// A client for the controller on this server's kubeconfig and context.
    pub fn client(&self) -> Result<Arc<dyn blue_kubernetes_client::Client>, Error> {
        Err(Error::MissingAssets)
    }
}
