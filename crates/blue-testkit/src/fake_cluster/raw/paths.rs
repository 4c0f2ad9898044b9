//! Reading an API path the way kube-apiserver routes it:
//! `/api/v1[/namespaces/NS]/PLURAL[/NAME[/SUBRESOURCE]]` for the core group,
//! `/apis/GROUP/VERSION[/namespaces/NS]/PLURAL[/NAME[/SUBRESOURCE]]` for
//! the others, and the type each one names.

use super::Refused;
use blue_kubernetes_client::{LabelSelector, ResourceDescriptor};

/// What a request path names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    /// `""` for the core group.
    pub(crate) group: String,
    pub(crate) version: String,
    /// `None` on a path without `namespaces/NS`: a cluster-scoped object, or
    /// (without a name) a list across every namespace.
    pub(crate) namespace: Option<String>,
    pub(crate) plural: String,
    /// `None` for the collection.
    pub(crate) name: Option<String>,
    pub(crate) subresource: Option<String>,
    /// The `labelSelector`, parsed.
    pub(crate) selector: LabelSelector,
}

impl Target {
    /// Reads `path` (with its query); a path the server would not route is
    /// `404 NotFound`, like the real server's answer to an unknown path.
    pub(crate) fn parse(path: &str) -> Result<Self, Refused> {
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let (group, version, rest) = match segments.as_slice() {
            ["api", version, rest @ ..] => ("", *version, rest),
            ["apis", group, version, rest @ ..] => (*group, *version, rest),
            _ => return Err(Refused::not_found()),
        };
        // `/api/v1/namespaces/NS` is the Namespace object itself.
        let (namespace, rest) = match rest {
            ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(*ns), rest),
            _ => (None, rest),
        };
        let (plural, name, subresource) = match rest {
            [plural] => (*plural, None, None),
            [plural, name] => (*plural, Some(*name), None),
            [plural, name, sub] => (*plural, Some(*name), Some(*sub)),
            _ => return Err(Refused::not_found()),
        };
        Ok(Self {
            group: group.to_owned(),
            version: version.to_owned(),
            namespace: namespace.map(str::to_owned),
            plural: plural.to_owned(),
            name: name.map(str::to_owned),
            subresource: subresource.map(str::to_owned),
            selector: selector(query).ok_or_else(Refused::bad_request)?,
        })
    }

    /// `plural.group`, or `plural` for the core group: how calls name types.
    pub(crate) fn qualified_plural(&self) -> String {
        match self.group.as_str() {
            "" => self.plural.clone(),
            group => format!("{}.{group}", self.plural),
        }
    }

    /// Whether the path is one of Events, which the fake keeps outside
    /// the object store with their own rules.
    pub(crate) fn is_event(&self) -> bool {
        matches!(
            (self.group.as_str(), self.plural.as_str()),
            ("" | "events.k8s.io", "events")
        )
    }

    /// Whether the path is one of Leases, which the fake keeps in their
    /// own store for leader election.
    pub(crate) fn is_lease(&self) -> bool {
        self.group == "coordination.k8s.io" && self.plural == "leases"
    }

    /// Either: paths outside the object store.
    pub(crate) fn is_event_or_lease(&self) -> bool {
        self.is_event() || self.is_lease()
    }
}

/// Built-in types whose kind and scope the path alone does not tell.
const BUILT_IN: [(&str, &str, &str, bool); 16] = [
    ("", "secrets", "Secret", true),
    ("", "configmaps", "ConfigMap", true),
    ("", "services", "Service", true),
    ("", "serviceaccounts", "ServiceAccount", true),
    ("", "pods", "Pod", true),
    ("", "persistentvolumeclaims", "PersistentVolumeClaim", true),
    ("", "namespaces", "Namespace", false),
    ("", "nodes", "Node", false),
    ("", "persistentvolumes", "PersistentVolume", false),
    ("apps", "deployments", "Deployment", true),
    ("apps", "statefulsets", "StatefulSet", true),
    ("apps", "daemonsets", "DaemonSet", true),
    ("batch", "jobs", "Job", true),
    ("rbac.authorization.k8s.io", "roles", "Role", true),
    (
        "rbac.authorization.k8s.io",
        "clusterroles",
        "ClusterRole",
        false,
    ),
    ("networking.k8s.io", "ingresses", "Ingress", true),
];

