//! Beside admission, the webhook server answers the API server's
//! `ConversionReview`s at [`Conversion::PATH`] for every kind serving
//! older versions, and its own readiness at [`READY_PATH`].
//!
//! Conversion is served from every replica, before the controller's
//! watches start: until storage is migrated, the controller's own first
//! list at the stored version goes through it. So its readiness must not
//! wait for those watches (the metrics port's `/readyz` does): a Service
//! that routes only to ready pods would then never route the conversion
//! that first list needs. Point the pod's readiness probe at this one
//! (HTTPS, the webhook's port): it answers as soon as the server can
//! convert and admit, and stops when the server stops.

use crate::versions::{Conversion, MAX_REVIEW_BYTES};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use std::sync::Arc;
use std::time::Duration;

/// The webhook server's readiness: 200 while it serves, whatever the
/// controller's watches do.
pub const READY_PATH: &str = "/readyz";

/// A path this file answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Route {
    Convert,
    Ready,
}

impl Route {
    /// The route at `path`, if it is one of this file's.
    pub(super) fn at(path: &str) -> Option<Self> {
        match path {
            Conversion::PATH => Some(Route::Convert),
            READY_PATH => Some(Route::Ready),
            _ => None,
        }
    }
}

/// The answer to `request` at `route`; the body must arrive within
/// `deadline`.
pub(super) async fn answer(
    conversion: &Arc<Conversion>,
    route: Route,
    request: Request<Incoming>,
    deadline: Duration,
) -> Response<Full<Bytes>> {
    match (route, request.method()) {
        (Route::Ready, &Method::GET) => plain(StatusCode::OK, "ok\n"),
        (Route::Ready, _) => plain(StatusCode::METHOD_NOT_ALLOWED, "GET readiness\n"),
        (Route::Convert, &Method::POST) => convert(conversion, request, deadline).await,
        (Route::Convert, _) => plain(StatusCode::METHOD_NOT_ALLOWED, "POST a ConversionReview\n"),
    }
}

/// Reads the review within the conversion's own bounds (a list of many
/// objects is larger than any admission review) and converts it off the
/// runtime's threads, so a large list does not stall the controller.
async fn convert(
    conversion: &Arc<Conversion>,
    request: Request<Incoming>,
    deadline: Duration,
) -> Response<Full<Bytes>> {
    let body = Limited::new(request.into_body(), MAX_REVIEW_BYTES).collect();
    let body = match tokio::time::timeout(deadline, body).await {
        Ok(Ok(body)) => body.to_bytes(),
        Ok(Err(_)) => return plain(StatusCode::PAYLOAD_TOO_LARGE, "review too large\n"),
        Err(_) => return plain(StatusCode::REQUEST_TIMEOUT, "review too slow\n"),
    };
    let conversion = conversion.clone();
    let converted =
        tokio::task::spawn_blocking(move || serde_json::to_vec(&conversion.review(&body))).await;
    match converted {
        Ok(Ok(review)) => {
            let mut response = Response::new(Full::new(Bytes::from(review)));
            if let Ok(value) = "application/json".parse() {
                response.headers_mut().insert("content-type", value);
            }
            response
        }
        // A review is plain JSON and `review` never panics: not reached.
        _ => plain(StatusCode::INTERNAL_SERVER_ERROR, "conversion failed\n"),
    }
}

/// A plain-text answer.
fn plain(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_string())));
    *response.status_mut() = status;
    response
}
