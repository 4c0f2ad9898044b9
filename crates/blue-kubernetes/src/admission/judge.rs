//! Judging one request for one package: the checks a pass runs before
//! any effect that need no I/O, with the same code (the common fields'
//! parser, the typed decode, the reference names, the immutable fields'
//! digest, the package's `validate`), against the old object where the
//! pass compares with what it recorded.

use super::common_fields;
use super::verdict::{Cause, Verdict};
use crate::domain::immutable::{self, Check};
use crate::domain::resource::{self, status_str};
use crate::package::callback::{self, Failure};
use crate::package::options::CallbackInput;
use crate::package::typed::redact;
use crate::package::{erased::Package, validation::ValidationErrors};
use crate::references::Named;
use crate::telemetry::log::{self, Subject};
use crate::Controller;
use serde_json::Value;
use std::time::Duration;

/// The checks for `object` of `package`'s kind (`old`: the stored object
/// of an UPDATE).
pub(crate) async fn judge(
    controller: &Controller,
    package: &Package,
    object: &Value,
    old: Option<&Value>,
    validate_timeout: Duration,
) -> Verdict {
    let config = &controller.config;
    let schema = package.schema();
    let mut causes = common_fields::malformed(object, &config.names, schema.connection);
    for reference in &schema.references {
        if reference.named(object) == Named::Malformed {
            causes.push(Cause::at(
                format!("spec.config.{}.name", reference.field),
                "must name an object: lowercase letters, digits, '-' and '.', at most 253 characters",
            ));
        }
    }
    if let Some(old) = old {
        causes.extend(immutable_changes(package, old, object));
    }
    let options =
        CallbackInput::from_resource(object).with_env(config.now.clone(), config.names.clone());
    let bound = match package.bind_typed(&options) {
        Ok(bound) => bound,
        Err(e) => {
            // serde's message without the values it quotes: the field,
            // what was wrong and the expected type.
            causes.push(Cause::at(e.field(), redact(&e.error.to_string())));
            return Verdict::Denied(causes);
        }
    };
    // `validate` reads a config the pass would read: only once the rest
    // holds, as in the pass.
    if !causes.is_empty() {
        return Verdict::Denied(causes);
    }
    let validate = callback::call(&*bound, |c, o| c.validate(o), &options);
    let subject = Subject {
        descriptor: package.descriptor(),
        object,
    };
    match tokio::time::timeout(validate_timeout, validate).await {
        Ok(Ok(errors)) if errors.is_empty() => Verdict::Allowed,
        Ok(Ok(errors)) => {
            log::configuration_invalid(subject, &errors, controller.telemetry.log_callback_errors);
            Verdict::Denied(for_users(&errors))
        }
        // The pass decides (Failed, retried): the webhook is the fast
        // refusal, not the only guard.
        Ok(Err(failure)) => {
            not_judged(subject, Some(&failure));
            Verdict::Allowed
        }
        Err(_) => {
            not_judged(subject, None);
            Verdict::Allowed
        }
    }
}

/// Only the messages the package marked user-facing, with their fields;
/// a refusal without any says where the reasons are.
fn for_users(errors: &ValidationErrors) -> Vec<Cause> {
    let causes: Vec<Cause> = errors
        .user_facing_messages()
        .map(|m| Cause::new(Some(m.field().unwrap_or("spec.config")), m.as_str()))
        .collect();
    match causes.is_empty() {
        false => causes,
        true => vec![Cause::at(
            "spec.config",
            "refused by the operator's validation (the reasons are in its log)",
        )],
    }
}

/// The declared immutable fields (and a recorded profile) that `new`
/// changes from `old`: one definition of immutable, the digest's.
fn immutable_changes(package: &Package, old: &Value, new: &Value) -> Vec<Cause> {
    let declared = &package.schema().immutable;
    let mut causes = Vec::new();
    let config = |o: &Value| o.pointer("/spec/config").cloned().unwrap_or(Value::Null);
    if let Some(accepted) = immutable::digest(declared, &config(old)) {
        if let Check::Changed(fields) = immutable::check(declared, &config(new), Some(&accepted)) {
            causes.extend(fields.into_iter().map(|f| {
                Cause::at(
                    format!("spec.config.{f}"),
                    "immutable: create a new resource to change it",
                )
            }));
        }
    }
    // The pass holds the profile it recorded: so does the door.
    let recorded = status_str(old, "profile");
    let profile = CallbackInput::from_resource(new).profile().to_string();
    if recorded.is_some_and(|r| r != profile) {
        causes.push(Cause::at(
            "spec.config.profile",
            "immutable once recorded: delete the resource with deletionPolicy Retain and create a new one to move the infrastructure",
        ));
    }
    causes
}

/// `validate` failed or did not answer in time: admitted, for the pass to
/// judge; the operator's log says so (the failure's text only where the
/// operator asked for callback errors in the log).
fn not_judged(subject: Subject<'_>, failure: Option<&Failure>) {
    tracing::warn!(
        group = %subject.descriptor.group,
        kind = %subject.descriptor.kind,
        namespace = resource::namespace(subject.object),
        name = resource::name(subject.object),
        failure = failure.map_or("timeout", |f| f.kind.as_str()),
        "admission: validate did not answer; admitted, the controller's pass judges it"
    );
}
