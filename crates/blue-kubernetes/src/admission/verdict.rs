//! What the webhook answers: allowed, or denied with the causes a user
//! may read, and the AdmissionReview response that carries it.

use crate::package::validation::bounded;
use serde_json::{json, Value};

/// One reason a request is denied: a field path (`spec.config.size`)
/// and a message for the resource's users. Only library-made messages
/// and a package's [`UserFacingMessage`](crate::package::UserFacingMessage)s
/// become causes: never a config value, a secret or a log-only message.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Cause {
    /// The field the cause is about, from the object's root.
    pub field: Option<String>,
    /// What to fix.
    pub message: String,
}

impl Cause {
    pub(crate) fn at(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: Some(field.into()),
            message: bounded(message.into()),
        }
    }

    pub(crate) fn new(field: Option<&str>, message: &str) -> Self {
        Self {
            field: field.map(str::to_string),
            message: bounded(message.to_string()),
        }
    }
}

/// The webhook's answer to one request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Admitted.
    Allowed,
    /// Refused for these causes (at least one).
    Denied(Vec<Cause>),
    /// The request itself is wrong (a kind this webhook does not judge,
    /// an UPDATE without its old object): refused with this message.
    BadRequest(String),
}

impl Verdict {
    /// Whether the request is admitted.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Verdict::Allowed)
    }

    /// The causes of a denial (none when allowed or a bad request).
    pub fn causes(&self) -> &[Cause] {
        match self {
            Verdict::Denied(causes) => causes,
            _ => &[],
        }
    }

    /// The message `kubectl` shows after `admission webhook "..." denied
    /// the request:`: each cause as `field: message`, joined with `; `.
    pub fn message(&self) -> String {
        match self {
            Verdict::Allowed => String::new(),
            Verdict::BadRequest(why) => why.clone(),
            Verdict::Denied(causes) => causes
                .iter()
                .map(|c| match &c.field {
                    Some(field) => format!("{field}: {}", c.message),
                    None => c.message.clone(),
                })
                .collect::<Vec<_>>()
                .join("; "),
        }
    }

    /// The AdmissionReview (v1) answering the request `uid`.
    pub fn to_review(&self, uid: &str) -> Value {
        let response = match self {
            Verdict::Allowed => json!({"uid": uid, "allowed": true}),
            Verdict::BadRequest(why) => json!({
                "uid": uid,
                "allowed": false,
                "status": {"status": "Failure", "code": 400, "reason": "BadRequest", "message": why},
            }),
            Verdict::Denied(causes) => {
                let causes: Vec<Value> = causes
                    .iter()
                    .map(|c| {
                        let mut cause =
                            json!({"reason": "FieldValueInvalid", "message": c.message});
                        if let Some(field) = &c.field {
                            cause["field"] = json!(field);
                        }
                        cause
                    })
                    .collect();
                json!({
                    "uid": uid,
                    "allowed": false,
                    "status": {
                        "status": "Failure",
                        "code": 422,
                        "reason": "Invalid",
                        "message": self.message(),
                        "details": {"causes": causes},
                    },
                })
            }
        };
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": response,
        })
    }
}
