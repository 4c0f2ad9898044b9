//! The names the controller writes and reads on resources it does not own:
//! its finalizer, the request annotation and the destroy-protection key;
//! and what counts as an object name where a resource names another.

/// The reference finalizer, [`Names::default`]'s `finalizer`.
pub const FINALIZER: &str = "colors.getcolors.ai/infrastructure";
/// The reference request annotation, [`Names::default`]'s `request_annotation`.
pub const REQUEST_ANNOTATION: &str = "colors.getcolors.ai/reconcile-request";
/// The reference destroy-protection key in `spec.config`,
/// [`Names::default`]'s `destroy_protection_key`.
pub const DESTROY_PROTECTION_KEY: &str = "compute-prevent-destroy";
/// The label every connection Secret carries.
pub(crate) const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "blue-kubernetes");

/// The names one controller uses; the defaults are the reference's.
///
/// | field | default | where |
/// |---|---|---|
/// | `finalizer` | `colors.getcolors.ai/infrastructure` | `metadata.finalizers` |
/// | `request_annotation` | `colors.getcolors.ai/reconcile-request` | `metadata.annotations` |
/// | `destroy_protection_key` | `compute-prevent-destroy` | `spec.config` |
///
/// Choose your own before the first install, with
/// [`Names::for_domain`]: two controllers with different finalizers never
/// release each other's resources, and a user reading
/// `metadata.finalizers` sees whose it is. The defaults stay the
/// reference's so that installations carrying them keep working; a
/// controller started with them logs one WARN saying how to change them
/// ([`Names::reference`] keeps them on purpose, without the warning).
///
/// Changing a name on a running installation orphans what the old name
/// guarded: resources keep the old finalizer (their deletion hangs until
/// it is removed by hand) and the old request annotation stops working.
///
/// ```
/// use blue_kubernetes::config::Names;
/// let names = Names::for_domain("db.example.com");
/// assert_eq!(names.finalizer, "db.example.com/infrastructure");
/// assert_eq!(names.request_annotation, "db.example.com/reconcile-request");
/// assert_eq!(names.destroy_protection_key, "prevent-destroy");
///
/// let names = Names::default().with_finalizer("widgets.example.com/infrastructure".into());
/// assert_eq!(names.request_annotation, "colors.getcolors.ai/reconcile-request");
/// assert_eq!(names.destroy_protection_key, "compute-prevent-destroy");
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Names {
    /// The finalizer added before the first effect and removed on release:
    /// a qualified name, `<dns-subdomain>/<name>`.
    pub finalizer: String,
    /// The annotation whose changed value asks for an early check: a
    /// qualified name, `<dns-subdomain>/<name>`.
    pub request_annotation: String,
    /// The `spec.config` key that, when true, blocks destruction. Reserved:
    /// packages see it in [`CallbackInput`](crate::package::CallbackInput) but a typed config
    /// never receives it.
    pub destroy_protection_key: String,
    /// The reference's names were kept on purpose ([`Names::reference`]):
    /// no warning at start.
    chosen: bool,
}

/// Equal names are equal however they were chosen.
impl PartialEq for Names {
    fn eq(&self, other: &Self) -> bool {
        self.finalizer == other.finalizer
            && self.request_annotation == other.request_annotation
            && self.destroy_protection_key == other.destroy_protection_key
    }
}

impl Eq for Names {}

impl Default for Names {
    /// The reference's names; a controller started with them warns once.
    fn default() -> Self {
        Self {
            finalizer: FINALIZER.into(),
            request_annotation: REQUEST_ANNOTATION.into(),
            destroy_protection_key: DESTROY_PROTECTION_KEY.into(),
            chosen: false,
        }
    }
}

crate::package::setters::setters!(Names {
    /// Sets [`finalizer`](Names::finalizer).
    with_finalizer(finalizer: String),
    /// Sets [`request_annotation`](Names::request_annotation).
    with_request_annotation(request_annotation: String),
    /// Sets [`destroy_protection_key`](Names::destroy_protection_key).
    with_destroy_protection_key(destroy_protection_key: String),
});

impl Names {
    /// Names in your own domain (a DNS subdomain you control, e.g.
    /// `db.example.com`): finalizer `<domain>/infrastructure`, request
    /// annotation `<domain>/reconcile-request`, and destroy-protection key
    /// `prevent-destroy` (a key of the resource's own `spec.config`, where
    /// no other controller's key can collide, so it needs no domain).
    /// [`controller`](crate::controller) refuses a domain that is not a
    /// lowercase DNS subdomain, naming `names.finalizer`.
    pub fn for_domain(domain: &str) -> Self {
        Self {
            finalizer: format!("{domain}/infrastructure"),
            request_annotation: format!("{domain}/reconcile-request"),
            destroy_protection_key: "prevent-destroy".into(),
            chosen: true,
        }
    }

