//! What the HTTP transports share: every operation as an API request, and
//! how an answer becomes a result or a classified error.
//!
//! A transport ([`ProxyClient`](crate::ProxyClient), and `KubeClient` with
//! the `kube` feature) only carries requests ([`HttpTransport`]); the paths,
//! bodies, guards and error classification are written once, here, so both
//! behave alike down to which 404 reads as "absent".
//!
//! - `resources`: the managed resources (lists, pages, get, the two
//!   guarded writes) and [`rest_client!`], which implements
//!   [`Client`](crate::Client) and [`RawApi`](crate::RawApi) for a transport.
//! - `cluster_calls`, `leases`: discovery, access reviews, Events, Leases.
//! - `watch`: the watch request and its streamed answer.

mod cluster_calls;
mod leases;
pub(crate) mod resources;
mod watch;

pub(crate) use cluster_calls::{discover, review, write_event};
pub(crate) use leases::{lease_create, lease_get, lease_list, lease_update};
pub(crate) use resources::rest_client;
pub(crate) use watch::{body_chunks, watch};

use crate::http_status::classify_http;
use crate::{ApiRequest, ApiResponse, Error};
use bytes::Bytes;
use futures::stream::BoxStream;
use std::time::Duration;

/// Carries API requests to the server: all a transport has to do.
#[async_trait::async_trait]
pub(crate) trait HttpTransport: Send + Sync {
    /// How errors name this transport's operations (`proxy GET`).
    const NAME: &'static str;

    /// The deadline of a request that sets none.
    fn default_timeout(&self) -> Duration;

    /// Sends `request` and reads the whole answer within `timeout`,
    /// whatever its status; only a failure to carry it is an error.
    async fn round_trip(
        &self,
        request: http::Request<Bytes>,
        timeout: Duration,
    ) -> Result<(u16, Bytes), Error>;

    /// Sends a request whose answer streams (a watch). `timeout` covers the
    /// response headers and a refusal's body, not the stream.
    async fn open_stream(
        &self,
        request: http::Request<Bytes>,
        timeout: Duration,
    ) -> Result<Opened, Error>;
}

/// What the server answered a streamed request with.
pub(crate) enum Opened {
    /// 2xx: the body's chunks as they arrive; a broken connection is the
    /// last item.
    Streaming(BoxStream<'static, Result<Bytes, Error>>),
    /// Anything else, with its (short) body for classification only.
    Refused(u16, Bytes),
}

/// An API request as HTTP: method, path and query, JSON accepted; the
/// transport adds what its connection needs (a `Host`, the server's address,
/// credentials). Only our own JSON is ever sent.
pub(crate) fn http_request(
    method: &str,
    target: &str,
    content_type: &str,
    body: Bytes,
) -> Result<http::Request<Bytes>, Error> {
    http::Request::builder()
        .method(method)
        .uri(target)
        .header(http::header::ACCEPT, "application/json")
        .header(http::header::CONTENT_TYPE, content_type)
        .body(body)
        .map_err(|_| Error::InvalidOption {
            field: "path",
            reason: "is not a valid request target",
        })
}

/// Sends `request` through `transport` and returns the raw status and body,
/// whatever the status; only transport failures are errors.
pub(crate) async fn exchange<T: HttpTransport>(
    transport: &T,
    request: &ApiRequest,
) -> Result<(u16, Bytes), Error> {
    let method = request.method.as_str();
    let timeout = request.timeout.unwrap_or(transport.default_timeout());
    if timeout.is_zero() {
        return Err(Error::InvalidOption {
            field: "timeout",
            reason: "must be greater than zero",
        });
    }
    let body = match &request.body {
        Some(body) => Bytes::from(serde_json::to_vec(body).map_err(|_| decode::<T>(method))?),
        None => Bytes::new(),
    };
    let http_request = http_request(
        method,
        request.path.as_str(),
        request.method.content_type(),
        body,
    )?;
    transport.round_trip(http_request, timeout).await
}

/// [`RawApi::send`](crate::RawApi::send): the 2xx answer with its parsed
/// body, or the status classified.
pub(crate) async fn send<T: HttpTransport>(
    transport: &T,
    request: ApiRequest,
) -> Result<ApiResponse, Error> {
    let method = request.method.as_str();
    let (status, body) = exchange(transport, &request).await?;
    if !(200..300).contains(&status) {
        return Err(refused(method, status, &body));
    }
    let body = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        Some(serde_json::from_slice(&body).map_err(|_| decode::<T>(method))?)
    };
    Ok(ApiResponse { status, body })
}

/// A non-2xx answer as an error: the status and its classification, never
/// the body.
pub(crate) fn refused(method: &'static str, status: u16, body: &[u8]) -> Error {
    Error::Http {
        method,
        status,
        kind: classify_http(status, body),
    }
}

/// An answer that is not the JSON `operation` expects.
pub(crate) fn decode<T: HttpTransport>(operation: impl std::fmt::Display) -> Error {
    Error::Decode {
        operation: format!("{} {operation}", T::NAME),
    }
}

/// The deadline `timeout` passed while `method` was under way.
pub(crate) fn timed_out<T: HttpTransport>(method: &str, timeout: Duration) -> Error {
    Error::Timeout {
        operation: format!("{} {method}", T::NAME),
        timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
    }
}
