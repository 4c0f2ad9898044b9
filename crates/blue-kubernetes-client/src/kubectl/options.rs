//! How a [`KubectlClient`](crate::KubectlClient) reaches the cluster.

use crate::Runner;
use std::path::PathBuf;
use std::sync::Arc;

/// Where in-cluster credentials are mounted in every pod.
pub const DEFAULT_SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The configuration of [`kubectl_client`](crate::kubectl_client).
///
/// Either a non-blank [`context`](Self::context) or
/// [`in_cluster`](Self::in_cluster) is required: the client never falls back
/// to the user's current context, which could point at the wrong cluster.
///
/// ```
/// use blue_kubernetes_client::KubectlConfig;
/// let options = KubectlConfig::for_context("kind-dev")
///     .with_kubeconfig("/home/me/.kube/config")
///     .with_env("KUBECACHEDIR", "/tmp/kube-cache");
/// assert_eq!(options.request_timeout_seconds, 30);
/// assert_eq!(options.timeout_ms, 45_000);
/// assert_eq!(options.kubectl, std::path::PathBuf::from("kubectl"));
///
/// let in_cluster = KubectlConfig::in_cluster();
/// assert!(in_cluster.in_cluster && in_cluster.context.is_none());
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct KubectlConfig {
    /// The kubeconfig context to use (`--context`). Required unless
    /// `in_cluster`.
    pub context: Option<String>,
    /// Use the pod's service account instead of a kubeconfig.
    pub in_cluster: bool,
    /// The kubeconfig file (`--kubeconfig`); kubectl's default lookup when `None`.
    pub kubeconfig: Option<PathBuf>,
    /// The kubectl binary, looked up on `PATH` when not absolute.
    pub kubectl: PathBuf,
    /// The API request deadline kubectl enforces (`--request-timeout`), in seconds.
    pub request_timeout_seconds: u64,
    /// The process deadline, in milliseconds, after which kubectl and
    /// everything it spawned is killed. Keep it above the request timeout so
    /// kubectl can report its own, better classified, timeout first.
    pub timeout_ms: u64,
    /// Runs the kubectl processes; a [`TokioRunner`](crate::TokioRunner) when `None`.
    pub runner: Option<Arc<dyn Runner>>,
    /// Extra environment for every kubectl process (e.g. `KUBECACHEDIR`).
    pub env: Vec<(String, String)>,
    /// Where the client makes its private (0700) scratch directory for
    /// input documents and the in-cluster kubeconfig; the system temporary
    /// directory when `None`. The scratch directory goes when the client
    /// drops; those of processes that died without cleaning up (SIGKILL)
    /// are swept here when a client is built.
    pub temp_dir: Option<PathBuf>,
    /// In-cluster: the service-account directory holding `token` and
    /// `ca.crt`; [`DEFAULT_SERVICE_ACCOUNT_DIR`] when `None`.
    pub service_account_dir: Option<PathBuf>,
    /// In-cluster: overrides `KUBERNETES_SERVICE_HOST`.
    pub service_host: Option<String>,
    /// In-cluster: overrides `KUBERNETES_SERVICE_PORT` (default 443).
    pub service_port: Option<String>,
}

impl Default for KubectlConfig {
    fn default() -> Self {
        Self {
            context: None,
            in_cluster: false,
            kubeconfig: None,
            kubectl: PathBuf::from("kubectl"),
            request_timeout_seconds: 30,
            timeout_ms: 45_000,
            runner: None,
            env: Vec::new(),
            temp_dir: None,
            service_account_dir: None,
            service_host: None,
            service_port: None,
        }
    }
}

impl KubectlConfig {
    /// Defaults with an explicit kubeconfig context.
    pub fn for_context(context: impl Into<String>) -> Self {
        Self {
            context: Some(context.into()),
            ..Self::default()
        }
    }

    /// Defaults with in-cluster (service account) credentials.
    pub fn in_cluster() -> Self {
        Self {
            in_cluster: true,
            ..Self::default()
        }
    }

    /// Sets the kubeconfig file.
    pub fn with_kubeconfig(mut self, path: impl Into<PathBuf>) -> Self {
        self.kubeconfig = Some(path.into());
        self
    }

    /// Sets the kubectl binary.
    pub fn with_kubectl(mut self, path: impl Into<PathBuf>) -> Self {
        self.kubectl = path.into();
        self
    }

    /// Injects a runner (e.g. a recording fake in tests).
    ///
    /// ```
    /// use blue_kubernetes_client::{KubectlConfig, Invocation, Output};
    /// let options = KubectlConfig::for_context("test").with_runner(|_inv: Invocation| async {
    ///     Ok(Output::default())
    /// });
    /// assert!(options.runner.is_some());
    /// ```
    pub fn with_runner(mut self, runner: impl Runner + 'static) -> Self {
        self.runner = Some(Arc::new(runner));
        self
    }

    /// Adds one environment variable for every kubectl process.
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Sets the directory for private temporary files.
    pub fn with_temp_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.temp_dir = Some(dir.into());
        self
    }

    /// Sets the process deadline in milliseconds.
    pub fn with_timeout_ms(mut self, timeout_ms: u64) -> Self {
        self.timeout_ms = timeout_ms;
        self
    }

    /// Sets kubectl's API request deadline in seconds.
    pub fn with_request_timeout_seconds(mut self, seconds: u64) -> Self {
        self.request_timeout_seconds = seconds;
        self
    }
}

// Environment values may be credentials and the runner is opaque, so Debug
// shows only their presence and count.
impl std::fmt::Debug for KubectlConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubectlConfig")
            .field("context", &self.context)
            .field("in_cluster", &self.in_cluster)
            .field("kubeconfig", &self.kubeconfig)
            .field("kubectl", &self.kubectl)
            .field("request_timeout_seconds", &self.request_timeout_seconds)
            .field("timeout_ms", &self.timeout_ms)
            .field("runner", &self.runner.as_ref().map(|_| "<custom>"))
            .field("env", &self.env.len())
            .field("temp_dir", &self.temp_dir)
            .field("service_account_dir", &self.service_account_dir)
            .field("service_host", &self.service_host)
            .field("service_port", &self.service_port)
            .finish()
    }
}
