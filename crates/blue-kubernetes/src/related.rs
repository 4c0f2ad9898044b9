//! Related objects and references: objects whose changes ask for an
//! early check of the resources they concern ([`Related`], declared with
//! [`ResourceSchema::related`](crate::ResourceSchema::related)), and config
//! fields that name another managed resource ([`Reference`], declared with
//! [`ResourceSchema::reference`](crate::ResourceSchema::reference)), whose
//! outputs a callback reads once it is Ready (the crate README, "Related
//! objects, references and triggers").
//!
//! The runtime lists and watches each related kind once per namespace
//! scope, however many packages declare it, and keeps of each object only
//! its resourceVersion and the resources it mapped to: the mapping runs
//! when a version arrives, never later. A kind declared
//! [`cached`](Related::cached) keeps its objects too, for the packages'
//! reads ([`Api::cached`](crate::package::Api::cached)).

pub use crate::references::Reference;

use blue_kubernetes_client::ResourceDescriptor;
use serde_json::Value;
use std::sync::Arc;

/// A resource a related object concerns: its namespace (`""` for a
/// cluster-scoped resource) and name. The kind is the declaring package's.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    /// The resource's namespace.
    pub namespace: String,
    /// The resource's name.
    pub name: String,
}

impl ObjectRef {
    /// The resource `namespace/name`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

type MapFn = dyn Fn(&Value) -> Vec<ObjectRef> + Send + Sync;

/// How a related object names the resources it concerns.
#[derive(Clone)]
enum Mapping {
    /// An `ownerReference` of the package's kind (apiVersion and kind),
    /// naming the owner in the object's namespace.
    Owner,
    /// This label's value names the owner in the object's namespace.
    Label(String),
    /// This annotation's value names the owner in the object's namespace.
    Annotation(String),
    /// The package's own function.
    Function(Arc<MapFn>),
}

/// One related kind of a package and how its objects map to the
/// package's resources.
///
/// A change to a related object (created, modified, deleted, or found so
/// by a resync list) asks for an early check of every resource it maps to,
/// in memory (nothing is written for the request itself), like a changed
/// request annotation: the resource is checked as if its next check were
/// due now, `observe` runs, and drift is repaired.
///
/// ```
/// use blue_kubernetes::related::{ObjectRef, Related};
/// use blue_kubernetes_client::ResourceDescriptor;
/// let config_maps = ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap");
/// // The ConfigMaps a resource creates name it in an annotation.
/// let owned = Related::annotated(config_maps.clone(), "example.com/owner");
/// // Or any mapping: here a ConfigMap `<name>-settings` concerns `<name>`.
/// let mapped = Related::mapped(config_maps, |cm| {
///     let meta = &cm["metadata"];
///     let name = meta["name"].as_str().unwrap_or_default();
///     let namespace = meta["namespace"].as_str().unwrap_or_default();
///     name.strip_suffix("-settings")
///         .map(|owner| vec![ObjectRef::new(namespace, owner)])
///         .unwrap_or_default()
/// });
/// # let _ = (owned, mapped);
/// ```
#[derive(Clone)]
pub struct Related {
    pub(crate) descriptor: ResourceDescriptor,
    mapping: Mapping,
    pub(crate) selector: Option<String>,
    pub(crate) cached: bool,
}

impl Related {
    /// Objects of `descriptor` the package's resources own: each
    /// `ownerReference` with the package's apiVersion and kind names a
    /// resource in the object's namespace (the connection Secret is related
    /// this way, without being declared).
    pub fn owned(descriptor: ResourceDescriptor) -> Self {
        Self {
            descriptor,
            mapping: Mapping::Owner,
            selector: None,
            cached: false,
        }
    }

    /// Objects of `descriptor` whose label `key` holds the name of the
    /// resource (in the object's namespace) they belong to. Only objects
    /// carrying the label are listed and watched (the label selector
    /// `key`), unless [`selector`](Self::selector) says otherwise.
    pub fn labelled(descriptor: ResourceDescriptor, key: impl Into<String>) -> Self {
        let key = key.into();
        Self {
            descriptor,
            selector: Some(key.clone()),
            mapping: Mapping::Label(key),
            cached: false,
        }
    }

    /// Objects of `descriptor` whose annotation `key` holds the name of the
    /// resource (in the object's namespace) they belong to. Unlike a label,
    /// an annotation holds any name (up to 253 characters).
    pub fn annotated(descriptor: ResourceDescriptor, key: impl Into<String>) -> Self {
        Self {
            descriptor,
            mapping: Mapping::Annotation(key.into()),
            selector: None,
            cached: false,
        }
    }

    /// Objects of `descriptor`, mapped by `map` to the resources they
    /// concern. `map` sees the whole object as the watch (or list)
    /// delivered it and runs on the runtime's task: keep it quick and
    /// never block. What it returns is all that is kept of the object.
    pub fn mapped<F>(descriptor: ResourceDescriptor, map: F) -> Self
    where
        F: Fn(&Value) -> Vec<ObjectRef> + Send + Sync + 'static,
    {
        Self {
            descriptor,
            mapping: Mapping::Function(Arc::new(map)),
            selector: None,
            cached: false,
        }
    }

