//! The API path of a k8s-openapi type, from its `Resource` constants:
//! `/api/v1/...` for the core group, `/apis/GROUP/VERSION/...` for the others,
//! with `namespaces/NS` for a namespaced type.

use crate::{ApiPath, Error};
use k8s_openapi::Resource;

/// The collection of `K` in `namespace` (`None`: a cluster-scoped type).
pub(super) fn collection<K: Resource>(namespace: Option<&str>) -> Result<ApiPath, Error> {
    at::<K>(namespace, None)
}

/// The object `name` of `K` in `namespace`.
pub(super) fn object<K: Resource>(namespace: Option<&str>, name: &str) -> Result<ApiPath, Error> {
    at::<K>(namespace, Some(name))
}

fn at<K: Resource>(namespace: Option<&str>, name: Option<&str>) -> Result<ApiPath, Error> {
    let (group, version, plural) = (K::GROUP, K::VERSION, K::URL_PATH_SEGMENT);
    match namespace {
        Some(ns) => ApiPath::namespaced(group, version, ns, plural, name, None),
        None => ApiPath::cluster(group, version, plural, name, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

    #[test]
    fn paths_come_from_the_types_group_version_plural_and_scope() {
        let cm = object::<ConfigMap>(Some("dev"), "app").unwrap();
        assert_eq!(cm.as_str(), "/api/v1/namespaces/dev/configmaps/app");
        let deployments = collection::<Deployment>(Some("dev")).unwrap();
        assert_eq!(
            deployments.as_str(),
            "/apis/apps/v1/namespaces/dev/deployments"
        );
        let ns = object::<Namespace>(None, "dev").unwrap();
        assert_eq!(ns.as_str(), "/api/v1/namespaces/dev");
    }

    #[test]
    fn names_that_would_change_the_path_are_refused() {
        assert!(object::<ConfigMap>(Some("dev"), "../secrets").is_err());
        assert!(object::<ConfigMap>(Some(""), "app").is_err());
        assert!(collection::<ConfigMap>(Some("a/b")).is_err());
    }
}
