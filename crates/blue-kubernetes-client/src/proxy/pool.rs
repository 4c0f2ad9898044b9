//! HTTP/1.1 keep-alive connections to one proxy socket.
//!
//! A connection is taken for one request and returned once its response body
//! has been read completely, so concurrent requests use separate connections
//! and sequential ones reuse the same. A streamed answer (a watch) gets a
//! connection of its own that never joins the pool: it is busy for minutes,
//! and closing it is how the stream is stopped.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{handshake, SendRequest};
use hyper_util::rt::TokioIo;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

pub(crate) type Sender = SendRequest<Full<Bytes>>;

/// More idle connections than this are closed rather than kept.
const MAX_IDLE: usize = 16;

/// Why an exchange failed; no variant carries text from the other side.
#[derive(Debug)]
pub(crate) enum PoolError {
    /// The socket refused or is gone.
    Connect,
    /// The connection broke during the exchange.
    Broken,
}

pub(crate) struct Pool {
    socket: PathBuf,
    idle: Mutex<Vec<Sender>>,
    opened: AtomicU64,
}

impl Pool {
    pub(crate) fn new(socket: PathBuf) -> Self {
        Self {
            socket,
            idle: Mutex::new(Vec::new()),
            opened: AtomicU64::new(0),
        }
    }

    /// Connections opened so far.
    pub(crate) fn opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    /// Sends `request` and reads the whole answer.
    pub(crate) async fn exchange(
        &self,
        mut request: http::Request<Full<Bytes>>,
    ) -> Result<(u16, Bytes), PoolError> {
        loop {
            let (mut sender, reused) = match self.take_idle() {
                Some(sender) => (sender, true),
                None => (self.connect().await?, false),
            };
            if sender.ready().await.is_err() {
                if reused {
                    continue;
                }
                return Err(PoolError::Broken);
            }
            let response = match sender.try_send_request(request).await {
                Ok(response) => response,
                // A pooled connection the server closed while idle: the
                // request was never written, so it is safe to try another.
                Err(mut e) if reused => match e.take_message() {
                    Some(unsent) => {
                        request = unsent;
                        continue;
                    }
                    None => return Err(PoolError::Broken),
                },
                Err(_) => return Err(PoolError::Broken),
            };
            let status = response.status().as_u16();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|_| PoolError::Broken)?
                .to_bytes();
            self.put_back(sender);
            return Ok((status, body));
        }
    }

    /// Sends `request` on a new connection of its own and returns its
    /// response with the body unread. The connection closes when both the
    /// sender and the body are dropped.
    pub(crate) async fn open_stream(
        &self,
        request: http::Request<Full<Bytes>>,
    ) -> Result<(Sender, http::Response<Incoming>), PoolError> {
        let mut sender = self.dial().await?;
        sender.ready().await.map_err(|_| PoolError::Broken)?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|_| PoolError::Broken)?;
        Ok((sender, response))
    }

    fn take_idle(&self) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(sender) = idle.pop() {
            if !sender.is_closed() {
                return Some(sender);
            }
        }
        None
    }

    fn put_back(&self, sender: Sender) {
        if sender.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < MAX_IDLE {
            idle.push(sender);
        }
    }

    async fn connect(&self) -> Result<Sender, PoolError> {
        let sender = self.dial().await?;
        self.opened.fetch_add(1, Ordering::Relaxed);
        Ok(sender)
    }

    async fn dial(&self) -> Result<Sender, PoolError> {
        let stream = tokio::net::UnixStream::connect(&self.socket)
            .await
            .map_err(|_| PoolError::Connect)?;
        let (sender, connection) = handshake(TokioIo::new(stream))
            .await
            .map_err(|_| PoolError::Connect)?;
        // Drives the connection; ends when the socket closes or every
        // handle to it is dropped.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(sender)
    }
}
