//! Options of [`proxy_client`](crate::proxy_client).

use crate::KubectlOptions;

/// How a [`ProxyClient`](crate::ProxyClient) runs and supervises its
/// `kubectl proxy`.
///
/// The cluster is chosen exactly as for the per-call transport, by
/// [`kubectl`](Self::kubectl): an explicit context or in-cluster credentials,
/// a dedicated kubeconfig, the kubectl binary and its environment.
/// `kubectl.request_timeout_seconds` is the default deadline of each request
/// and `kubectl.temp_dir` the parent of the proxy's private directory;
/// `kubectl.timeout_ms` and `kubectl.runner` are not used.
///
/// ```
/// use blue_kubernetes_client::{KubectlOptions, ProxyOptions};
/// let options = ProxyOptions::new(KubectlOptions::for_context("kind-dev"));
/// assert_eq!(options.startup_timeout_ms, 10_000);
/// assert_eq!(options.unanswered_limit, 3);
/// assert!(options.parent_death_signal);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ProxyOptions {
    /// Cluster, credentials, kubectl binary, default deadline.
    pub kubectl: KubectlOptions,
    /// How long a starting proxy may take to open its socket.
    pub startup_timeout_ms: u64,
    /// The wait before the second restart in a row; it doubles with every
    /// further failure up to [`max_restart_backoff_ms`](Self::max_restart_backoff_ms)
    /// and resets with the next successful request. The first restart after
    /// a proxy that worked is immediate.
    pub restart_backoff_ms: u64,
    /// The longest wait between restarts.
    pub max_restart_backoff_ms: u64,
    /// Consecutive request deadlines after which a running proxy counts as
    /// hung and is replaced.
    pub unanswered_limit: u32,
    /// Give the proxy a parent-death signal (`setpriv --pdeathsig KILL`, when
    /// installed), so it dies with this process even on SIGKILL.
    pub parent_death_signal: bool,
}

impl ProxyOptions {
    /// Defaults around `kubectl`.
    pub fn new(kubectl: KubectlOptions) -> Self {
        Self {
            kubectl,
            startup_timeout_ms: 10_000,
            restart_backoff_ms: 200,
            max_restart_backoff_ms: 10_000,
            unanswered_limit: 3,
            parent_death_signal: true,
        }
    }
}
