//! The persistent transport: one long-lived `kubectl proxy` per client,
//! spoken to over HTTP/1.1 with keep-alive on a private Unix socket.

mod options;
mod pool;
mod process;
mod socket_dir;
mod supervisor;
mod watch;

pub use options::ProxyConfig;
pub use supervisor::ProxyStats;

use crate::rest::{rest_client, timed_out, HttpTransport, Opened};
use crate::{Error, KubectlClient};
use bytes::Bytes;
use http_body_util::Full;
use pool::PoolError;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use supervisor::{Generation, Supervisor};

/// Builds a [`ProxyClient`], validating the options exactly like
/// [`kubectl_client`](crate::kubectl_client). The proxy starts with the first
/// request, or at once with [`ProxyClient::start`].
///
/// ```
/// use blue_kubernetes_client::{proxy_client, Error, KubectlConfig, ProxyConfig};
/// let client = proxy_client(ProxyConfig::new(KubectlConfig::for_context("kind-dev"))).unwrap();
/// assert_eq!(client.context(), "kind-dev");
///
/// let err = proxy_client(ProxyConfig::new(KubectlConfig::default())).unwrap_err();
/// assert!(matches!(err, Error::InvalidOption { field: "context", .. }));
/// ```
pub fn proxy_client(options: ProxyConfig) -> Result<ProxyClient, Error> {
    ProxyClient::new(options)
}

/// A [`Client`](crate::Client) and [`RawApi`](crate::RawApi) that sends every request to one
/// long-lived `kubectl proxy`.
///
/// # How it works
/// - kubectl still does everything with credentials: it reads the
///   kubeconfig (or the generated in-cluster one naming the token *file*),
///   runs exec plugins, refreshes tokens. This process holds no credential
///   and needs no TLS. One difference from the per-call transport: the
///   long-lived proxy (client-go) rereads a token file about once a minute
///   rather than at every request, so a rotated token is picked up within a
///   minute (kubelet rotates projected tokens long before they expire).
/// - The proxy is `kubectl [--kubeconfig K] --context C proxy
///   --unix-socket=DIR/api.sock`, where `DIR` is a fresh directory of mode
///   0700 under `temp_dir`. The socket answers every API request with the
///   proxy's credentials, so anyone who can reach it acts as this operator:
///   only our user (and root) can enter `DIR`, and kubectl makes the socket
///   itself `srwx------`.
/// - Requests are HTTP/1.1 over keep-alive connections (about a millisecond
///   each on loopback, against about 100 ms for a kubectl process); each has
///   a deadline (`request_timeout_seconds`, or the request's own).
/// - Supervision: a proxy that exited fails the request that finds it with
///   an `Unavailable` error, and the next request starts a new one;
///   [`unanswered_limit`](ProxyConfig::unanswered_limit) deadlines in a row
///   replace a hung proxy. Repeated failures back off (see
///   [`ProxyConfig`]); [`stats`](Self::stats) counts it all.
/// - Lists are read in pages (`limit`, `continue`);
///   [`list_resources`](crate::Client::list_resources) reads every page of
///   [`DEFAULT_PAGE_LIMIT`](crate::DEFAULT_PAGE_LIMIT) and starts over once
///   if a continue token expires.
/// - A [`watch`](crate::Client::watch) gets a connection of its own, so it
///   never holds one the other requests need, and dropping the stream
///   closes it. The request deadline covers only the response headers; the
///   stream then runs until the server ends it at `timeout_seconds`, and if
///   it is still open 5 seconds after that (a connection that died without
///   closing) it ends with an [`ErrorKind::Timeout`](crate::ErrorKind::Timeout)
///   error. [`ProxyStats::watches`] counts them.
/// - The proxy leads its own process group, which is killed and its
///   directory removed on [`shutdown`](Self::shutdown) or drop; it also has
///   a parent-death signal so it dies with this process.
///
/// Errors are classified like the per-call transport's and never contain
/// request or response bodies, kubectl's output, or credentials.
///
/// ```no_run
/// # async fn example() -> Result<(), blue_kubernetes_client::Error> {
/// use blue_kubernetes_client::{proxy_client, Client, KubectlConfig, ProxyConfig, ResourceDescriptor};
/// let client = proxy_client(ProxyConfig::new(KubectlConfig::for_context("kind-dev")))?;
/// client.start().await?;
/// let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
/// let listed = client.list_resources(&widgets, "default").await?;
/// println!("{} widgets", listed.len());
/// client.shutdown().await;
/// # Ok(())
/// # }
/// ```
pub struct ProxyClient {
    supervisor: Supervisor,
    timeout: Duration,
    /// Validated options and the in-cluster kubeconfig's lifetime.
    kubectl: KubectlClient,
}

