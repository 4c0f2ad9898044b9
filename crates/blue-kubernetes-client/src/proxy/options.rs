//! The configuration of [`proxy_client`](crate::proxy_client).

use crate::KubectlConfig;

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
/// use blue_kubernetes_client::{KubectlConfig, ProxyConfig};
/// let options = ProxyConfig::new(KubectlConfig::for_context("kind-dev"));
/// assert_eq!(options.startup_timeout_ms, 10_000);
/// assert_eq!(options.unanswered_limit, 3);
/// assert!(options.parent_death_signal);
/// assert_eq!(options.gc_percent, None, "Go's own GOGC");
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ProxyConfig {
    /// Cluster, credentials, kubectl binary, default deadline.
    pub kubectl: KubectlConfig,
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
    /// The proxy's Go garbage-collection target (`GOGC`); `None` (the
    /// default) leaves Go's own, 100. A higher value trades memory for CPU:
    /// the proxy allocates afresh for every request it forwards, and at a
    /// hundred requests a second 400 saved a quarter of its CPU (3.2-4.3%
    /// of a core at 100, 2.8-3.1% at 400) for about 18 MiB more resident
    /// memory. A healthy fleet on the watched copy sends it no request, so
    /// the default is Go's (idle with 1,000 watched resources 47.6 MiB at
    /// 100 against 48.5 at 400; with 10,000, 47.2 against 50.7). A `GOGC`
    /// in `kubectl.env` or in this process's environment wins over this.
    pub gc_percent: Option<u32>,
}

impl ProxyConfig {
    /// Defaults around `kubectl`.
    pub fn new(kubectl: KubectlConfig) -> Self {
        Self {
            kubectl,
            startup_timeout_ms: 10_000,
            restart_backoff_ms: 200,
            max_restart_backoff_ms: 10_000,
            unanswered_limit: 3,
            parent_death_signal: true,
            gc_percent: None,
        }
    }

    /// The environment the proxy gets beyond this process's: `kubectl.env`
    /// and, unless a `GOGC` is already set (`inherited`: this process's),
    /// the [`gc_percent`](Self::gc_percent).
    pub(crate) fn proxy_env(&self, inherited: Option<&std::ffi::OsStr>) -> Vec<(String, String)> {
        let mut env = self.kubectl.env.clone();
        let set = inherited.is_some() || env.iter().any(|(k, _)| k == "GOGC");
        if let (false, Some(percent)) = (set, self.gc_percent) {
            env.push(("GOGC".into(), percent.to_string()));
        }
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gogc(env: &[(String, String)]) -> Vec<&str> {
        env.iter()
            .filter(|(k, _)| k == "GOGC")
            .map(|(_, v)| v.as_str())
            .collect()
    }

    #[test]
    fn the_proxy_keeps_gos_collector_unless_told_otherwise() {
        let mut options = ProxyConfig::new(KubectlConfig::for_context("dev"));
        assert!(gogc(&options.proxy_env(None)).is_empty(), "Go's default");
        options.gc_percent = Some(400);
        assert_eq!(gogc(&options.proxy_env(None)), ["400"]);
        // This process's environment, then kubectl's own, win.
        assert!(gogc(&options.proxy_env(Some("150".as_ref()))).is_empty());
        options.kubectl.env.push(("GOGC".into(), "200".into()));
        assert_eq!(gogc(&options.proxy_env(None)), ["200"]);
    }

    #[test]
    fn a_gc_percent_of_zero_is_refused_naming_the_field() {
        let mut options = ProxyConfig::new(KubectlConfig::for_context("dev"));
        options.gc_percent = Some(0);
        match crate::proxy_client(options) {
            Err(crate::Error::InvalidOption { field, .. }) => assert_eq!(field, "gc_percent"),
            other => panic!("expected an invalid option, got {:?}", other.map(|_| ())),
        }
    }
}
