//! `/metrics`, `/healthz` and `/readyz` over HTTP/1.1 (feature `http`).

use crate::Error;

use crate::telemetry::{Health, Metrics};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A running listener; [`HttpServer::stop`] closes it.
pub struct HttpServer {
    address: SocketAddr,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// Serves the controller's [`Metrics`] at `/metrics` and the runtime's
/// [`Health`] at `/healthz` (live) and `/readyz` (ready) on `address`
/// (`127.0.0.1:0` picks a free port). Must be called inside a tokio runtime.
///
/// ```no_run
/// # async fn demo(runtime: blue_kubernetes::Runtime) -> Result<(), blue_kubernetes::Error> {
/// let server = blue_kubernetes::telemetry::serve_http(
///     "127.0.0.1:8080".parse().unwrap(),
///     runtime.controller().metrics().clone(),
///     runtime.health(),
/// )
/// .await?;
/// println!("metrics on http://{}/metrics", server.address());
/// server.stop().await;
/// # Ok(()) }
/// ```
pub async fn serve_http(
    address: SocketAddr,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
) -> Result<HttpServer, Error> {
    let listener = TcpListener::bind(address)
        .await
        .map_err(|e| Error::Listen(e.kind()))?;
    let address = listener.local_addr().map_err(|e| Error::Listen(e.kind()))?;
    let (shutdown, mut stopped) = watch::channel(false);
    let task = tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => continue,
                },
                _ = stopped.changed() => return,
            };
            let (metrics, health) = (metrics.clone(), health.clone());
            let service = hyper::service::service_fn(move |request: Request<_>| {
                let response = respond(request.uri().path(), &metrics, &health);
                async move { Ok::<_, Infallible>(response) }
            });
            tokio::spawn(async move {
                let io = TokioIo::new(stream);
                // A client hanging up mid-request is its own business.
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    Ok(HttpServer {
        address,
        shutdown,
        task,
    })
}

impl HttpServer {
    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Stops accepting connections.
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        let _ = self.task.await;
    }
}

fn respond(path: &str, metrics: &Metrics, health: &Health) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match path {
        "/metrics" => (
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics.encode(),
        ),
        "/healthz" | "/livez" => verdict(health.is_live(), "poller stalled"),
        "/readyz" => verdict(health.is_ready(), "not every type listed yet"),
        _ => (StatusCode::NOT_FOUND, "text/plain", "not found\n".into()),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = content_type.parse() {
        response.headers_mut().insert("content-type", value);
    }
    response
}

fn verdict(ok: bool, why: &str) -> (StatusCode, &'static str, String) {
    match ok {
        true => (StatusCode::OK, "text/plain", "ok\n".into()),
        false => (
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            format!("{why}\n"),
        ),
    }
}
