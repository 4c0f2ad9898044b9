//! The HTTPS server: TLS (rustls) in front of HTTP/1.1 (hyper), one task
//! per connection, every request judged by [`Admission::review`]. A
//! client gets bounded time and bytes: the handshake, the headers and the
//! body each have a deadline, the body a size limit, so a slow or hostile
//! client costs one task for a while and never the server.
//!
//! The API server (1.16 and later) speaks HTTP/1.1 to webhooks and keeps
//! each connection for its next review, closing it after 90 seconds idle:
//! a connection stays open here longer than that, so a review rarely pays
//! a TCP connect and a TLS handshake, and the API server never sends one
//! on a connection this side has just closed (a POST it does not retry).

use super::certificates::{certified_key, server_config, Certificates};
use super::convert::{self, Route};
use super::{reload, WebhookError, WebhookTls};
use crate::admission::{Admission, ReviewError};
use crate::telemetry::WebhookMetrics;
use crate::versions::Conversion;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

/// The largest review read: the API server's own request limit is 3 MiB,
/// and a review of an UPDATE holds the object twice.
pub const MAX_REVIEW_BYTES: usize = 7 * 1024 * 1024;
/// How long a client may take for the TLS handshake, and for a request's
/// body.
pub const CLIENT_DEADLINE: Duration = Duration::from_secs(10);
/// How long a connection may wait for a request's headers, idle between
/// reviews included: longer than the API server's 90 second idle timeout
/// for its webhook connections, so the API server closes them first.
const KEEP_ALIVE: Duration = Duration::from_secs(100);

/// A running webhook server; [`stop`](Self::stop) ends it.
pub struct WebhookServer {
    address: SocketAddr,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
    /// The task that reloads certificates from a directory.
    pub(super) reload: Option<JoinHandle<()>>,
    serving: Arc<AtomicBool>,
}

impl std::fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServer")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl WebhookServer {
    /// Serves `admission` on `address` (`127.0.0.1:0` picks a free port)
    /// with the certificates of `tls`. Must be called inside a tokio
    /// runtime.
    pub async fn serve(
        address: SocketAddr,
        admission: Admission,
        tls: &WebhookTls,
    ) -> Result<Self, WebhookError> {
        match tls {
            WebhookTls::SelfSigned(made) => {
                let key = certified_key(made.cert_pem().as_bytes(), made.key_pem().as_bytes())?;
                let certificates = Arc::new(Certificates::new(key));
                Self::start(address, admission, certificates).await
            }
            WebhookTls::Directory(dir, every) => {
                let (certificates, served) = reload::load(dir)?;
                let certificates = Arc::new(certificates);
                let mut server = Self::start(address, admission, certificates.clone()).await?;
                let watch = reload::watch(dir.clone(), certificates, served, *every);
                server.reload = Some(tokio::spawn(watch));
                Ok(server)
            }
        }
    }

    pub(crate) async fn start(
        address: SocketAddr,
        admission: Admission,
        certificates: Arc<Certificates>,
    ) -> Result<Self, WebhookError> {
        let acceptor = TlsAcceptor::from(Arc::new(server_config(certificates)?));
        let listener = TcpListener::bind(address)
            .await
            .map_err(|e| WebhookError::Listen(e.kind()))?;
        let address = listener
            .local_addr()
            .map_err(|e| WebhookError::Listen(e.kind()))?;
        let metrics = admission.controller().metrics().webhook();
        let (shutdown, stopped) = watch::channel(false);
        let serving = Arc::new(AtomicBool::new(true));
        let conversion = Arc::new(Conversion::of(admission.controller()));
        let served = Served {
            admission,
            metrics,
            conversion,
        };
        let task = tokio::spawn(accept(listener, acceptor, Arc::new(served), stopped));
        Ok(Self {
            address,
            shutdown,
            task,
            reload: None,
            serving,
        })
    }

    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Whether it serves (for `/readyz`): true until stopped.
    pub(crate) fn serving(&self) -> Arc<AtomicBool> {
        self.serving.clone()
    }

    /// Stops accepting connections, lets the requests being answered
    /// finish, and closes the connections.
    pub async fn stop(self) {
        self.serving.store(false, Ordering::Relaxed);
        let _ = self.shutdown.send(true);
        let _ = self.task.await;
        if let Some(reload) = self.reload {
            reload.abort();
        }
    }
}

struct Served {
    admission: Admission,
    metrics: WebhookMetrics,
    conversion: Arc<Conversion>,
}

async fn accept(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    served: Arc<Served>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // The handshake's and the answer's small writes go out
                    // at once, not after the client's delayed ACK (40 ms).
                    let _ = stream.set_nodelay(true);
                    stream
                }
                Err(_) => continue,
            },
            _ = stopped.changed() => break,
        };
        // Finished connections' results, so the set does not grow.
        while connections.try_join_next().is_some() {}
        let (acceptor, served, stopped) = (acceptor.clone(), served.clone(), stopped.clone());
        connections.spawn(connection(stream, acceptor, served, stopped));
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

async fn connection(
    stream: tokio::net::TcpStream,
    acceptor: TlsAcceptor,
    served: Arc<Served>,
    mut stopped: watch::Receiver<bool>,
) {
    let handshake = tokio::time::timeout(CLIENT_DEADLINE, acceptor.accept(stream));
    let tls = tokio::select! {
        done = handshake => match done {
            Ok(Ok(tls)) => tls,
            _ => return,
        },
        _ = stopped.changed() => return,
    };
    let service = hyper::service::service_fn(move |request| {
        let served = served.clone();
        async move { Ok::<_, Infallible>(answer(&served, request).await) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(KEEP_ALIVE)
        .serve_connection(TokioIo::new(tls), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        _ = stopped.changed() => {
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(CLIENT_DEADLINE, connection).await;
        }
    }
}

async fn answer(served: &Served, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let started = Instant::now();
    let path = request.uri().path().to_string();
    // The label is a path served, or `other`: never what a client chose.
    let label = match served.admission.serves(&path) || Route::at(&path).is_some() {
        true => path.as_str(),
        false => "other",
    };
    served.metrics.started(label);
    let response = respond(served, &path, request).await;
    served
        .metrics
        .answered(label, response.status().as_u16(), started.elapsed());
    response
}

async fn respond(served: &Served, path: &str, request: Request<Incoming>) -> Response<Full<Bytes>> {
    if let Some(route) = Route::at(path) {
        return convert::answer(&served.conversion, route, request, CLIENT_DEADLINE).await;
    }
    if request.method() != Method::POST {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "POST an AdmissionReview\n");
    }
    let body = Limited::new(request.into_body(), MAX_REVIEW_BYTES).collect();
    let body = match tokio::time::timeout(CLIENT_DEADLINE, body).await {
        Ok(Ok(body)) => body.to_bytes(),
        Ok(Err(_)) => return plain(StatusCode::PAYLOAD_TOO_LARGE, "review too large\n"),
        Err(_) => return plain(StatusCode::REQUEST_TIMEOUT, "review too slow\n"),
    };
    match served.admission.review(path, &body).await {
        Ok(review) => {
            let mut response = Response::new(Full::new(Bytes::from(review.to_string())));
            if let Ok(value) = "application/json".parse() {
                response.headers_mut().insert("content-type", value);
            }
            response
        }
        Err(ReviewError::NotFound) => plain(StatusCode::NOT_FOUND, "no webhook at this path\n"),
        Err(e) => plain(StatusCode::BAD_REQUEST, &format!("{e}\n")),
    }
}

fn plain(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_string())));
    *response.status_mut() = status;
    response
}