    /// The reference's names, kept on purpose: for an installation whose
    /// resources already carry them (renaming would orphan their
    /// finalizers). The same values as [`Names::default`], without the
    /// warning at start.
    pub fn reference() -> Self {
        Self {
            chosen: true,
            ..Self::default()
        }
    }

    /// The annotation recording the infrastructure's own ID,
    /// `<domain>/external-name`, in the finalizer's domain: set by the
    /// controller when a callback reports the ID, or by a user to import
    /// existing infrastructure.
    ///
    /// ```
    /// use blue_kubernetes::config::Names;
    /// let names = Names::for_domain("db.example.com");
    /// assert_eq!(names.external_name_annotation(), "db.example.com/external-name");
    /// ```
    pub fn external_name_annotation(&self) -> String {
        let domain = self.finalizer.split('/').next().unwrap_or_default();
        format!("{domain}/external-name")
    }

    /// The annotation in which the library keeps, on an object read at an
    /// older version of its kind, the stored config that version cannot
    /// express (`<domain>/stored-config`, in the finalizer's domain); the
    /// conversion back to the stored version restores it and removes the
    /// annotation. Never edit it by hand.
    ///
    /// ```
    /// use blue_kubernetes::config::Names;
    /// let names = Names::for_domain("db.example.com");
    /// assert_eq!(names.stored_config_annotation(), "db.example.com/stored-config");
    /// ```
    pub fn stored_config_annotation(&self) -> String {
        let domain = self.finalizer.split('/').next().unwrap_or_default();
        format!("{domain}/stored-config")
    }

    /// The fields still holding the reference's domain-qualified values
    /// without that having been chosen: what the start warning names.
    pub(crate) fn unchosen_reference(&self) -> Vec<&'static str> {
        if self.chosen {
            return Vec::new();
        }
        let mut fields = Vec::new();
        if self.finalizer == FINALIZER {
            fields.push("finalizer");
        }
        if self.request_annotation == REQUEST_ANNOTATION {
            fields.push("request_annotation");
        }
        fields
    }

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

/// A DNS-1123 label: a namespace's or a Lease's name.
pub(crate) fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Whether `s` can be an object's name: a DNS-1123 subdomain (lowercase
/// alphanumerics, `-` and `.`, each dot-separated part starting and ending
/// alphanumeric, at most 253 characters). Checked before a name from a
/// spec goes anywhere: anything else could read as a flag or a path
/// (`-o=yaml`, `../x`, `a/b`), and no object has such a name anyway.
///
/// ```
/// assert!(blue_kubernetes::resource::is_object_name("db-1.v2"));
/// assert!(!blue_kubernetes::resource::is_object_name("../main"));
/// ```
pub fn is_object_name(s: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let part_ok = |p: &str| {
        p.bytes().next().is_some_and(alnum)
            && p.bytes().last().is_some_and(alnum)
            && p.bytes().all(|b| alnum(b) || b == b'-')
    };
    !s.is_empty() && s.len() <= 253 && s.split('.').all(part_ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_names_are_dns_subdomains() {
        let longest = format!("{}.{}", "a".repeat(126), "b".repeat(126));
        for good in ["main", "db-1", "my-server.v2", "0", "a.b.c", &longest] {
            assert!(is_object_name(good), "{good:?}");
        }
        let too_long = "a".repeat(254);
        for bad in [
            "", "../main", "a/b", "..", ".", "-o=yaml", "Main", "a_b", "a..b", "a.-b", "a-", "-a",
            ".a", "a.", "a b", "a%2Fb", "é", &too_long,
        ] {
            assert!(!is_object_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn reference_names_are_valid_defaults() {
        assert_eq!(Names::default().problem(), None);
    }

    #[test]
    fn a_domain_derives_all_three_names_and_they_are_valid() {
        let names = Names::for_domain("db.example.com");
        assert_eq!(names.finalizer, "db.example.com/infrastructure");
        assert_eq!(names.request_annotation, "db.example.com/reconcile-request");
        assert_eq!(names.destroy_protection_key, "prevent-destroy");
        assert_eq!(names.problem(), None);
        assert_eq!(
            Names::for_domain("Not A Domain").problem().map(|p| p.0),
            Some("names.finalizer")
        );
    }

    #[test]
    fn only_unchosen_reference_names_are_reported() {
        let default = Names::default();
        assert_eq!(
            default.unchosen_reference(),
            ["finalizer", "request_annotation"]
        );
        assert_eq!(Names::reference(), default);
        assert!(Names::reference().unchosen_reference().is_empty());
        assert!(Names::for_domain("db.example.com")
            .unchosen_reference()
            .is_empty());
        let half = Names::default().with_finalizer("db.example.com/infrastructure".into());
        assert_eq!(half.unchosen_reference(), ["request_annotation"]);
        // A domain chosen, then a setter back to the reference's value:
        // still a deliberate choice.
        let back = Names::for_domain("db.example.com").with_finalizer(FINALIZER.into());
        assert!(back.unchosen_reference().is_empty());
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
