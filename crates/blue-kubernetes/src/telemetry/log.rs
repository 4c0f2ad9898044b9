//! The operator's log lines about resources: phase transitions (INFO),
//! callback failures (WARN, with the author's error text unless turned off)
//! and validation messages (INFO). kubectl output and options never appear.

use crate::callback::Failure;
use crate::domain::resource;
use crate::{Phase, Reason};
use blue_kubernetes_client::ResourceDescriptor;
use serde_json::Value;

/// The resource a log line is about.
#[derive(Clone, Copy)]
pub(crate) struct Subject<'a> {
    pub(crate) descriptor: &'a ResourceDescriptor,
    pub(crate) object: &'a Value,
}

impl Subject<'_> {
    fn uid(&self) -> &str {
        resource::uid(self.object).unwrap_or_default()
    }
}

pub(crate) fn phase_changed(s: Subject<'_>, from: Option<&str>, to: Phase, reason: Reason) {
    tracing::info!(
        group = %s.descriptor.group,
        kind = %s.descriptor.kind,
        namespace = resource::namespace(s.object),
        name = resource::name(s.object),
        uid = s.uid(),
        from = from.unwrap_or("None"),
        to = to.as_str(),
        reason = reason.as_str(),
        "phase changed"
    );
}

/// One failed callback with its attempt and the time of the next retry.
pub(crate) struct FailedCall<'a> {
    pub(crate) callback: &'static str,
    pub(crate) failure: &'a Failure,
    pub(crate) attempt: u64,
    pub(crate) next_retry: &'a str,
}

pub(crate) fn callback_failed(s: Subject<'_>, call: &FailedCall<'_>, with_text: bool) {
    let text = call.failure.text.as_deref().filter(|_| with_text);
    macro_rules! warn_with {
        ($($error:tt)*) => {
            tracing::warn!(
                group = %s.descriptor.group,
                kind = %s.descriptor.kind,
                namespace = resource::namespace(s.object),
                name = resource::name(s.object),
                uid = s.uid(),
                callback = call.callback,
                failure = call.failure.kind.as_str(),
                attempt = call.attempt,
                next_retry = call.next_retry,
                $($error)*
                "callback failed"
            )
        };
    }
    match text {
        Some(error) => warn_with!(error,),
        None => warn_with!(),
    }
}

pub(crate) fn configuration_invalid(s: Subject<'_>, messages: &[String], with_text: bool) {
    macro_rules! info_with {
        ($($errors:tt)*) => {
            tracing::info!(
                group = %s.descriptor.group,
                kind = %s.descriptor.kind,
                namespace = resource::namespace(s.object),
                name = resource::name(s.object),
                uid = s.uid(),
                count = messages.len(),
                $($errors)*
                "configuration invalid"
            )
        };
    }
    if with_text {
        let errors = messages.join("; ");
        info_with!(errors,);
    } else {
        info_with!();
    }
}
