#![doc = include_str!("../README.md")]

pub mod assets;
mod certs;
mod control_plane;
mod crd;
mod error;
pub mod kubectl;
pub mod operator;
pub mod process;
pub mod procfs;
mod random;
mod restart;
mod spawner;
mod sweep;
mod wait;
#[cfg(feature = "webhook")]
pub mod webhook;

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use blue_kubernetes_client::{proxy_client, Client, KubectlConfig, ProxyConfig};
use serde_json::Value;

pub use control_plane::{Component, ControlPlane, CONTEXT};
pub use error::Error;
pub use kubectl::Kubectl;
pub use random::random_hex;
pub use wait::eventually;

use crate::error::io_error;
use crate::wait::{poll, Probe};

/// A running etcd and kube-apiserver for tests: [`Envtest::shared`] for
/// the one every test of a process shares, [`Envtest::start`] for one of
/// its own. Stopped on drop (also when a test panics); the processes die
/// with the test process however it ends.
#[derive(Debug)]
pub struct Envtest {
    cp: ControlPlane,
    crds: crd::Installed,
}

impl Envtest {
    /// The process-wide control plane, started on first use; tests in one
    /// process share it (use a namespace each, [`Envtest::namespace`]).
    /// Never dropped: its processes get SIGKILL when the test process
    /// exits, and its directory is removed then (or by the next start).
    /// A failed start is returned to every caller.
    pub fn shared() -> Result<&'static Envtest, Error> {
        static SHARED: OnceLock<Result<Envtest, Error>> = OnceLock::new();
        SHARED
            .get_or_init(Envtest::start)
            .as_ref()
            .map_err(Clone::clone)
    }

    /// A control plane of its own (e.g. for another version of a CRD),
    /// stopped on drop. Fails with [`Error::MissingAssets`] when the
    /// binaries are not on this machine; it never provisions them.
    pub fn start() -> Result<Envtest, Error> {
        Ok(Envtest {
            cp: ControlPlane::start()?,
            crds: crd::Installed::default(),
        })
    }

    /// The kubeconfig file: server, CA and an admin token (`system:masters`).
    pub fn kubeconfig(&self) -> &Path {
        self.cp.kubeconfig_path()
    }

    /// The kubeconfig context to use ([`CONTEXT`]).
    pub fn context(&self) -> &str {
        self.cp.context()
    }

    /// Installs a CRD (JSON, as `blue_kubernetes::crd::generate` makes; CEL
    /// rules are stripped, which Kubernetes 1.20 does not know) and waits until it
    /// is Established and served. Idempotent: installing the same CRD again
    /// is a no-op; a different CRD of the same name is
    /// [`Error::CrdConflict`] (a test that needs another version starts a
    /// server of its own). The server's refusal is an [`Error::Command`]
    /// with its message.
    pub fn install_crd(&self, crd: &Value) -> Result<(), Error> {
        self.crds.install(&self.cp, crd)
    }

    /// Creates a fresh namespace named `<prefix>-<random>` and returns its
    /// name.
    pub fn namespace(&self, prefix: &str) -> Result<String, Error> {
        let valid = prefix.len() <= 50
            && prefix.starts_with(|c: char| c.is_ascii_lowercase())
            && prefix
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !valid {
            return Err(Error::InvalidPrefix {
                prefix: prefix.to_string(),
            });
        }
        let name = format!("{prefix}-{}", random::random_hex(4)?);
        self.kubectl(&["create", "namespace", &name])?;
        Ok(name)
    }

    /// A [`Client`] for the controller on this server's kubeconfig and
    /// context: the proxy transport (one `kubectl proxy`, started with the
    /// first request, watching), sharing this server's discovery cache.
    pub fn client(&self) -> Result<Arc<dyn Client>, Error> {
        let kubectl = KubectlConfig::for_context(CONTEXT)
            .with_kubeconfig(self.kubeconfig())
            .with_kubectl(self.cp.kubectl())
            .with_env(
                "KUBECACHEDIR",
                self.cp.kube_cache_dir().display().to_string(),
            );
        let client = proxy_client(ProxyConfig::new(kubectl));
        Ok(Arc::new(client.map_err(|e| Error::Client(Arc::new(e)))?))
    }

    /// Runs `kubectl <args>` against this server (kubeconfig, context and
    /// discovery cache set, 10 s request deadline); its standard output.
    pub fn kubectl(&self, args: &[&str]) -> Result<String, Error> {
        self.cp.kubectl.ok(args, None)
    }

    /// kubectl against this server, bound to `namespace`, for a test's own
    /// steps ([`Kubectl`]: get, create, apply, patch, delete, any command).
    pub fn kubectl_in(&self, namespace: &str) -> Kubectl {
        self.cp.kubectl.in_namespace(namespace)
    }

    /// Creates `object` in `namespace` and returns it as stored (defaulted
    /// and pruned by its CRD's schema).
    pub fn create(&self, namespace: &str, object: &Value) -> Result<Value, Error> {
        let file = tempfile::Builder::new()
            .suffix(".json")
            .tempfile_in(self.cp.dir())
            .map_err(io_error("creating a manifest file"))?;
        std::fs::write(file.path(), object.to_string())
            .map_err(io_error("writing a manifest file"))?;
        let path = file.path().to_string_lossy();
        let created = self.kubectl(&["create", "-n", namespace, "-f", &path, "-o", "json"])?;
        serde_json::from_str(&created).map_err(|_| Error::Command {
            command: "kubectl create".into(),
            detail: "printed no JSON object".into(),
        })
    }

    /// Gets `resource` (`kind/name` or `plural.group/name`) in `namespace`
    /// every 200 ms until `ready` holds for it (at most `timeout`);
    /// returns it.
    pub fn wait_for(
        &self,
        namespace: &str,
        resource: &str,
        timeout: Duration,
        ready: impl Fn(&Value) -> bool,
    ) -> Result<Value, Error> {
        let what = format!("{resource} in {namespace} is ready");
        poll(&what, timeout, Duration::from_millis(200), || {
            let got = self.kubectl(&["get", "-n", namespace, resource, "-o", "json"]);
            let got = got.map_err(|e| Probe::NotYet(e.to_string()))?;
            let object: Value = serde_json::from_str(&got).unwrap_or_default();
            if ready(&object) {
                Ok(object)
            } else {
                let status = object.get("status").cloned().unwrap_or_default();
                Err(Probe::NotYet(format!("status is {status}")))
            }
        })
    }

    /// The processes underneath, e.g. to [`ControlPlane::restart`] the API
    /// server in a fault test.
    pub fn control_plane(&self) -> &ControlPlane {
        &self.cp
    }

    /// Stops the control plane now and reports what could not be cleaned
    /// up (dropping it does the same, printing instead).
    pub fn stop(self) -> Result<(), Error> {
        self.cp.stop()
    }
}