/// The type a path names: one the cluster already serves (the custom
/// resources created through the user side or [`FakeCluster::serve`](crate::FakeCluster::serve)),
/// a built-in one, or else a type known only from the path and, on a
/// create, the body's `kind`. Whether it is a custom resource decides the
/// fake's extras for it (`spec` defaulted, CRD schema applied).
pub(crate) fn resolve(
    target: &Target,
    served: &[ResourceDescriptor],
    body_kind: Option<&str>,
) -> Resolved {
    if let Some(d) = served
        .iter()
        .find(|d| d.group == target.group && d.plural == target.plural)
    {
        return Resolved {
            descriptor: d.clone(),
            known_scope: true,
            custom: true,
        };
    }
    let built_in = BUILT_IN
        .iter()
        .find(|(g, p, _, _)| *g == target.group && *p == target.plural);
    let (kind, namespaced, known_scope) = match built_in {
        Some((_, _, kind, namespaced)) => ((*kind).to_owned(), *namespaced, true),
        None => (
            body_kind.map_or_else(|| guess_kind(&target.plural), str::to_owned),
            // A list without a namespace covers every object of the type
            // either way.
            target.namespace.is_some(),
            false,
        ),
    };
    let mut descriptor = ResourceDescriptor::new(
        target.group.clone(),
        target.version.clone(),
        target.plural.clone(),
        kind,
    );
    descriptor.namespaced = namespaced;
    Resolved {
        descriptor,
        known_scope,
        custom: false,
    }
}

/// A path's type, with what the fake knows about it.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub(crate) descriptor: ResourceDescriptor,
    /// False for a type known only from the path: its scope is the path's.
    pub(crate) known_scope: bool,
    /// A custom resource the cluster serves: the same objects the
    /// [`Client`](blue_kubernetes_client::Client) face sees.
    pub(crate) custom: bool,
}

impl Resolved {
    /// Whether `target`'s scope fits the type: a namespaced type's object
    /// lives under `namespaces/NS` and a cluster-scoped one's does not; a
    /// namespaced type may be listed across every namespace.
    pub(crate) fn fits(&self, target: &Target) -> bool {
        match (self.descriptor.namespaced, &target.namespace) {
            (true, Some(_)) | (false, None) => true,
            (true, None) => target.name.is_none(),
            (false, Some(_)) => !self.known_scope,
        }
    }
}

/// `widgets` -> `Widget`: the usual relation, for a kind nothing else names.
fn guess_kind(plural: &str) -> String {
    let singular = plural.strip_suffix('s').unwrap_or(plural);
    let mut chars = singular.chars();
    chars
        .next()
        .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// The `labelSelector` of `query`, decoded and parsed (none: every
/// object); `None` when it does not decode or parse.
fn selector(query: &str) -> Option<LabelSelector> {
    let Some(raw) = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("labelSelector="))
    else {
        return Some(LabelSelector::default());
    };
    LabelSelector::parse(&percent_decode(raw)?).ok()
}

fn percent_decode(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_named_and_cluster_paths_are_read_as_the_server_routes_them() {
        let secret = Target::parse("/api/v1/namespaces/dev/secrets/s").unwrap();
        assert_eq!(
            (secret.group.as_str(), secret.namespace.as_deref()),
            ("", Some("dev"))
        );
        assert_eq!(
            (secret.plural.as_str(), secret.name.as_deref()),
            ("secrets", Some("s"))
        );
        let status = Target::parse("/apis/example.com/v1/namespaces/dev/widgets/w/status").unwrap();
        assert_eq!(status.subresource.as_deref(), Some("status"));
        assert_eq!(status.qualified_plural(), "widgets.example.com");
        let namespace = Target::parse("/api/v1/namespaces/dev").unwrap();
        assert_eq!(
            (namespace.plural.as_str(), namespace.namespace),
            ("namespaces", None)
        );
        assert!(Target::parse("/healthz").is_err());
        assert!(Target::parse("/api/v1/namespaces/dev/secrets/s/a/b").is_err());
    }

    #[test]
    fn label_selectors_are_decoded_and_matched() {
        let t = Target::parse("/api/v1/secrets?labelSelector=app%3Dweb%2C%21old").unwrap();
        let object = serde_json::json!({"metadata": {"labels": {"app": "web"}}});
        assert!(t.selector.matches(&object));
        let stale = serde_json::json!({"metadata": {"labels": {"app": "web", "old": "1"}}});
        assert!(!t.selector.matches(&stale));
        let set = Target::parse("/api/v1/secrets?labelSelector=app%20in%20%28web%29").unwrap();
        assert!(set.selector.matches(&object));
        assert!(Target::parse("/api/v1/secrets?labelSelector=app%20in").is_err());
        assert_eq!(guess_kind("widgets"), "Widget");
    }
}
