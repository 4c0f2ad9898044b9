//! The Lease requests of the transport: raw GET (of one or of the
//! collection), POST and PUT on
//! `/apis/coordination.k8s.io/v1/namespaces/NS/leases[/NAME]`.

use super::stderr::{self, Subject};
use super::{fail, ok, FakeKubectl};
use blue_kubernetes_client::{Client, ErrorKind, Lease, Output, ResourceDescriptor};

const PREFIX: &str = "/apis/coordination.k8s.io/v1/namespaces/";

/// `(namespace, name)` of a Lease path; no name for the collection.
fn parse(path: &str) -> Option<(&str, Option<&str>)> {
    let segments: Vec<&str> = path.strip_prefix(PREFIX)?.split('/').collect();
    match segments.as_slice() {
        [ns, "leases"] => Some((ns, None)),
        [ns, "leases", name] => Some((ns, Some(name))),
        _ => None,
    }
}

pub(super) fn is_lease_path(path: &str) -> bool {
    parse(path).is_some()
}

fn leases() -> ResourceDescriptor {
    ResourceDescriptor::new("coordination.k8s.io", "v1", "leases", "Lease")
}

fn refused(kind: ErrorKind, namespace: &str, name: Option<&str>, verb: &str) -> Output {
    let d = leases();
    if let (ErrorKind::Other, "create", Some(name)) = (kind, verb, name) {
        return fail(format!(
            "Error from server (AlreadyExists): leases.coordination.k8s.io \"{name}\" already exists"
        ));
    }
    fail(stderr::text(
        kind,
        &Subject {
            descriptor: &d,
            namespace,
            name,
            verb,
        },
    ))
}

/// The Lease in `file`, as kubectl would send it.
fn read(file: &str) -> Result<Lease, Output> {
    let text = std::fs::read_to_string(file)
        .map_err(|_| fail(format!("error: the path \"{file}\" does not exist")))?;
    let object = serde_json::from_str(&text)
        .map_err(|_| fail(format!("error: error parsing {file}: invalid JSON")))?;
    Lease::from_object(&object, "create")
        .map_err(|_| fail("Error from server (BadRequest): the body is not a Lease".into()))
}

impl FakeKubectl {
    pub(super) async fn get_lease(&self, path: &str) -> Output {
        let Some((namespace, name)) = parse(path) else {
            return fail(stderr::no_such_path());
        };
        let Some(name) = name else {
            return self.list_leases(namespace).await;
        };
        match self.cluster.get_lease(namespace, name).await {
            Ok(Some(lease)) => ok(lease.to_object().to_string()),
            Ok(None) => refused(ErrorKind::NotFound, namespace, Some(name), "get"),
            Err(e) => refused(e.kind(), namespace, Some(name), "get"),
        }
    }

    async fn list_leases(&self, namespace: &str) -> Output {
        match self.cluster.list_leases(namespace).await {
            Ok(leases) => {
                let items: Vec<_> = leases.iter().map(Lease::to_object).collect();
                let list = serde_json::json!({
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "LeaseList",
                    "items": items,
                });
                ok(list.to_string())
            }
            Err(e) => refused(e.kind(), namespace, None, "list"),
        }
    }

    pub(super) async fn create_lease(&self, path: &str, file: &str) -> Output {
        let Some((namespace, None)) = parse(path) else {
            return fail(stderr::no_such_path());
        };
        let lease = match read(file) {
            Ok(lease) if lease.namespace == namespace => lease,
            Ok(_) => return fail("Error from server (BadRequest): namespace mismatch".into()),
            Err(out) => return out,
        };
        match self.cluster.create_lease(&lease).await {
            Ok(stored) => ok(stored.to_object().to_string()),
            Err(e) => refused(e.kind(), namespace, Some(&lease.name), "create"),
        }
    }

    pub(super) async fn replace_lease(&self, path: &str, file: &str) -> Output {
        let Some((namespace, Some(name))) = parse(path) else {
            return fail(stderr::no_such_path());
        };
        let lease =
            match read(file) {
                Ok(lease) if lease.namespace == namespace && lease.name == name => lease,
                Ok(_) => return fail(
                    "Error from server (BadRequest): the name of the object does not match the URL"
                        .into(),
                ),
                Err(out) => return out,
            };
        match self.cluster.update_lease(&lease).await {
            Ok(stored) => ok(stored.to_object().to_string()),
            Err(e) => refused(e.kind(), namespace, Some(name), "update"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_paths_name_the_namespace_and_the_lease() {
        let base = "/apis/coordination.k8s.io/v1/namespaces/ns/leases";
        assert_eq!(parse(base), Some(("ns", None)));
        assert_eq!(parse(&format!("{base}/op")), Some(("ns", Some("op"))));
        assert_eq!(
            parse("/apis/example.com/v1/namespaces/ns/widgets/a/status"),
            None
        );
    }
}
