//! Validating admission: the package's checks at `kubectl apply`.
//!
//! For CREATE and UPDATE, the webhook runs the checks a pass runs before
//! any effect that need no I/O, with the same code: the common spec
//! fields, the typed decode of `spec.config`, the reference fields as
//! object names, the declared immutable fields against the old object
//! (and a recorded profile), and the package's `validate`, whose context
//! has no references' outputs, connection or API handle there. A denial
//! carries only field paths and the messages the library makes or the
//! package marks user-facing ([`UserFacingMessage`](crate::package::UserFacingMessage)):
//! a config that does not decode is refused naming the field and the
//! expected type, never the value. An UPDATE that leaves `spec` unchanged
//! is admitted (the controller's own finalizer and status writes among
//! them), as is every DELETE and every status write; so is an object in a
//! namespace the controller does not manage, and one whose `validate`
//! fails or does not answer in time (the pass judges it: the webhook is
//! the fast refusal, never the only guard).
//!
//! [`Admission`] judges requests; the runner serves it over HTTPS with the
//! feature `webhook`, and [`webhook_configuration`] is the
//! ValidatingWebhookConfiguration that registers it.
//!
//! ```
//! # use blue_kubernetes::*;
//! # use blue_kubernetes::package::{NoOutputs, UserFacingMessage, ValidationErrors};
//! # use blue_kubernetes_client::ResourceDescriptor;
//! use blue_kubernetes::admission::{Admission, AdmissionRequest};
//! # #[derive(serde::Deserialize, schemars::JsonSchema)]
//! # struct WidgetConfig { size: u32 }
//! # struct Widgets;
//! # #[async_trait]
//! # impl Infrastructure for Widgets {
//! #     type Config = WidgetConfig;
//! #     type Outputs = NoOutputs;
//! #     fn schema() -> ResourceSchema {
//! #         ResourceSchema::new(ResourceDescriptor::new("example.com", "v1", "widgets", "Widget"))
//! #     }
//! #     async fn observe(&self, _: &Context<WidgetConfig>) -> CallbackResult<Observation<NoOutputs>> { Ok(Observation::ABSENT) }
//! #     async fn converge(&self, _: &Context<WidgetConfig>) -> CallbackResult<Outcome<NoOutputs>> { Ok(Outcome::done()) }
//! #     async fn delete(&self, _: &Context<WidgetConfig>) -> CallbackResult<Outcome<NoOutputs>> { Ok(Outcome::done()) }
//! # }
//! # async fn demo(client: std::sync::Arc<dyn blue_kubernetes_client::Client>) {
//! let controller = controller(Config::new(client, vec![Package::new(Widgets).unwrap()])).unwrap();
//! let admission = Admission::new(&controller);
//! let widget = serde_json::json!({
//!     "apiVersion": "example.com/v1", "kind": "Widget",
//!     "metadata": {"name": "w", "namespace": "default"},
//!     "spec": {"config": {"size": "large"}}
//! });
//! let verdict = admission.judge(&AdmissionRequest::create(widget)).await;
//! assert_eq!(verdict.causes()[0].field.as_deref(), Some("spec.config.size"));
//! # }
//! ```

pub(crate) mod client;
mod common_fields;
mod configuration;
mod judge;
mod request;
mod verdict;

pub use client::ClientConfig;
pub use configuration::{webhook_configuration, FailurePolicy, WebhookOptions};
pub use request::{AdmissionRequest, GroupVersionResource, Operation};
pub use verdict::{Cause, Verdict};

use crate::{package::erased::Package, Controller};
use blue_kubernetes_client::ResourceDescriptor;
use serde_json::Value;
use std::time::Duration;

/// How long `validate` may take at the door before the request is
/// admitted for the pass to judge: under the configuration's default
/// `timeoutSeconds` (10), so the API server hears an answer.
pub const DEFAULT_VALIDATE_TIMEOUT: Duration = Duration::from_secs(5);

/// The packages' validating admission, judged with a controller's
/// packages, names, namespaces and clock. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Admission {
    controller: Controller,
    validate_timeout: Duration,
}

/// An HTTP request the webhook cannot answer with a verdict.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReviewError {
    /// No package is judged at this path.
    #[error("no webhook at this path")]
    NotFound,
    /// The body is not an `admission.k8s.io/v1` AdmissionReview with a
    /// request.
    #[error("not an admission.k8s.io/v1 AdmissionReview request")]
    Malformed,
}

