//! The operator's log lines about resources: phase transitions (INFO),
//! callback failures (WARN, with the author's error text and its source
//! chain unless turned off) and validation messages (INFO); and, once at
//! start, a WARN about running with the reference's names. kubectl output
//! and options never appear.

use crate::callback::Failure;
use crate::domain::resource;
use crate::{Phase, Reason, ValidationErrors};
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

/// `error` and its whole `source()` chain, joined the way `anyhow`'s `{:#}`
/// joins them (`outer: middle: inner`): a wrapper's Display often names only
/// what failed (`db error`) and keeps why in its source.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
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

#[cfg(test)]
mod tests {
    use super::error_chain;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn a_chain_is_joined_outer_first_like_anyhow_alternate() {
        let inner = Layer("password authentication failed", None);
        let middle = Layer("connecting to db-1", Some(Box::new(inner)));
        let outer = Layer("db error", Some(Box::new(middle)));
        assert_eq!(
            error_chain(&outer),
            "db error: connecting to db-1: password authentication failed"
        );
        assert_eq!(error_chain(&Layer("alone", None)), "alone");
    }
}
