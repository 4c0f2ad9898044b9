//! Watches: one request per watch, its body decoded as it streams in.

use super::{http_request, refused, HttpTransport, Opened};
use crate::scope::Scope;
use crate::watch_stream::{watch_stream, WATCH_GRACE};
use crate::{Error, ResourceDescriptor, WatchRequest, WatchStream};
use bytes::Bytes;
use futures::Stream;
use http_body_util::BodyExt;
use std::time::Duration;

/// Sends the watch request for the objects of `descriptor` in `namespace`
/// and returns their events as they arrive. The transport's request
/// deadline covers the response headers (and a refusal's body); the stream
/// itself may run `timeout_seconds` plus a grace before it is given up as
/// dead.
pub(crate) async fn watch<T: HttpTransport>(
    transport: &T,
    descriptor: &ResourceDescriptor,
    namespace: &str,
    request: &WatchRequest,
) -> Result<WatchStream, Error> {
    let path = Scope::of_collection(descriptor, namespace)?.path(descriptor, None, None)?;
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
    if let Some(selector) = &request.label_selector {
        path = path.with_query("labelSelector", selector);
    }
    let http_request = http_request("GET", path.as_str(), "application/json", Bytes::new())?;
    match transport
        .open_stream(http_request, transport.default_timeout())
        .await?
    {
        Opened::Refused(status, body) => Err(refused("GET", status, &body)),
        Opened::Streaming(chunks) => {
            let lifetime = Duration::from_secs(u64::from(request.timeout_seconds)) + WATCH_GRACE;
            Ok(watch_stream(chunks, lifetime))
        }
    }
}

/// The data chunks of a streamed `body` as they arrive; a broken body ends
/// the stream with `broken()`. `keep` (e.g. the connection's sender) rides
/// along, so whatever holds the connection open lives exactly as long as
/// the stream.
pub(crate) fn body_chunks<B, K>(
    body: B,
    keep: K,
    broken: fn() -> Error,
) -> impl Stream<Item = Result<Bytes, Error>> + Send
where
    B: hyper::body::Body<Data = Bytes> + Send + Unpin + 'static,
    K: Send + 'static,
{
    futures::stream::unfold(Some((keep, body)), move |state| async move {
        let (keep, mut body) = state?;
        loop {
            match body.frame().await {
                None => return None,
                Some(Err(_)) => return Some((Err(broken()), None)),
                Some(Ok(frame)) => {
                    // Trailers carry nothing a watch needs.
                    if let Ok(data) = frame.into_data() {
                        return Some((Ok(data), Some((keep, body))));
                    }
                }
            }
        }
    })
}