impl Admission {
    /// Judges with `controller`'s packages, names, namespaces and clock.
    pub fn new(controller: &Controller) -> Self {
        Self {
            controller: controller.clone(),
            validate_timeout: DEFAULT_VALIDATE_TIMEOUT,
        }
    }

    /// How long `validate` may take before the request is admitted
    /// unjudged (default [`DEFAULT_VALIDATE_TIMEOUT`]).
    pub fn with_validate_timeout(mut self, timeout: Duration) -> Self {
        self.validate_timeout = timeout;
        self
    }

    /// The URL path the webhook of `descriptor`'s kind is served at.
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// assert_eq!(blue_kubernetes::admission::Admission::path_of(&widgets), "/validate/example.com/v1/widgets");
    /// ```
    pub fn path_of(descriptor: &ResourceDescriptor) -> String {
        format!(
            "/validate/{}/{}/{}",
            descriptor.group, descriptor.version, descriptor.plural
        )
    }

    /// Whether a package is judged at `path`.
    pub fn serves(&self, path: &str) -> bool {
        self.package_at(path).is_some()
    }

    /// The controller it judges with.
    #[cfg(feature = "webhook")]
    pub(crate) fn controller(&self) -> &Controller {
        &self.controller
    }

    fn package_at(&self, path: &str) -> Option<&Package> {
        let packages = &self.controller.config.packages;
        packages
            .iter()
            .find(|p| Self::path_of(p.descriptor()) == path)
    }

    fn package_of(&self, object: &Value) -> Option<&Package> {
        let api_version = object.get("apiVersion").and_then(Value::as_str)?;
        let kind = object.get("kind").and_then(Value::as_str)?;
        let packages = &self.controller.config.packages;
        packages.iter().find(|p| {
            let d = p.descriptor();
            d.kind == kind && d.api_version() == api_version
        })
    }

    /// Answers the AdmissionReview `body` sent to `path`: the review to
    /// send back, or why there is none (an HTTP error).
    pub async fn review(&self, path: &str, body: &[u8]) -> Result<Value, ReviewError> {
        let package = self.package_at(path).ok_or(ReviewError::NotFound)?;
        let request = request::from_review(body).ok_or(ReviewError::Malformed)?;
        let d = package.descriptor();
        let verdict = match (
            request.resource.group == d.group,
            request.resource.resource == d.plural,
        ) {
            (true, true) => self.judge_for(package, &request).await,
            _ => Verdict::BadRequest(format!(
                "this webhook judges {}, not the resource sent",
                d.qualified_plural()
            )),
        };
        let mut review = verdict.to_review(&request.uid);
        // kubectl then says `The Widget "w" is invalid:`, as for the
        // schema's own refusals, before the causes.
        if let (Some(details), Some(object)) = (
            review.pointer_mut("/response/status/details"),
            &request.object,
        ) {
            details["group"] = d.group.clone().into();
            details["kind"] = d.kind.clone().into();
            details["name"] = object
                .pointer("/metadata/name")
                .cloned()
                .unwrap_or_default();
        }
        Ok(review)
    }

    /// Judges `request` for the package of its object's kind (a bad
    /// request when no package manages that kind).
    pub async fn judge(&self, request: &AdmissionRequest) -> Verdict {
        let object = request.object.as_ref().or(request.old_object.as_ref());
        match object.and_then(|o| self.package_of(o)) {
            Some(package) => self.judge_for(package, request).await,
            None => Verdict::BadRequest("no package manages this kind".into()),
        }
    }

    async fn judge_for(&self, package: &Package, request: &AdmissionRequest) -> Verdict {
        // Status writes, deletes and connections are never judged.
        if !request.sub_resource.is_empty()
            || !matches!(request.operation, Operation::Create | Operation::Update)
        {
            return Verdict::Allowed;
        }
        let Some(object) = &request.object else {
            return Verdict::BadRequest("the request has no object".into());
        };
        // On 1.20 a namespace carries no name label, so the webhook itself
        // admits what it does not manage.
        let namespaces = &self.controller.config.namespace;
        if package.descriptor().namespaced && !namespaces.contains(&request.namespace) {
            return Verdict::Allowed;
        }
        let old = match request.operation {
            Operation::Update => match &request.old_object {
                Some(old) if old.get("spec") == object.get("spec") => return Verdict::Allowed,
                Some(old) => Some(old),
                None => return Verdict::BadRequest("an UPDATE without its old object".into()),
            },
            _ => None,
        };
        judge::judge(
            &self.controller,
            package,
            object,
            old,
            self.validate_timeout,
        )
        .await
    }
}
