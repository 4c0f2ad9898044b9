//! The [`RawApi`] face of [`FakeCluster`]: any object path answered the way
//! kube-apiserver answers it, for the objects packages manage themselves
//! (Secrets, ConfigMaps, custom resources of other kinds).
//!
//! Objects live in the same store as the custom resources of the
//! [`Client`](blue_kubernetes_client::Client) face, with the same
//! resourceVersion counter, history and finalizer rules: a managed custom
//! resource reads the same through either face. Errors are
//! [`Error::Http`] with the status code and the [`ErrorKind`] the proxy
//! transport derives from the server's `Status` reason.

mod leases;
mod objects;
mod patch;
mod paths;
mod secrets;
mod user;

use super::{FakeCluster, RecordedCall};
use blue_kubernetes_client::{ApiRequest, ApiResponse, Error, ErrorKind, Method, RawApi};
use paths::Target;

/// A refusal as the API server words it: an HTTP status whose `Status`
/// reason decides the kind, as `http_status.rs` of the client classifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    status: u16,
    kind: ErrorKind,
}

impl Refused {
    /// `404 NotFound`.
    pub(crate) fn not_found() -> Self {
        Self::new(404, ErrorKind::NotFound)
    }

    /// `409 AlreadyExists`: classified `Other`, since it does not mean
    /// "your snapshot is stale" as `Conflict` does.
    pub(crate) fn already_exists() -> Self {
        Self::new(409, ErrorKind::Other)
    }

    /// `409 Conflict`: a stale resourceVersion or a failed precondition.
    pub(crate) fn conflict() -> Self {
        Self::new(409, ErrorKind::Conflict)
    }

    /// `422 Invalid`.
    pub(crate) fn invalid() -> Self {
        Self::new(422, ErrorKind::Invalid)
    }

    /// `400 BadRequest` (e.g. a body naming another object than the path).
    pub(crate) fn bad_request() -> Self {
        Self::new(400, ErrorKind::Invalid)
    }

    /// `405 MethodNotAllowed` (e.g. `POST` to an object path).
    pub(crate) fn method_not_allowed() -> Self {
        Self::new(405, ErrorKind::Other)
    }

    /// `415 UnsupportedMediaType`: a patch format the fake does not speak.
    pub(crate) fn unsupported_media_type() -> Self {
        Self::new(415, ErrorKind::Invalid)
    }

    fn new(status: u16, kind: ErrorKind) -> Self {
        Self { status, kind }
    }

    /// The answer the server gives for `kind`: what a fault or a store
    /// refusal of that kind looks like over HTTP.
    pub(crate) fn of_kind(kind: ErrorKind) -> Self {
        let status = match kind {
            ErrorKind::Conflict => 409,
            ErrorKind::NotFound => 404,
            ErrorKind::Unauthorized => 401,
            ErrorKind::Forbidden => 403,
            ErrorKind::Timeout => 504,
            ErrorKind::Unavailable => 503,
            ErrorKind::Invalid => 422,
            ErrorKind::Gone => 410,
            // InternalError: the reason classifies as Other (and so does
            // any kind the client adds later).
            _ => 500,
        };
        Self::new(status, kind)
    }

    /// The error the proxy transport returns for this answer to `method`.
    pub(crate) fn error(self, method: Method) -> Error {
        self.error_named(method.as_str())
    }

    /// [`Refused::error`] for a method by name (`GET`, `POST`...).
    pub(crate) fn error_named(self, method: &'static str) -> Error {
        Error::Http {
            method,
            status: self.status,
            kind: self.kind,
        }
    }
}

#[async_trait::async_trait]
impl RawApi for FakeCluster {
    /// Answers `GET`, `POST`, `PUT`, merge `PATCH` and `DELETE` on object
    /// and collection paths; see [`FakeCluster`]'s section on raw requests.
    async fn send(&self, request: ApiRequest) -> Result<ApiResponse, Error> {
        let method = request.method;
        let target = Target::parse(request.path.as_str()).map_err(|r| r.error(method))?;
        if target.is_event() {
            // Events have their own store and calls; answering here would
            // split them.
            return Err(unsupported());
        }
        let operation = objects::operation(method, &target);
        let call = RecordedCall::new(
            operation,
            target.qualified_plural(),
            target.namespace.clone().unwrap_or_default(),
            target.name.as_deref(),
        );
        self.begin_call(call).await?;
        let now = self.now();
        let mut state = self.lock();
        let body = request.body.as_ref();
        let answered = match target.is_lease() {
            true => leases::answer(&mut state, method, &target, body).ok_or_else(unsupported)?,
            false => objects::answer(&mut state, method, &target, body, &now),
        };
        // Like the server's 422, a schema's refusal names no field to the client.
        state.store.last_rejection.clear();
        let (status, body) = answered.map_err(|r| r.error(method))?;
        Ok(ApiResponse {
            status,
            body: Some(body),
        })
    }
}

fn unsupported() -> Error {
    Error::Unsupported {
        operation: "this raw request for Events or Leases on FakeCluster",
    }
}
