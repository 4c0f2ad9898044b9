//! Where a request on objects of one type goes: one namespace, every
//! namespace, or the cluster (for a cluster-scoped type). Both transports
//! derive their paths and kubectl flags from here, so they cannot disagree.

use crate::names::object_name;
use crate::{ApiPath, Error, ResourceDescriptor};

/// The namespace part of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope<'a> {
    /// One namespace of a namespaced type.
    Namespace(&'a str),
    /// Every namespace of a namespaced type (lists and watches only).
    AllNamespaces,
    /// A cluster-scoped type: objects have no namespace.
    Cluster,
}

impl<'a> Scope<'a> {
    /// The scope of a list or watch: `""` is every namespace; a
    /// cluster-scoped type ignores `namespace`, since it has only one scope.
    pub(crate) fn of_collection(
        descriptor: &ResourceDescriptor,
        namespace: &'a str,
    ) -> Result<Self, Error> {
        if !descriptor.namespaced {
            Ok(Scope::Cluster)
        } else if namespace.is_empty() {
            Ok(Scope::AllNamespaces)
        } else {
            Ok(Scope::Namespace(object_name(namespace, "namespace")?))
        }
    }

    /// The scope of one object: a namespaced type needs its namespace
    /// (`field` names where it came from); a cluster-scoped one ignores it.
    pub(crate) fn of_object(
        descriptor: &ResourceDescriptor,
        namespace: Option<&'a str>,
        field: &'static str,
    ) -> Result<Self, Error> {
        if !descriptor.namespaced {
            return Ok(Scope::Cluster);
        }
        let namespace = namespace.ok_or(Error::InvalidOption {
            field,
            reason: "is missing, empty or not a string",
        })?;
        Ok(Scope::Namespace(object_name(namespace, field)?))
    }

    /// The namespace objects of this scope carry, if one.
    pub(crate) fn namespace(self) -> Option<&'a str> {
        match self {
            Scope::Namespace(namespace) => Some(namespace),
            Scope::AllNamespaces | Scope::Cluster => None,
        }
    }

    /// `/apis/G/V[/namespaces/NS]/PLURAL[/NAME[/SUBRESOURCE]]`.
    pub(crate) fn path(
        self,
        descriptor: &ResourceDescriptor,
        name: Option<&str>,
        subresource: Option<&str>,
    ) -> Result<ApiPath, Error> {
        let (group, version, plural) = (&descriptor.group, &descriptor.version, &descriptor.plural);
        match self {
            Scope::Namespace(namespace) => {
                ApiPath::namespaced(group, version, namespace, plural, name, subresource)
            }
            Scope::AllNamespaces | Scope::Cluster => {
                ApiPath::cluster(group, version, plural, name, subresource)
            }
        }
    }

    /// kubectl's flags for this scope: `-n NS`, `--all-namespaces`, or none.
    pub(crate) fn kubectl_flags(self) -> Vec<&'a str> {
        match self {
            Scope::Namespace(namespace) => vec!["-n", namespace],
            Scope::AllNamespaces => vec!["--all-namespaces"],
            Scope::Cluster => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widgets() -> ResourceDescriptor {
        ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
    }

    #[test]
    fn an_empty_namespace_lists_every_namespace() {
        let scope = Scope::of_collection(&widgets(), "").unwrap();
        assert_eq!(scope, Scope::AllNamespaces);
        let path = scope.path(&widgets(), None, None).unwrap();
        assert_eq!(path.as_str(), "/apis/example.com/v1/widgets");
        assert_eq!(scope.kubectl_flags(), ["--all-namespaces"]);
    }

    #[test]
    fn a_cluster_scoped_type_never_names_a_namespace() {
        let racks = widgets().cluster_scoped();
        for namespace in ["", "dev"] {
            let scope = Scope::of_collection(&racks, namespace).unwrap();
            assert_eq!(scope, Scope::Cluster);
            assert!(scope.kubectl_flags().is_empty());
        }
        let scope = Scope::of_object(&racks, None, "namespace").unwrap();
        let path = scope.path(&racks, Some("r"), Some("status")).unwrap();
        assert_eq!(path.as_str(), "/apis/example.com/v1/widgets/r/status");
    }

    #[test]
    fn an_object_of_a_namespaced_type_needs_a_valid_namespace() {
        for namespace in [None, Some(""), Some("a/b"), Some("-n")] {
            let err = Scope::of_object(&widgets(), namespace, "namespace").unwrap_err();
            assert!(matches!(
                err,
                Error::InvalidOption {
                    field: "namespace",
                    ..
                }
            ));
        }
        let scope = Scope::of_object(&widgets(), Some("dev"), "namespace").unwrap();
        assert_eq!(scope.kubectl_flags(), ["-n", "dev"]);
        let path = scope.path(&widgets(), Some("w"), None).unwrap();
        assert_eq!(
            path.as_str(),
            "/apis/example.com/v1/namespaces/dev/widgets/w"
        );
    }
}