impl ProxyClient {
    fn new(options: ProxyConfig) -> Result<Self, Error> {
        if options.startup_timeout_ms == 0 {
            return Err(Error::InvalidOption {
                field: "startup_timeout_ms",
                reason: "must be greater than zero",
            });
        }
        if options.gc_percent == Some(0) {
            // GOGC=0 collects without pause; `None` is how to leave it alone.
            return Err(Error::InvalidOption {
                field: "gc_percent",
                reason: "must be greater than zero",
            });
        }
        let kubectl = crate::kubectl_client(options.kubectl.clone())?;
        // The per-call prefix minus `--request-timeout`: the proxy serves
        // long requests (watches) and our own deadline bounds each request.
        let mut argv: Vec<String> = kubectl
            .base_argv()
            .iter()
            .filter(|a| !a.starts_with("--request-timeout="))
            .cloned()
            .collect();
        argv.push("proxy".into());
        let supervisor = Supervisor::new(argv, &options)?;
        Ok(Self {
            supervisor,
            timeout: Duration::from_secs(options.kubectl.request_timeout_seconds),
            kubectl,
        })
    }

    /// Starts the proxy now, if it is not running, and waits (at most
    /// `startup_timeout_ms`) until its socket answers. Requests do this on
    /// demand; calling it first surfaces a wrong kubectl or context at once.
    pub async fn start(&self) -> Result<(), Error> {
        self.supervisor.current().await.map(|_| ())
    }

    /// Kills the proxy's process group and removes its directory. Later
    /// requests fail with [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable).
    pub async fn shutdown(&self) {
        self.supervisor.shutdown().await;
    }

    /// Starts, restarts, exits, hangs and connections so far.
    pub async fn stats(&self) -> ProxyStats {
        self.supervisor.stats().await
    }

    /// [`stats`](Self::stats) without waiting for a request in progress,
    /// for a metrics scrape: `connections` reads 0.
    pub fn lifecycle_stats(&self) -> ProxyStats {
        self.supervisor.lifecycle_stats()
    }

    /// The running proxy's process id (also its process group id).
    pub async fn pid(&self) -> Option<u32> {
        self.supervisor.running().await.map(|(pid, _)| pid)
    }

    /// The running proxy's private directory (holding `api.sock`).
    pub async fn socket_dir(&self) -> Option<PathBuf> {
        self.supervisor.running().await.map(|(_, dir)| dir)
    }

    /// True when the proxy gets a parent-death signal (`setpriv` found).
    pub fn has_parent_death_signal(&self) -> bool {
        self.supervisor.has_parent_death_signal()
    }

    /// The context the proxy uses (the generated one in-cluster).
    pub fn context(&self) -> &str {
        self.kubectl.context()
    }

    /// Runs `exchange` against the current proxy (started if need be)
    /// within `timeout`, and tells the supervisor how it went: an answer
    /// clears its strikes, a broken connection makes it check whether the
    /// proxy exited, a deadline counts towards replacing a hung proxy.
    async fn through_proxy<T, F, Fut>(
        &self,
        method: &str,
        timeout: Duration,
        exchange: F,
    ) -> Result<T, Error>
    where
        F: FnOnce(Arc<Generation>) -> Fut,
        Fut: Future<Output = Result<T, PoolError>>,
    {
        let mut used: Option<Arc<Generation>> = None;
        let exchanged = tokio::time::timeout(timeout, async {
            let generation = self.supervisor.current().await.map_err(Failure::Error)?;
            used = Some(generation.clone());
            match exchange(generation.clone()).await {
                Ok(answer) => Ok(answer),
                Err(PoolError::Connect | PoolError::Broken) => Err(Failure::Broken(generation)),
            }
        })
        .await;
        match exchanged {
            Ok(Ok(answer)) => {
                if let Some(generation) = &used {
                    self.supervisor.answered(generation);
                }
                Ok(answer)
            }
            Ok(Err(Failure::Error(error))) => Err(error),
            Ok(Err(Failure::Broken(generation))) => Err(self.supervisor.broken(&generation).await),
            Err(_elapsed) => {
                if let Some(generation) = &used {
                    self.supervisor.unanswered(generation).await;
                }
                Err(timed_out::<Self>(method, timeout))
            }
        }
    }
}

/// `request` as the proxy takes it: HTTP/1.1 needs a `Host`, and the proxy
/// supplies the API server's address and the credentials.
fn to_proxy(mut request: http::Request<Bytes>) -> http::Request<Full<Bytes>> {
    let host = http::HeaderValue::from_static("localhost");
    request.headers_mut().insert(http::header::HOST, host);
    request.map(Full::new)
}

/// Why an exchange did not produce an answer.
enum Failure {
    Error(Error),
    /// The connection to this proxy failed: find out whether it exited.
    Broken(Arc<Generation>),
}

#[async_trait::async_trait]
impl HttpTransport for ProxyClient {
    const NAME: &'static str = "proxy";

    fn default_timeout(&self) -> Duration {
        self.timeout
    }

    async fn round_trip(
        &self,
        request: http::Request<Bytes>,
        timeout: Duration,
    ) -> Result<(u16, Bytes), Error> {
        let method = request.method().clone();
        let request = to_proxy(request);
        self.through_proxy(method.as_str(), timeout, |generation| async move {
            generation.pool.exchange(request).await
        })
        .await
    }

    async fn open_stream(
        &self,
        request: http::Request<Bytes>,
        timeout: Duration,
    ) -> Result<Opened, Error> {
        self.stream(request, timeout).await
    }
}

rest_client!(ProxyClient);

impl std::fmt::Debug for ProxyClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyClient")
            .field("context", &self.kubectl.context())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
