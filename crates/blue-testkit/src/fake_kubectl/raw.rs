//! The raw API paths the transport uses beside resources: discovery,
//! access reviews and Events.

use super::{fail, ok, pretty, stderr, FakeKubectl};
use blue_kubernetes_client::{AccessCheck, Client, ErrorKind, Output};
use serde_json::{json, Value};

const ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

/// `(namespace, name)` of `/api/v1/namespaces/NS/events[/NAME]`.
pub(super) fn event_path(path: &str) -> Option<(String, Option<String>)> {
    let segments: Vec<&str> = path
        .strip_prefix("/api/v1/namespaces/")?
        .split('/')
        .collect();
    match segments.as_slice() {
        [ns, "events"] => Some(((*ns).into(), None)),
        [ns, "events", name] => Some(((*ns).into(), Some((*name).into()))),
        _ => None,
    }
}

impl FakeKubectl {
    pub(super) async fn raw_get(&self, path: &str) -> Output {
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let (group, version) = match segments.as_slice() {
            ["api", version] => ("", *version),
            ["apis", group, version] => (*group, *version),
            _ => return fail(stderr::no_such_path()),
        };
        match self.cluster.server_resources(group, version).await {
            Ok(Some(resources)) => ok(pretty(&json!({
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": if group.is_empty() { version.to_string() } else { format!("{group}/{version}") },
                "resources": resources,
            }))),
            Ok(None) => fail(stderr::no_such_path()),
            Err(_) => fail(stderr::unavailable()),
        }
    }

    pub(super) async fn raw_write(&self, path: &str, file: &str, create: bool) -> Output {
        let Ok(text) = std::fs::read_to_string(file) else {
            return fail(format!("error: the path \"{file}\" does not exist"));
        };
        let Ok(body) = serde_json::from_str::<Value>(&text) else {
            return fail(format!("error: error parsing {file}: invalid JSON"));
        };
        if create && path == ACCESS_REVIEWS {
            let a = &body["spec"]["resourceAttributes"];
            let s = |k: &str| a[k].as_str().unwrap_or_default().to_string();
            let check = AccessCheck::new(s("namespace"), s("verb"), s("group"), s("resource"))
                .with_subresource(s("subresource"));
            return match self.cluster.can_i(&check).await {
                Ok(allowed) => {
                    let mut review = body.clone();
                    review["status"] = json!({"allowed": allowed});
                    ok(pretty(&review))
                }
                Err(_) => fail(stderr::unavailable()),
            };
        }
        let (namespace, name) = match event_path(path) {
            Some((ns, name)) if create == name.is_none() => (ns, name),
            _ => return fail(stderr::no_such_path()),
        };
        if name.is_some_and(|n| body["metadata"]["name"] != n.as_str()) {
            return fail("Error from server (BadRequest): the name of the object does not match the name on the URL".into());
        }
        let written = match create {
            true => self.cluster.create_event(&namespace, &body).await,
            false => self.cluster.update_event(&namespace, &body).await,
        };
        match written {
            Ok(event) => ok(pretty(&event)),
            Err(e) => fail(match e.kind() {
                ErrorKind::Unavailable => stderr::unavailable(),
                kind => format!(
                    "Error from server ({}): events \"{}\"",
                    reason(kind),
                    body["metadata"]["name"]
                ),
            }),
        }
    }
}

/// The API server's reason for `kind`, as kubectl prints it.
fn reason(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Conflict => "AlreadyExists",
        ErrorKind::NotFound => "NotFound",
        ErrorKind::Forbidden => "Forbidden",
        ErrorKind::Unauthorized => "Unauthorized",
        ErrorKind::Invalid => "Invalid",
        ErrorKind::Timeout => "Timeout",
        _ => "InternalError",
    }
}
