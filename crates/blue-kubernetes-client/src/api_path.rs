//! API paths built from validated segments, so no name can change the path.

use crate::Error;

/// An API server path such as `/api/v1/namespaces/default/configmaps/app`,
/// optionally with a query.
///
/// Every segment is checked on the way in: it must be non-empty, not `.` or
/// `..`, and free of `/ ? # % \`, whitespace and control characters.
/// Kubernetes names never contain those, so real objects are unaffected,
/// while a name like `a/../b` cannot reach another path. Query values are
/// percent-encoded.
///
/// ```
/// use blue_kubernetes_client::ApiPath;
/// let path = ApiPath::new(["api", "v1", "namespaces", "dev", "configmaps", "app"]).unwrap();
/// assert_eq!(path.as_str(), "/api/v1/namespaces/dev/configmaps/app");
///
/// assert!(ApiPath::new(["api", "v1", "namespaces", "a/../b"]).is_err());
/// assert!(ApiPath::parse("/api/v1/namespaces/../secrets").is_err());
///
/// let listed = ApiPath::parse("/api/v1/namespaces/dev/events")
///     .unwrap()
///     .with_query("fieldSelector", "involvedObject.name=app");
/// assert_eq!(listed.as_str(), "/api/v1/namespaces/dev/events?fieldSelector=involvedObject.name%3Dapp");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ApiPath {
    path: String,
    has_query: bool,
}

impl ApiPath {
    /// Joins `segments` into `/s1/s2/...`, validating each one.
    pub fn new<I, S>(segments: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut path = String::new();
        for segment in segments {
            let segment = segment.as_ref();
            check_segment(segment)?;
            path.push('/');
            path.push_str(segment);
        }
        if path.is_empty() {
            return Err(invalid("must have at least one segment"));
        }
        Ok(Self {
            path,
            has_query: false,
        })
    }

    /// Validates an absolute path without a query, e.g. from a manifest.
    pub fn parse(path: &str) -> Result<Self, Error> {
        let Some(rest) = path.strip_prefix('/') else {
            return Err(invalid("must start with `/`"));
        };
        Self::new(rest.split('/'))
    }

    /// `/apis/GROUP/VERSION/namespaces/NAMESPACE/PLURAL[/NAME[/SUBRESOURCE]]`
    /// for a custom resource (`/api/v1/...` when `group` is empty).
    ///
    /// ```
    /// use blue_kubernetes_client::ApiPath;
    /// let p = ApiPath::namespaced("example.com", "v1", "default", "widgets", Some("w"), Some("status")).unwrap();
    /// assert_eq!(p.as_str(), "/apis/example.com/v1/namespaces/default/widgets/w/status");
    /// let core = ApiPath::namespaced("", "v1", "default", "configmaps", None, None).unwrap();
    /// assert_eq!(core.as_str(), "/api/v1/namespaces/default/configmaps");
    /// ```
    pub fn namespaced(
        group: &str,
        version: &str,
        namespace: &str,
        plural: &str,
        name: Option<&str>,
        subresource: Option<&str>,
    ) -> Result<Self, Error> {
        Self::resource(group, version, Some(namespace), plural, name, subresource)
    }

    /// `/apis/GROUP/VERSION/PLURAL[/NAME[/SUBRESOURCE]]`, with no namespace:
    /// an object of a cluster-scoped type, or (without a name) the objects
    /// of a namespaced type in every namespace.
    ///
    /// ```
    /// use blue_kubernetes_client::ApiPath;
    /// let p = ApiPath::cluster("example.com", "v1", "racks", Some("r1"), Some("status")).unwrap();
    /// assert_eq!(p.as_str(), "/apis/example.com/v1/racks/r1/status");
    /// let everywhere = ApiPath::cluster("", "v1", "configmaps", None, None).unwrap();
    /// assert_eq!(everywhere.as_str(), "/api/v1/configmaps");
    /// ```
    pub fn cluster(
        group: &str,
        version: &str,
        plural: &str,
        name: Option<&str>,
        subresource: Option<&str>,
    ) -> Result<Self, Error> {
        Self::resource(group, version, None, plural, name, subresource)
    }

    /// `/api[s]/[GROUP/]VERSION[/namespaces/NS]/PLURAL[/NAME[/SUBRESOURCE]]`.
    fn resource(
        group: &str,
        version: &str,
        namespace: Option<&str>,
        plural: &str,
        name: Option<&str>,
        subresource: Option<&str>,
    ) -> Result<Self, Error> {
        let mut segments = if group.is_empty() {
            vec!["api", version]
        } else {
            vec!["apis", group, version]
        };
        if let Some(namespace) = namespace {
            segments.extend(["namespaces", namespace]);
        }
        segments.push(plural);
        segments.extend(name);
        segments.extend(subresource);
        Self::new(segments)
    }

    /// Appends `key=value` to the query; the value is percent-encoded and
    /// the key must be a plain identifier (it is a programmer's constant).
    ///
    /// # Panics
    /// When `key` is not ASCII alphanumeric: a key is code, never input.
    pub fn with_query(mut self, key: &str, value: &str) -> Self {
        assert!(
            !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric()),
            "query keys are identifiers"
        );
        self.path.push(if self.has_query { '&' } else { '?' });
        self.path.push_str(key);
        self.path.push('=');
        for byte in value.bytes() {
            if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                self.path.push(char::from(byte));
            } else {
                self.path.push_str(&format!("%{byte:02X}"));
            }
        }
        self.has_query = true;
        self
    }

    /// The path (and query) as sent.
    pub fn as_str(&self) -> &str {
        &self.path
    }
}

// Paths name objects, which is fine to show; queries may carry selectors
// with label values, so Debug shows the path part only.
impl std::fmt::Debug for ApiPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.split('?').next().unwrap_or_default();
        write!(
            f,
            "ApiPath({path:?}{})",
            if self.has_query { " + query" } else { "" }
        )
    }
}

fn check_segment(segment: &str) -> Result<(), Error> {
    let unsafe_char = |c: char| c.is_whitespace() || c.is_control() || "/?#%\\".contains(c);
    if segment.is_empty() || segment == "." || segment == ".." || segment.contains(unsafe_char) {
        return Err(invalid(
            "every segment must be a non-empty name without `/ ? # % \\`, not `.` or `..`",
        ));
    }
    Ok(())
}

fn invalid(reason: &'static str) -> Error {
    Error::InvalidOption {
        field: "path",
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_that_could_change_the_path_are_refused() {
        for bad in [
            "", ".", "..", "a/b", "a?b", "a#b", "a%2Fb", "a b", "a\\b", "a\nb",
        ] {
            assert!(ApiPath::new(["api", bad]).is_err(), "{bad:?}");
        }
        for bad in ["api/v1", "//api", "/api/", "/api/./v1", "/"] {
            assert!(ApiPath::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn query_values_are_encoded_and_hidden_from_debug() {
        let p = ApiPath::parse("/api/v1/pods")
            .unwrap()
            .with_query("labelSelector", "team=a&b c")
            .with_query("limit", "5");
        assert_eq!(
            p.as_str(),
            "/api/v1/pods?labelSelector=team%3Da%26b%20c&limit=5"
        );
        assert!(!format!("{p:?}").contains("team"));
    }
}
