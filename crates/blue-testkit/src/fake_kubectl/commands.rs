//! Executing one parsed kubectl command against the cluster.

use super::argv::{self, Command};
use super::stderr::{self, Subject};
use super::{fail, ok, pretty, FakeKubectl};
use blue_kubernetes_client::{Client, Error, ErrorKind, Output, PageRequest, ResourceDescriptor};
use serde_json::{json, Value};

/// The namespace a command addresses for type `d`: none (`""`) for a
/// cluster-scoped type or with `--all-namespaces`, else `-n NS` or the
/// context's namespace (`default`).
fn scope(d: &ResourceDescriptor, namespace: Option<String>, all_namespaces: bool) -> String {
    match namespace {
        _ if !d.namespaced || all_namespaces => String::new(),
        Some(namespace) => namespace,
        None => "default".into(),
    }
}

impl FakeKubectl {
    pub(super) async fn execute(&self, command: Command) -> Output {
        match command {
            Command::List {
                resource,
                namespace,
                all_namespaces,
                selector,
            } => {
                let Some(d) = self.by_name(&resource) else {
                    return fail(stderr::unknown_type(&resource));
                };
                let namespace = scope(d, namespace, all_namespaces);
                let subject = Subject {
                    descriptor: d,
                    namespace: &namespace,
                    name: None,
                    verb: "list",
                };
                let listed = match selector {
                    None => self.cluster.list_resources(d, &namespace).await,
                    Some(selector) => {
                        let page = PageRequest::first(0).with_label_selector(selector);
                        let page = self.cluster.list_page(d, &namespace, &page).await;
                        page.map(|page| page.items)
                    }
                };
                match listed {
                    // kubectl refuses a malformed selector before any request.
                    Err(e @ Error::InvalidLabelSelector { .. }) => fail(format!("error: {e}")),
                    Ok(items) => ok(pretty(&json!({
                        "apiVersion": "v1",
                        "kind": "List",
                        "items": items,
                        "metadata": {"resourceVersion": ""},
                    }))),
                    Err(e) => fail(stderr::text(e.kind(), &subject)),
                }
            }
            Command::Get {
                resource,
                name,
                namespace,
                ignore_not_found,
            } => {
                let Some(d) = self.by_name(&resource) else {
                    return fail(stderr::unknown_type(&resource));
                };
                let namespace = scope(d, namespace, false);
                let subject = Subject {
                    descriptor: d,
                    namespace: &namespace,
                    name: Some(&name),
                    verb: "get",
                };
                match self.cluster.get_resource(d, &namespace, &name).await {
                    Ok(Some(object)) => ok(pretty(&object)),
                    Ok(None) if ignore_not_found => ok(String::new()),
                    Ok(None) => fail(stderr::text(ErrorKind::NotFound, &subject)),
                    Err(e) => fail(stderr::text(e.kind(), &subject)),
                }
            }
            Command::Replace { path, file } if super::leases::is_lease_path(&path) => {
                self.replace_lease(&path, &file).await
            }
            Command::Replace { path, file } if super::raw::event_path(&path).is_some() => {
                self.raw_write(&path, &file, false).await
            }
            Command::Replace { path, file } => self.replace_status(&path, &file).await,
            Command::RawGet { path } if super::leases::is_lease_path(&path) => {
                self.get_lease(&path).await
            }
            Command::RawGet { path } => self.raw_get(&path).await,
            Command::RawCreate { path, file } if super::leases::is_lease_path(&path) => {
                self.create_lease(&path, &file).await
            }
            Command::RawCreate { path, file } => self.raw_write(&path, &file, true).await,
            Command::Patch {
                resource,
                name,
                namespace,
                patch,
            } => {
                let Some(d) = self.by_name(&resource) else {
                    return fail(stderr::unknown_type(&resource));
                };
                let namespace = scope(d, namespace, false);
                let subject = Subject {
                    descriptor: d,
                    namespace: &namespace,
                    name: Some(&name),
                    verb: "patch",
                };
                let Some((version, finalizers)) = finalizer_patch(&patch) else {
                    return fail(
                        "error: FakeKubectl supports only merge patches of metadata.finalizers"
                            .into(),
                    );
                };
                let mut target = json!({"metadata": {"name": name, "namespace": namespace}});
                if let Some(version) = version {
                    target["metadata"]["resourceVersion"] = version;
                }
                match self
                    .cluster
                    .update_finalizers(d, &target, &finalizers)
                    .await
                {
                    Ok(object) => ok(pretty(&object)),
                    Err(e) => fail(stderr::text(e.kind(), &subject)),
                }
            }
        }
    }

    async fn replace_status(&self, path: &str, file: &str) -> Output {
        let Some(p) = argv::parse_status_path(path) else {
            return fail(stderr::no_such_path());
        };
        // A namespaced type has no cluster-wide path, and the reverse.
        let Some(d) = self.types.iter().find(|d| {
            d.group == p.group
                && d.version == p.version
                && d.plural == p.plural
                && d.namespaced != p.namespace.is_empty()
        }) else {
            return fail(stderr::no_such_path());
        };
        let Ok(text) = std::fs::read_to_string(file) else {
            return fail(format!("error: the path \"{file}\" does not exist"));
        };
        let Ok(mut body) = serde_json::from_str::<Value>(&text) else {
            return fail(format!("error: error parsing {file}: invalid JSON"));
        };
        if !body.get("metadata").is_some_and(Value::is_object) {
            return fail(format!("error: error parsing {file}: no metadata object"));
        }
        if body.pointer("/metadata/namespace").is_none() && d.namespaced {
            body["metadata"]["namespace"] = json!(p.namespace);
        }
        let body_namespace = body.pointer("/metadata/namespace").and_then(Value::as_str);
        let body_name = body.pointer("/metadata/name").and_then(Value::as_str);
        if body_name != Some(p.name.as_str())
            || (d.namespaced && body_namespace != Some(p.namespace.as_str()))
        {
            return fail(format!(
                "Error from server (BadRequest): the name of the object ({}) does not match the name on the URL ({})",
                body_name.unwrap_or_default(),
                p.name
            ));
        }
        let status = body.get("status").cloned().unwrap_or(Value::Null);
        let subject = Subject {
            descriptor: d,
            namespace: &p.namespace,
            name: Some(&p.name),
            verb: "update",
        };
        match self.cluster.update_status(d, &body, &status).await {
            Ok(object) => ok(object.to_string()),
            Err(e) => fail(stderr::text(e.kind(), &subject)),
        }
    }
}

/// `{"metadata":{"resourceVersion":RV?,"finalizers":[...]|null}}` -> parts.
fn finalizer_patch(patch: &str) -> Option<(Option<Value>, Vec<String>)> {
    let value: Value = serde_json::from_str(patch).ok()?;
    let top = value.as_object()?;
    let meta = top.get("metadata")?.as_object()?;
    if top.len() != 1
        || meta
            .keys()
            .any(|k| k != "resourceVersion" && k != "finalizers")
    {
        return None;
    }
    let finalizers = match meta.get("finalizers")? {
        Value::Null => Vec::new(),
        Value::Array(items) => items
            .iter()
            .map(|f| f.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()?,
        _ => return None,
    };
    Some((meta.get("resourceVersion").cloned(), finalizers))
}
