//! The raw request API: one HTTP-shaped request to the API server, through
//! whichever transport the client uses.

use crate::{ApiPath, Client, Error};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// HTTP method of an [`ApiRequest`]; `Patch` names its patch format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// Read.
    Get,
    /// Create.
    Post,
    /// Replace (guarded by `metadata.resourceVersion` when the body has one).
    Put,
    /// Delete (the body may hold `DeleteOptions` with preconditions).
    Delete,
    /// Patch in the given format.
    Patch(PatchType),
}

/// The patch formats the API server accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PatchType {
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/json-patch+json` (RFC 6902), e.g. with a `test` op.
    Json,
    /// `application/strategic-merge-patch+json` (built-in types only).
    Strategic,
    /// `application/apply-patch+yaml`: server-side apply (JSON is YAML);
    /// the path's `fieldManager` query names the manager. Not sent by the
    /// per-call kubectl transport, which has no raw apply.
    Apply,
}

impl Method {
    /// The HTTP method name, e.g. `PATCH`; what errors name as the operation.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Patch(_) => "PATCH",
        }
    }

    /// The request body's content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Method::Patch(PatchType::Merge) => "application/merge-patch+json",
            Method::Patch(PatchType::Json) => "application/json-patch+json",
            Method::Patch(PatchType::Strategic) => "application/strategic-merge-patch+json",
            Method::Patch(PatchType::Apply) => "application/apply-patch+yaml",
            _ => "application/json",
        }
    }
}

/// One request: method, validated path, optional JSON body, optional deadline.
///
/// ```
/// use blue_kubernetes_client::{ApiPath, ApiRequest, Method};
/// use std::time::Duration;
/// let path = ApiPath::parse("/api/v1/namespaces/dev/configmaps/app").unwrap();
/// let request = ApiRequest::get(path).with_timeout(Duration::from_secs(5));
/// assert_eq!(request.method, Method::Get);
/// assert!(request.body.is_none());
/// ```
#[derive(Clone, PartialEq)]
pub struct ApiRequest {
    /// What to do.
    pub method: Method,
    /// Where.
    pub path: ApiPath,
    /// The JSON body, if any.
    pub body: Option<Value>,
    /// Overrides the client's deadline for this request.
    pub timeout: Option<Duration>,
}

impl ApiRequest {
    /// A request without body.
    pub fn new(method: Method, path: ApiPath) -> Self {
        Self {
            method,
            path,
            body: None,
            timeout: None,
        }
    }

    /// `GET path`.
    pub fn get(path: ApiPath) -> Self {
        Self::new(Method::Get, path)
    }

    /// Sets the JSON body.
    pub fn with_body(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }

    /// Sets this request's deadline.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

// The body may be a Secret: Debug shows its presence only.
impl std::fmt::Debug for ApiRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiRequest")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("body", &self.body.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A successful (2xx) answer.
///
/// Through kubectl the exact status is not visible: any success reads as 200.
#[derive(Clone, PartialEq)]
pub struct ApiResponse {
    /// The HTTP status code.
    pub status: u16,
    /// The parsed body; `None` when it was empty.
    pub body: Option<Value>,
}

// Responses can hold Secrets the caller read: Debug shows shape only.
impl std::fmt::Debug for ApiResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiResponse")
            .field("status", &self.status)
            .field("body", &self.body.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Sends raw requests to the API server; packages use it for the objects
/// they manage, so their calls take the same transport as the controller's.
///
/// A non-2xx answer is an error classified like every transport error
/// ([`Error::kind`]); [`Error::Http`] also carries the status code. Neither
/// the request nor the response body ever reaches an error.
///
/// ```
/// # async fn example(api: &dyn blue_kubernetes_client::RawApi) -> Result<(), blue_kubernetes_client::Error> {
/// use blue_kubernetes_client::{ApiPath, ApiRequest, ErrorKind};
/// let path = ApiPath::parse("/api/v1/namespaces/dev/configmaps/app")?;
/// match api.send(ApiRequest::get(path)).await {
///     Ok(found) => println!("resourceVersion {}", found.body.unwrap()["metadata"]["resourceVersion"]),
///     Err(e) if e.kind() == ErrorKind::NotFound => println!("absent"),
///     Err(e) => return Err(e),
/// }
/// # Ok(())
/// # }
/// ```
#[async_trait::async_trait]
pub trait RawApi: Send + Sync {
    /// Sends `request` and returns the 2xx answer.
    async fn send(&self, request: ApiRequest) -> Result<ApiResponse, Error>;
}

/// A complete transport: the controller's [`Client`] plus the packages'
/// [`RawApi`]. [`KubectlClient`](crate::KubectlClient),
/// [`ProxyClient`](crate::ProxyClient) and `KubeClient` (feature `kube`)
/// are one.
pub trait Transport: Client + RawApi {
    /// This transport as the controller's client.
    fn into_client(self: Arc<Self>) -> Arc<dyn Client>;
    /// This transport as the packages' raw API.
    fn into_raw_api(self: Arc<Self>) -> Arc<dyn RawApi>;
}

impl<T: Client + RawApi + 'static> Transport for T {
    fn into_client(self: Arc<Self>) -> Arc<dyn Client> {
        self
    }

    fn into_raw_api(self: Arc<Self>) -> Arc<dyn RawApi> {
        self
    }
}
