//! The conversion judgement: an API server's `ConversionReview`
//! (`apiextensions.k8s.io/v1`) in, the review to answer out, as a pure
//! function without I/O, so the webhook server calls it in one line and
//! the tests call it without one.

use super::lossless::VersionedKind;
use crate::domain::names::Names;
use crate::package::schema::ResourceSchema;
use crate::Controller;
use serde_json::{json, Value};

/// The largest review body [`Conversion::review`] reads; a larger one is
/// answered with a failure without being parsed.
pub const MAX_REVIEW_BYTES: usize = 32 * 1024 * 1024;

/// The most objects one review may ask to convert; more are answered
/// with a failure.
pub const MAX_REVIEW_OBJECTS: usize = 10_000;

const REVIEW_API_VERSION: &str = "apiextensions.k8s.io/v1";

/// The conversions of an operator's kinds: answers the API server's
/// `ConversionReview`s for every kind declared (see
/// [`Versions`](super::Versions)).
///
/// ```
/// use blue_kubernetes::{config::Names, versions::Conversion, ResourceSchema};
/// use blue_kubernetes_client::ResourceDescriptor;
/// let schema = ResourceSchema::new(ResourceDescriptor::new("example.com", "v1", "widgets", "Widget"));
/// let conversion = Conversion::new([&schema], Names::for_domain("example.com"));
/// let answer = conversion.review(br#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
///     "request": {"uid": "705ab4f5", "desiredAPIVersion": "example.com/v2", "objects": []}}"#);
/// assert_eq!(answer["response"]["uid"], "705ab4f5");
/// assert_eq!(answer["response"]["result"]["status"], "Failure"); // no v2
/// ```
#[derive(Clone, Debug)]
pub struct Conversion {
    kinds: Vec<VersionedKind>,
    names: Names,
}

impl Conversion {
    /// The URL path the webhook server answers `ConversionReview`s at
    /// (the generated CRD's conversion client config names it).
    pub const PATH: &'static str = "/convert";

    /// The conversions of `controller`'s packages, with its names: what
    /// the webhook server answers.
    pub fn of(controller: &Controller) -> Self {
        let config = controller.config();
        let schemas = config.packages.iter().map(AsRef::as_ref);
        Self::new(schemas, config.names.clone())
    }

    /// Whether some kind serves an older version (without one, the API
    /// server never asks for a conversion).
    pub fn converts_any(&self) -> bool {
        self.kinds.iter().any(|kind| !kind.old.is_empty())
    }

