//! kube-rs as a transport (feature `kube`): the requests of the HTTP
//! transports, carried by a `kube::Client` the caller built.

mod failure;

use crate::rest::{body_chunks, rest_client, timed_out, HttpTransport, Opened};
use crate::Error;
use bytes::Bytes;
use futures::StreamExt;
use kube::client::Body;
use std::time::Duration;

/// The deadline of a request that sets none, as for the kubectl transports
/// ([`KubectlConfig::request_timeout_seconds`](crate::KubectlConfig::request_timeout_seconds)).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A [`Client`](crate::Client) and [`RawApi`](crate::RawApi) over a
/// [`kube::Client`] you already have (feature `kube`).
///
/// kube-rs does everything with the connection: kubeconfig or in-cluster
/// configuration, TLS, exec plugins and token refresh, as configured when
/// the `kube::Client` was built. No kubectl runs and nothing listens. The
/// requests, paths, resourceVersion guards and error classification are
/// exactly those of [`ProxyClient`](crate::ProxyClient):
///
/// - every request has a deadline (30 s, or
///   [`with_request_timeout`](Self::with_request_timeout), or the
///   request's own); a passed one is an [`Error::Timeout`];
/// - a non-2xx answer is an [`Error::Http`] classified from its status and
///   `Status` reason; a request kube could not carry is an [`Error::Kube`]
///   (unreachable server: `Unavailable`; failing credentials:
///   `Unauthorized`). Neither carries bodies, kube's messages or
///   credentials;
/// - lists come in pages, and [`watch`](crate::Client::watch) streams
///   events as they arrive, so the controller watches instead of polling.
///   The request deadline covers a watch's response headers; the stream
///   runs until the server ends it at `timeout_seconds` (kube's own
///   `read_timeout`, if configured, must be longer).
///
/// ```no_run
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// use blue_kubernetes_client::{Client, KubeClient, ResourceDescriptor, Transport};
/// use std::sync::Arc;
/// let kube = kube::Client::try_default().await?; // kubeconfig, else in-cluster
/// let transport = Arc::new(KubeClient::new(kube));
/// let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
/// println!("{} widgets", transport.list_resources(&widgets, "default").await?.len());
/// let client = transport.clone().into_client(); // for the controller
/// let api = transport.into_raw_api(); // for packages
/// # let _ = (client, api);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct KubeClient {
    client: kube::Client,
    timeout: Duration,
}

impl KubeClient {
    /// Sends every request through `client`, with a 30 s deadline each.
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Sets the deadline of requests that set none; zero makes every such
    /// request fail with [`Error::InvalidOption`].
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The `kube::Client` requests go through.
    pub fn kube_client(&self) -> &kube::Client {
        &self.client
    }

    /// Sends `request` and waits for its response headers.
    async fn respond(&self, request: http::Request<Bytes>) -> Result<http::Response<Body>, Error> {
        self.client
            .send(request.map(Body::from))
            .await
            .map_err(|e| failure::classify(&e))
    }
}

#[async_trait::async_trait]
impl HttpTransport for KubeClient {
    const NAME: &'static str = "kube";

    fn default_timeout(&self) -> Duration {
        self.timeout
    }

    async fn round_trip(
        &self,
        request: http::Request<Bytes>,
        timeout: Duration,
    ) -> Result<(u16, Bytes), Error> {
        let method = request.method().clone();
        let answer = async {
            let response = self.respond(request).await?;
            let status = response.status().as_u16();
            let body = response.into_body().collect_bytes().await;
            Ok((status, body.map_err(|e| failure::classify(&e))?))
        };
        tokio::time::timeout(timeout, answer)
            .await
            .unwrap_or_else(|_| Err(timed_out::<Self>(method.as_str(), timeout)))
    }

    async fn open_stream(
        &self,
        request: http::Request<Bytes>,
        timeout: Duration,
    ) -> Result<Opened, Error> {
        let method = request.method().clone();
        let opened = async {
            let response = self.respond(request).await?;
            let status = response.status().as_u16();
            let body = response.into_body();
            if (200..300).contains(&status) {
                return Ok(Opened::Streaming(
                    body_chunks(body, (), failure::broken).boxed(),
                ));
            }
            let body = body.collect_bytes().await;
            Ok(Opened::Refused(
                status,
                body.map_err(|e| failure::classify(&e))?,
            ))
        };
        tokio::time::timeout(timeout, opened)
            .await
            .unwrap_or_else(|_| Err(timed_out::<Self>(method.as_str(), timeout)))
    }
}

rest_client!(KubeClient);

// The kube::Client's configuration holds credentials: none of it is shown.
impl std::fmt::Debug for KubeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeClient")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
