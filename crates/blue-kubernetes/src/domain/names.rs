//! The names the controller writes and reads on resources it does not own:
//! its finalizer, the request annotation and the destroy-protection key.

/// The reference finalizer, [`Names::default`]'s `finalizer`.
pub const FINALIZER: &str = "colors.getcolors.ai/infrastructure";
/// The reference request annotation, [`Names::default`]'s `request_annotation`.
pub const REQUEST_ANNOTATION: &str = "colors.getcolors.ai/reconcile-request";
/// The reference destroy-protection key in `spec.config`,
/// [`Names::default`]'s `destroy_protection_key`.
pub const DESTROY_PROTECTION_KEY: &str = "compute-prevent-destroy";

/// The names one controller uses; the defaults are the reference's.
///
/// | field | default | where |
/// |---|---|---|
/// | `finalizer` | `colors.getcolors.ai/infrastructure` | `metadata.finalizers` |
/// | `request_annotation` | `colors.getcolors.ai/reconcile-request` | `metadata.annotations` |
/// | `destroy_protection_key` | `compute-prevent-destroy` | `spec.config` |
///
/// Two controllers with different finalizers never release each other's
/// resources. Changing a name on a running installation orphans what the
/// old name guarded: remove the old finalizers by hand.
///
/// ```
/// use blue_kubernetes::Names;
/// let names = Names::default().with_finalizer("widgets.example.com/infrastructure");
/// assert_eq!(names.request_annotation, "colors.getcolors.ai/reconcile-request");
/// assert_eq!(names.destroy_protection_key, "compute-prevent-destroy");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Names {
    /// The finalizer added before the first effect and removed on release:
    /// a qualified name, `<dns-subdomain>/<name>`.
    pub finalizer: String,
    /// The annotation whose changed value asks for an early check: a
    /// qualified name, `<dns-subdomain>/<name>`.
    pub request_annotation: String,
    /// The `spec.config` key that, when true, blocks destruction. Reserved:
    /// packages see it in [`Options`](crate::Options) but a typed config
    /// never receives it.
    pub destroy_protection_key: String,
}

impl Default for Names {
    fn default() -> Self {
        Self {
            finalizer: FINALIZER.into(),
            request_annotation: REQUEST_ANNOTATION.into(),
            destroy_protection_key: DESTROY_PROTECTION_KEY.into(),
        }
    }
}

crate::setters::setters!(Names {
    /// Sets [`finalizer`](Names::finalizer).
    with_finalizer(finalizer: String),
    /// Sets [`request_annotation`](Names::request_annotation).
    with_request_annotation(request_annotation: String),
    /// Sets [`destroy_protection_key`](Names::destroy_protection_key).
    with_destroy_protection_key(destroy_protection_key: String),
});

impl Names {
    /// The first unusable field and why, if any.
    pub(crate) fn problem(&self) -> Option<(&'static str, &'static str)> {
        if !is_qualified_name(&self.finalizer) {
            return Some(("names.finalizer", "must be <dns-subdomain>/<name>"));
        }
        if !is_qualified_name(&self.request_annotation) {
            return Some(("names.request_annotation", "must be <dns-subdomain>/<name>"));
        }
        let key = &self.destroy_protection_key;
        if key.is_empty() || key == "profile" || key.contains('/') {
            return Some((
                "names.destroy_protection_key",
                "must be a non-empty key other than `profile`, without `/`",
            ));
        }
        None
    }
}

/// `prefix/name` with a DNS-1123 subdomain prefix and a 1-63 character name
/// of alphanumerics, `-`, `_` and `.` that starts and ends alphanumeric.
fn is_qualified_name(s: &str) -> bool {
    let Some((prefix, name)) = s.split_once('/') else {
        return false;
    };
    let alnum = |b: u8| b.is_ascii_alphanumeric();
    let name_ok = (1..=63).contains(&name.len())
        && name.bytes().next().is_some_and(alnum)
        && name.bytes().last().is_some_and(alnum)
        && name
            .bytes()
            .all(|b| alnum(b) || matches!(b, b'-' | b'_' | b'.'));
    let label_ok = |l: &str| {
        let lower = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().next().is_some_and(lower)
            && l.bytes().last().is_some_and(lower)
            && l.bytes().all(|b| lower(b) || b == b'-')
    };
    name_ok && prefix.len() <= 253 && prefix.split('.').all(label_ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_names_are_valid_defaults() {
        assert_eq!(Names::default().problem(), None);
    }

    #[test]
    fn unqualified_or_reserved_names_are_refused() {
        let with = |f: fn(&mut Names)| {
            let mut n = Names::default();
            f(&mut n);
            n.problem().map(|(field, _)| field)
        };
        assert_eq!(
            with(|n| n.finalizer = "plain".into()),
            Some("names.finalizer")
        );
        assert_eq!(
            with(|n| n.finalizer = "Ex.com/x".into()),
            Some("names.finalizer")
        );
        assert_eq!(
            with(|n| n.finalizer = "ex.com/".into()),
            Some("names.finalizer")
        );
        assert_eq!(
            with(|n| n.request_annotation = "a/b/c".into()),
            Some("names.request_annotation")
        );
        assert_eq!(
            with(|n| n.destroy_protection_key = "profile".into()),
            Some("names.destroy_protection_key")
        );
        assert_eq!(
            with(|n| n.finalizer = "widgets.example.com/infra_1".into()),
            None
        );
    }
}
