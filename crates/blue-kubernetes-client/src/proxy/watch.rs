//! Streamed answers (watches) through the proxy: each on a connection of
//! its own, which lives exactly as long as the stream.

use super::pool::{PoolError, Sender};
use super::ProxyClient;
use crate::rest::{body_chunks, Opened};
use crate::{Error, ErrorKind};
use bytes::Bytes;
use futures::StreamExt;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use std::time::Duration;

/// What the proxy answered a streamed request with.
enum Answer {
    /// 2xx: the body follows, on the connection `Sender` keeps open.
    Streaming(Sender, Incoming),
    /// Anything else, with its (short) body.
    Refused(u16, Bytes),
}

impl ProxyClient {
    /// Sends `request` on a new connection and, for a 2xx answer, hands out
    /// its body as it arrives; a refusal is read whole (it is short).
    pub(super) async fn stream(
        &self,
        request: http::Request<Bytes>,
        timeout: Duration,
    ) -> Result<Opened, Error> {
        let request = super::to_proxy(request);
        let opened = self
            .through_proxy("GET", timeout, |generation| async move {
                let (sender, response) = generation.pool.open_stream(request).await?;
                let status = response.status().as_u16();
                let body = response.into_body();
                if (200..300).contains(&status) {
                    return Ok(Answer::Streaming(sender, body));
                }
                let body = body.collect().await.map_err(|_| PoolError::Broken)?;
                Ok(Answer::Refused(status, body.to_bytes()))
            })
            .await?;
        Ok(match opened {
            Answer::Streaming(sender, body) => {
                self.supervisor.watch_opened();
                Opened::Streaming(body_chunks(body, sender, broken).boxed())
            }
            Answer::Refused(status, body) => Opened::Refused(status, body),
        })
    }
}

fn broken() -> Error {
    Error::Proxy {
        problem: "watch connection broke",
        kind: ErrorKind::Unavailable,
    }
}
