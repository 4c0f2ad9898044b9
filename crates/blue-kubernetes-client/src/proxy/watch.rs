//! Watches through the proxy: one request per watch on a connection of its
//! own, its body decoded as it streams in.

use super::pool::Sender;
use super::{http_request, ProxyClient};
use crate::http_status::classify_http;
use crate::watch_stream::{watch_stream, WATCH_GRACE};
use crate::{ApiPath, Error, ErrorKind, WatchRequest, WatchStream};
use bytes::Bytes;
use futures::Stream;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use std::time::Duration;

/// What the proxy answered a watch request with.
enum Opened {
    /// 2xx: the events follow in the body.
    Streaming(Sender, Incoming),
    /// Anything else, with its (short) body for classification only.
    Refused(u16, Bytes),
}

impl ProxyClient {
    /// Sends the watch request for the collection at `path` and returns its
    /// events as they arrive. The request deadline covers the response
    /// headers (and a refusal's body); the stream itself may run
    /// `timeout_seconds` plus a grace before it is given up as dead.
    pub(super) async fn open_watch(
        &self,
        path: ApiPath,
        request: &WatchRequest,
    ) -> Result<WatchStream, Error> {
        if request.timeout_seconds == 0 {
            return Err(Error::InvalidOption {
                field: "timeout_seconds",
                reason: "must be greater than zero: a watch needs the server to end it",
            });
        }
        let mut path = path
            .with_query("watch", "1")
            .with_query("resourceVersion", &request.resource_version)
            .with_query("timeoutSeconds", &request.timeout_seconds.to_string());
        if request.bookmarks {
            path = path.with_query("allowWatchBookmarks", "true");
        }
        let http_request = http_request("GET", path.as_str(), "application/json", Bytes::new())?;
        let opened = self
            .through_proxy("GET", self.timeout, |generation| async move {
                let (sender, response) = generation.pool.open_stream(http_request).await?;
                let status = response.status().as_u16();
                let body = response.into_body();
                if (200..300).contains(&status) {
                    return Ok(Opened::Streaming(sender, body));
                }
                let body = body.collect().await.map_err(|_| super::PoolError::Broken)?;
                Ok(Opened::Refused(status, body.to_bytes()))
            })
            .await?;
        match opened {
            Opened::Refused(status, body) => Err(Error::Http {
                method: "GET",
                status,
                kind: classify_http(status, &body),
            }),
            Opened::Streaming(sender, body) => {
                self.supervisor.watch_opened();
                let lifetime =
                    Duration::from_secs(u64::from(request.timeout_seconds)) + WATCH_GRACE;
                Ok(watch_stream(chunks(sender, body), lifetime))
            }
        }
    }
}

/// The data chunks of `body` as they arrive. `sender` rides along so the
/// connection lives exactly as long as the stream.
fn chunks(sender: Sender, body: Incoming) -> impl Stream<Item = Result<Bytes, Error>> + Send {
    futures::stream::unfold(Some((sender, body)), |state| async move {
        let (sender, mut body) = state?;
        loop {
            match body.frame().await {
                None => return None,
                Some(Err(_)) => return Some((Err(broken()), None)),
                Some(Ok(frame)) => {
                    // Trailers carry nothing a watch needs.
                    if let Ok(data) = frame.into_data() {
                        return Some((Ok(data), Some((sender, body))));
                    }
                }
            }
        }
    })
}

fn broken() -> Error {
    Error::Proxy {
        problem: "watch connection broke",
        kind: ErrorKind::Unavailable,
    }
}