    /// The conversions of the kinds `schemas` declare (a trait package's
    /// is [`ResourceSchema::of`] its type), with the controller's `names`
    /// (the annotation that keeps what an older version cannot express is
    /// in their domain, and the reserved config keys are theirs).
    pub fn new<'a>(schemas: impl IntoIterator<Item = &'a ResourceSchema>, names: Names) -> Self {
        let kinds = schemas
            .into_iter()
            .map(|schema| VersionedKind {
                descriptor: schema.descriptor.clone(),
                old: schema.versions.clone(),
            })
            .collect();
        Self { kinds, names }
    }

    /// The `ConversionReview` answering the review `body`: each object at
    /// the desired version, only its `apiVersion`, `spec.config` and the
    /// library's annotation changed (the common spec fields, labels, the
    /// rest of the metadata and the status are the same in every
    /// version). Never panics: a body that is too large, malformed, not a
    /// v1 review, without a uid, with more than [`MAX_REVIEW_OBJECTS`]
    /// objects, with an object of another kind, or naming a version the
    /// kind does not serve is answered with a `Failure` result (its
    /// message names no value from the body), which fails the request
    /// that needed the conversion.
    pub fn review(&self, body: &[u8]) -> Value {
        let (uid, outcome) = match self.parse(body) {
            Ok((uid, request)) => {
                let converted = self.convert_all(request);
                (uid, converted)
            }
            Err((uid, message)) => (uid, Err(message)),
        };
        let response = match outcome {
            Ok(objects) => json!({
                "uid": uid,
                "result": {"status": "Success"},
                "convertedObjects": objects,
            }),
            Err(message) => json!({
                "uid": uid,
                "result": {"status": "Failure", "message": message},
            }),
        };
        json!({"apiVersion": REVIEW_API_VERSION, "kind": "ConversionReview", "response": response})
    }

    /// The request's uid and the request, or the uid to answer with (empty
    /// when there is none) and why the body is refused.
    fn parse(&self, body: &[u8]) -> Result<(String, Value), (String, String)> {
        let refuse = |uid: &str, why: &str| (uid.to_string(), why.to_string());
        if body.len() > MAX_REVIEW_BYTES {
            return Err(refuse("", "the review is larger than the webhook reads"));
        }
        let mut review: Value =
            serde_json::from_slice(body).map_err(|_| refuse("", "the review is not JSON"))?;
        if review["apiVersion"] != REVIEW_API_VERSION || review["kind"] != "ConversionReview" {
            return Err(refuse(
                "",
                "not an apiextensions.k8s.io/v1 ConversionReview",
            ));
        }
        let request = review.get_mut("request").map(Value::take);
        let request = request.unwrap_or(Value::Null);
        let uid = match request.get("uid").and_then(Value::as_str) {
            Some(uid) if !uid.is_empty() && uid.len() <= 128 => uid.to_string(),
            _ => return Err(refuse("", "the review has no request uid")),
        };
        match request.get("objects").and_then(Value::as_array) {
            Some(objects) if objects.len() > MAX_REVIEW_OBJECTS => {
                return Err(refuse(
                    &uid,
                    "the review holds more objects than the webhook converts",
                ))
            }
            Some(_) => {}
            None => return Err(refuse(&uid, "the review's request has no list of objects")),
        }
        if !request["desiredAPIVersion"].is_string() {
            return Err(refuse(
                &uid,
                "the review's request names no desired API version",
            ));
        }
        Ok((uid, request))
    }

    fn convert_all(&self, mut request: Value) -> Result<Vec<Value>, String> {
        let objects = match request.get_mut("objects") {
            Some(Value::Array(objects)) => std::mem::take(objects),
            _ => Vec::new(),
        };
        let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
        let (group, version) = desired.rsplit_once('/').unwrap_or(("", desired));
        let served = |k: &VersionedKind| k.descriptor.group == group && k.serves(version);
        if !self.kinds.iter().any(served) {
            return Err(
                "the desired API version is served by no kind this webhook converts".into(),
            );
        }
        objects
            .into_iter()
            .enumerate()
            .map(|(i, object)| {
                self.convert_one(object, group, version)
                    .map_err(|why| format!("object {i}: {why}"))
            })
            .collect()
    }

    fn convert_one(&self, object: Value, group: &str, to: &str) -> Result<Value, &'static str> {
        if !object.is_object() || !object["metadata"].is_object() {
            return Err("not an object with metadata");
        }
        let api_version = object["apiVersion"].as_str().ok_or("no apiVersion")?;
        let (object_group, from) = api_version
            .rsplit_once('/')
            .ok_or("no group in its apiVersion")?;
        let kind_name = object["kind"].as_str().ok_or("no kind")?;
        let kind = self
            .kinds
            .iter()
            .find(|k| k.descriptor.group == object_group && k.descriptor.kind == kind_name)
            .ok_or("a kind this webhook does not convert")?;
        if object_group != group {
            return Err("the desired API version is of another group");
        }
        if !kind.serves(from) {
            return Err("at a version its kind does not serve");
        }
        if !kind.serves(to) {
            return Err("the desired version is not served by its kind");
        }
        let (from, mut converted) = (from.to_string(), object);
        kind.convert(&mut converted, &from, to, &self.names);
        Ok(converted)
    }
}
