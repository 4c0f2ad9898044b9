//! The operator's log lines about resources: phase transitions (INFO),
//! callback failures (WARN, with the author's error text and its source
//! chain unless turned off), validation messages (INFO), references that
//! hold a pass, and the WARN lines a pass writes about a resource
//! ([`warn_about`]); and, once at start, a WARN about running with the
//! reference's names. kubectl output and options never appear.

use crate::domain::resource;
use crate::package::validation::ValidationErrors;
use crate::reconcile::awaited::Awaited;
use crate::references::Unready;
use crate::resource::{Phase, Reason};
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
    /// How it failed (`error`, `panic`), and the author's text.
    pub(crate) failure: &'static str,
    pub(crate) text: Option<&'a str>,
    pub(crate) attempt: u64,
    pub(crate) next_retry: &'a str,
}

/// At start, when `config` runs with the reference's names without having
/// chosen them: one WARN naming the packages, the way to change them and
/// what a later rename costs.
pub(crate) fn reference_names(config: &crate::Config) {
    let fields = config.names.unchosen_reference();
    if fields.is_empty() {
        return;
    }
    let packages: Vec<String> = config
        .packages
        .iter()
        .map(|p| p.descriptor().qualified_plural())
        .collect();
    tracing::warn!(
        packages = %packages.join(","),
        names = %fields.join(","),
        "running with the reference's names (colors.getcolors.ai/...): set \
         Config::names to Names::for_domain(\"<a domain you own>\") before the \
         first install; renaming later orphans the finalizers already on \
         resources (their deletion hangs until removed by hand); \
         Names::reference() keeps these names on purpose, without this warning"
    );
}

pub(crate) fn callback_failed(s: Subject<'_>, call: &FailedCall<'_>, with_text: bool) {
    let text = call.text.filter(|_| with_text);
    macro_rules! warn_with {
        ($($error:tt)*) => {
            tracing::warn!(
                group = %s.descriptor.group,
                kind = %s.descriptor.kind,
                namespace = resource::namespace(s.object),
                name = resource::name(s.object),
                uid = s.uid(),
                callback = call.callback,
                failure = call.failure,
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

pub(crate) fn configuration_invalid(s: Subject<'_>, messages: &ValidationErrors, with_text: bool) {
    macro_rules! info_with {
        ($($errors:tt)*) => {
            tracing::info!(
                group = %s.descriptor.group,
                kind = %s.descriptor.kind,
                namespace = resource::namespace(s.object),
                name = resource::name(s.object),
                uid = s.uid(),
                count = messages.len(),
                user_facing = messages.user_facing_count(),
                $($errors)*
                "configuration invalid"
            )
        };
    }
    if with_text {
        let errors = messages.texts().collect::<Vec<_>>().join("; ");
        info_with!(errors,);
    } else {
        info_with!();
    }
}

/// A reference field of `object` names no object. The Invalid write's
/// reason is generic: the log names the field. Never its value, which
/// could be anything a user typed.
pub(crate) fn reference_malformed(object: &Value, field: &str) {
    tracing::info!(
        namespace = resource::namespace(object),
        name = resource::name(object),
        field,
        "reference field does not name an object (a DNS-1123 subdomain of at most 253 characters)"
    );
}

/// Why `object` waits for what its reference names (`None`: it does not
/// exist). A status claiming Ready without this controller's marks is a
/// WARN: it was not written by this controller, so either it was never
/// reconciled here or someone rewrote its record. Ordinary waiting (not
/// found, not yet Ready, an edit being handled) is INFO: which reference
/// holds a resource is what its operator asks first, and a waiting
/// resource is checked only when what it names changes or its interval
/// passes. Only the referrer, the field, the kind and object name the
/// reference holds (validated as an object name before anything was read)
/// and a fixed word for why are logged; nothing of the referenced
/// resource's status.
pub(crate) fn reference_waiting(object: &Value, awaited: &Awaited, why: Option<Unready>) {
    let (namespace, name) = (resource::namespace(object), resource::name(object));
    let (field, kind, referenced) = (&awaited.field, &awaited.kind, &awaited.name);
    match why {
        Some(Unready::Unmarked(mark)) => tracing::warn!(
            namespace,
            name,
            field,
            kind,
            referenced,
            missing = mark.as_str(),
            "referenced resource claims Ready without this controller's marks; waiting"
        ),
        why => tracing::info!(
            namespace,
            name,
            field,
            kind,
            referenced,
            why = why.map_or("not found", Unready::as_str),
            "waiting for a referenced resource"
        ),
    }
}

/// A WARN line about the resource `$subject` (a [`Subject`]): its group,
/// kind, namespace and name, then the fields and message given.
macro_rules! warn_about {
    ($subject:expr, $($fields_and_message:tt)*) => {{
        let s: $crate::telemetry::log::Subject<'_> = $subject;
        tracing::warn!(
            group = %s.descriptor.group,
            kind = %s.descriptor.kind,
            namespace = $crate::domain::resource::namespace(s.object),
            name = $crate::domain::resource::name(s.object),
            $($fields_and_message)*
        )
    }};
}
pub(crate) use warn_about;