    /// Lists and watches only the objects that match the label selector
    /// `selector` (e.g. `app.kubernetes.io/managed-by=my-operator`), so the
    /// controller is never sent the rest of a namespace. When packages
    /// declare one kind with different selectors (or one without), the kind
    /// is listed and watched whole and each declaration still maps only
    /// what it maps.
    pub fn selector(mut self, selector: impl Into<String>) -> Self {
        self.selector = Some(selector.into());
        self
    }

    /// Keeps the kind's objects (without `metadata.managedFields`) from
    /// the watch the controller runs anyway, for the package's reads with
    /// [`Api::cached`](crate::package::Api::cached): a read costs the API
    /// server nothing and still sees every write this process made. Needs
    /// a label selector ([`labelled`](Self::labelled) has one, else
    /// [`selector`](Self::selector)), and the cache keeps only the objects
    /// it matches: a cached kind never holds every object of a namespace.
    /// Every cached declaration of one kind must give the same selector.
    ///
    /// ```
    /// use blue_kubernetes::related::Related;
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// let config_maps = ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap");
    /// let owned = Related::labelled(config_maps, "example.com/owner").cached();
    /// # let _ = owned;
    /// ```
    pub fn cached(mut self) -> Self {
        self.cached = true;
        self
    }

    /// The related kind.
    pub fn descriptor(&self) -> &ResourceDescriptor {
        &self.descriptor
    }

    /// The resources of the package of kind `owner` that `object` concerns.
    pub(crate) fn targets(&self, owner: &ResourceDescriptor, object: &Value) -> Vec<ObjectRef> {
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let named = |field: &str, key: &str| {
            object["metadata"][field][key]
                .as_str()
                .filter(|name| !name.is_empty())
                .map(|name| vec![ObjectRef::new(namespace, name)])
                .unwrap_or_default()
        };
        match &self.mapping {
            Mapping::Owner => owners(owner, object)
                .map(|name| ObjectRef::new(namespace, name))
                .collect(),
            Mapping::Label(key) => named("labels", key),
            Mapping::Annotation(key) => named("annotations", key),
            Mapping::Function(map) => map(object),
        }
    }
}

/// The names of `object`'s owners of kind `owner`.
fn owners<'a>(owner: &'a ResourceDescriptor, object: &'a Value) -> impl Iterator<Item = &'a str> {
    let api_version = owner.api_version();
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(move |r| {
            r["kind"] == owner.kind.as_str() && r["apiVersion"] == api_version.as_str()
        })
        .filter_map(|r| r["name"].as_str())
}

impl std::fmt::Debug for Related {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mapping = match &self.mapping {
            Mapping::Owner => "ownerReference".to_string(),
            Mapping::Label(key) => format!("label {key}"),
            Mapping::Annotation(key) => format!("annotation {key}"),
            Mapping::Function(_) => "function".to_string(),
        };
        f.debug_struct("Related")
            .field("descriptor", &self.descriptor)
            .field("mapping", &mapping)
            .field("selector", &self.selector)
            .field("cached", &self.cached)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn widgets() -> ResourceDescriptor {
        ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
    }

    fn config_maps() -> ResourceDescriptor {
        ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap")
    }

    fn refs(names: &[&str]) -> Vec<ObjectRef> {
        names.iter().map(|n| ObjectRef::new("dev", *n)).collect()
    }

    #[test]
    fn owner_references_of_the_package_kind_and_version_map_to_their_owners() {
        let cm = json!({"metadata": {"namespace": "dev", "name": "cm", "ownerReferences": [
            {"apiVersion": "example.com/v1", "kind": "Widget", "name": "a", "uid": "u1"},
            {"apiVersion": "example.com/v2", "kind": "Widget", "name": "other-version"},
            {"apiVersion": "example.com/v1", "kind": "Gadget", "name": "other-kind"},
            {"apiVersion": "example.com/v1", "kind": "Widget", "name": "b"},
        ]}});
        let related = Related::owned(config_maps());
        assert_eq!(related.targets(&widgets(), &cm), refs(&["a", "b"]));
        let orphan = json!({"metadata": {"namespace": "dev", "name": "cm"}});
        assert!(related.targets(&widgets(), &orphan).is_empty());
    }

    #[test]
    fn a_label_or_annotation_names_one_owner_in_the_objects_namespace() {
        let cm = json!({"metadata": {"namespace": "dev", "name": "cm",
            "labels": {"example.com/owner": "a"},
            "annotations": {"example.com/owner": "b", "empty": ""}}});
        let by_label = Related::labelled(config_maps(), "example.com/owner");
        let by_annotation = Related::annotated(config_maps(), "example.com/owner");
        assert_eq!(by_label.targets(&widgets(), &cm), refs(&["a"]));
        assert_eq!(by_annotation.targets(&widgets(), &cm), refs(&["b"]));
        let missing = Related::annotated(config_maps(), "elsewhere");
        assert!(missing.targets(&widgets(), &cm).is_empty());
        let empty = Related::annotated(config_maps(), "empty");
        assert!(empty.targets(&widgets(), &cm).is_empty(), "no name");
    }

    #[test]
    fn a_mapping_function_decides_alone() {
        let related = Related::mapped(config_maps(), |o| {
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            vec![ObjectRef::new("elsewhere", name.to_uppercase())]
        });
        let cm = json!({"metadata": {"namespace": "dev", "name": "cm"}});
        assert_eq!(
            related.targets(&widgets(), &cm),
            vec![ObjectRef::new("elsewhere", "CM")]
        );
        assert!(format!("{related:?}").contains("function"));
    }
}
