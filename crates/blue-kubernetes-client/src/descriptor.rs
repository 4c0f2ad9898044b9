//! The coordinates of a custom resource type.

use serde::{Deserialize, Serialize};

/// Names a custom resource type: `{group, version, plural, kind}`.
///
/// ```
/// use blue_kubernetes_client::ResourceDescriptor;
/// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
/// assert_eq!(d.qualified_plural(), "widgets.example.com");
/// assert_eq!(d.api_version(), "example.com/v1");
/// assert_eq!(d.versioned_plural(), "widgets.v1.example.com");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResourceDescriptor {
    /// API group, e.g. `example.com`.
    pub group: String,
    /// API version within the group, e.g. `v1`.
    pub version: String,
    /// Lowercase plural resource name, e.g. `widgets`.
    pub plural: String,
    /// Kind, e.g. `Widget`.
    pub kind: String,
    /// Whether objects live in a namespace (`true`, the default) or are
    /// cluster-scoped (the CRD's `scope: Cluster`).
    #[serde(default = "namespaced_by_default")]
    pub namespaced: bool,
}

fn namespaced_by_default() -> bool {
    true
}

impl ResourceDescriptor {
    /// Builds a descriptor from its four parts.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        plural: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            kind: kind.into(),
            namespaced: true,
        }
    }

    /// The same type, cluster-scoped: lists and watches cover the whole
    /// cluster and objects have no namespace (pass `""` where a namespace is
    /// asked for).
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// let d = ResourceDescriptor::new("example.com", "v1", "racks", "Rack").cluster_scoped();
    /// assert!(!d.namespaced);
    /// ```
    pub fn cluster_scoped(mut self) -> Self {
        self.namespaced = false;
        self
    }

    /// `plural.group`, the name kubectl resolves unambiguously.
    pub fn qualified_plural(&self) -> String {
        format!("{}.{}", self.plural, self.group)
    }

    /// `plural.version.group`: the exact version, so reads of a version the
    /// server does not serve fail instead of silently using another one.
    pub fn versioned_plural(&self) -> String {
        format!("{}.{}.{}", self.plural, self.version, self.group)
    }

    /// `group/version`, the `apiVersion` of objects of this type (just
    /// `version` for the core group).
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// assert_eq!(widgets.api_version(), "example.com/v1");
    /// let secrets = ResourceDescriptor::new("", "v1", "secrets", "Secret");
    /// assert_eq!(secrets.api_version(), "v1");
    /// ```
    pub fn api_version(&self) -> String {
        match self.group.as_str() {
            "" => self.version.clone(),
            group => format!("{group}/{}", self.version),
        }
    }
}
