//! The hook that marks this process's writes for the cached reads: it sits
//! in the controller's client, so the package's API handle, connections
//! and the controller's own writes all pass it.

use super::{Mark, ObjectStore};
use blue_kubernetes_client::{Answer, Call, Error, Hook, Method};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Marks every successful write to an object of a cached kind.
pub(crate) struct OwnWrites(pub(crate) Arc<ObjectStore>);

impl Hook for OwnWrites {
    fn after(&self, call: &Call<'_>, result: Result<Answer<'_>, &Error>, _: Duration) {
        let Ok(answer) = result else { return };
        match (call, answer) {
            (Call::Raw { request }, Answer::Raw(response)) => {
                let ok = (200..300).contains(&response.status);
                if request.method == Method::Get || !ok {
                    return;
                }
                let Some(target) = Target::of(request.path.as_str()) else {
                    return;
                };
                let body = response.body.as_ref().unwrap_or(&Value::Null);
                let meta = &body["metadata"];
                let name = target.name.or_else(|| meta["name"].as_str());
                let Some(name) = name else { return };
                let mark = mark_of(request.method, body);
                let (group, plural, namespace) = (target.group, target.plural, target.namespace);
                self.0.written(group, plural, namespace, name, mark);
            }
            (
                Call::UpdateStatus { descriptor, .. } | Call::UpdateFinalizers { descriptor, .. },
                Answer::Written(object),
            ) => {
                let meta = &object["metadata"];
                let text = |field: &str| meta[field].as_str().unwrap_or_default();
                let (group, plural) = (&descriptor.group, &descriptor.plural);
                let mark = Mark::Version(text("resourceVersion").to_string());
                self.0
                    .written(group, plural, text("namespace"), text("name"), mark);
            }
            _ => {}
        }
    }
}

/// What a successful write left: a deletion is done once the object is
/// gone, unless finalizers keep it (the answer is then the object, marked
/// for deletion, at its new version).
fn mark_of(method: Method, body: &Value) -> Mark {
    let meta = &body["metadata"];
    let version = meta["resourceVersion"].as_str();
    let kept = meta["deletionTimestamp"].is_string();
    match (method, version) {
        (Method::Delete, Some(version)) if kept => Mark::Version(version.to_string()),
        (Method::Delete, _) => Mark::Deleted,
        (_, Some(version)) => Mark::Version(version.to_string()),
        (_, None) => Mark::Deleted,
    }
}

/// The object a request path names.
#[derive(Debug, PartialEq)]
struct Target<'a> {
    group: &'a str,
    plural: &'a str,
    namespace: &'a str,
    name: Option<&'a str>,
}

impl<'a> Target<'a> {
    /// `/api/V/..` or `/apis/G/V/..`, then `[namespaces/NS/]PLURAL[/NAME[/SUB]]`.
    fn of(path: &'a str) -> Option<Self> {
        let path = path.split('?').next()?;
        let mut parts = path.split('/').filter(|s| !s.is_empty()).peekable();
        let group = match parts.next()? {
            "api" => "",
            "apis" => parts.next()?,
            _ => return None,
        };
        parts.next()?; // the version
        let mut namespace = "";
        let mut plural = parts.next()?;
        if plural == "namespaces" && parts.peek().is_some() {
            namespace = parts.next()?;
            match parts.next() {
                Some(p) => plural = p,
                // A Namespace object itself.
                None => return Some(Self::named(group, plural, "", Some(namespace))),
            }
        }
        Some(Self::named(group, plural, namespace, parts.next()))
    }

    fn named(group: &'a str, plural: &'a str, namespace: &'a str, name: Option<&'a str>) -> Self {
        Self {
            group,
            plural,
            namespace,
            name,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_path_names_its_group_kind_namespace_and_object() {
        let t = Target::of("/api/v1/namespaces/dev/configmaps/cm?fieldManager=x").unwrap();
        assert_eq!(t, Target::named("", "configmaps", "dev", Some("cm")));
        let t = Target::of("/apis/example.com/v1/namespaces/dev/widgets/w/status").unwrap();
        assert_eq!(t, Target::named("example.com", "widgets", "dev", Some("w")));
        let t = Target::of("/apis/example.com/v1/racks").unwrap();
        assert_eq!(t, Target::named("example.com", "racks", "", None));
        assert_eq!(Target::of("/version"), None);
    }

    #[test]
    fn a_delete_is_done_when_the_object_is_gone_unless_finalizers_keep_it() {
        assert_eq!(
            mark_of(Method::Delete, &json!({"kind": "Status"})),
            Mark::Deleted
        );
        let kept = json!({"metadata": {"resourceVersion": "9", "deletionTimestamp": "t"}});
        assert_eq!(mark_of(Method::Delete, &kept), Mark::Version("9".into()));
        let put = json!({"metadata": {"resourceVersion": "7"}});
        assert_eq!(mark_of(Method::Put, &put), Mark::Version("7".into()));
    }
}
