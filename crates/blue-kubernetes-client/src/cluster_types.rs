//! Small typed values of the cluster-level calls: discovery, access reviews.

use serde::{Deserialize, Serialize};

/// One resource a group/version serves, as discovery reports it
/// (an entry of an `APIResourceList`).
///
/// ```
/// use blue_kubernetes_client::ApiResource;
/// let r = ApiResource::new("widgets", "Widget", true, ["get", "list"]);
/// assert!(r.verbs.iter().any(|v| v == "list"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiResource {
    /// The plural name, or `plural/subresource` (e.g. `widgets/status`).
    pub name: String,
    /// The kind of the objects.
    pub kind: String,
    /// Whether the objects live in namespaces.
    #[serde(default)]
    pub namespaced: bool,
    /// The singular name, when the server reports one.
    #[serde(default, rename = "singularName")]
    pub singular_name: String,
    /// The verbs the server supports on it.
    #[serde(default)]
    pub verbs: Vec<String>,
}

impl ApiResource {
    /// An entry with the given name, kind, scope and verbs.
    pub fn new<V: Into<String>>(
        name: impl Into<String>,
        kind: impl Into<String>,
        namespaced: bool,
        verbs: impl IntoIterator<Item = V>,
    ) -> Self {
        Self {
            name: name.into(),
            kind: kind.into(),
            namespaced,
            singular_name: String::new(),
            verbs: verbs.into_iter().map(Into::into).collect(),
        }
    }
}

/// One question to the API server's authorizer: may the caller do `verb`
/// on `resource` (and `subresource`) of `group` in `namespace`?
/// Asked with a `SelfSubjectAccessReview`.
///
/// ```
/// use blue_kubernetes_client::AccessCheck;
/// let check = AccessCheck::new("default", "update", "example.com", "widgets").with_subresource("status");
/// assert_eq!(check.to_string(), "update widgets/status.example.com in namespace default");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AccessCheck {
    /// The namespace asked about.
    pub namespace: String,
    /// The verb, e.g. `list`, `update`, `create`.
    pub verb: String,
    /// The API group (`""` for the core group).
    pub group: String,
    /// The plural resource name.
    pub resource: String,
    /// The subresource, e.g. `status`; empty for none.
    pub subresource: String,
}

impl AccessCheck {
    /// A check without a subresource.
    pub fn new(
        namespace: impl Into<String>,
        verb: impl Into<String>,
        group: impl Into<String>,
        resource: impl Into<String>,
    ) -> Self {
        Self {
            namespace: namespace.into(),
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: String::new(),
        }
    }

    /// The same check on a subresource.
    pub fn with_subresource(mut self, subresource: impl Into<String>) -> Self {
        self.subresource = subresource.into();
        self
    }

    /// The `SelfSubjectAccessReview` asking this question.
    pub fn review(&self) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {
                "namespace": self.namespace,
                "verb": self.verb,
                "group": self.group,
                "resource": self.resource,
                "subresource": self.subresource,
            }},
        })
    }
}

/// `verb resource[/subresource][.group] in namespace NS`, the way RBAC rules name it.
impl std::fmt::Display for AccessCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.verb, self.resource)?;
        if !self.subresource.is_empty() {
            write!(f, "/{}", self.subresource)?;
        }
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        write!(f, " in namespace {}", self.namespace)
    }
}
