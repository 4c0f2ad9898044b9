//! Leases through raw requests: the very Leases of the
//! [`Client`](blue_kubernetes_client::Client) face (leader election), so a
//! package that reads or takes one sees what the elector wrote.

use super::paths::Target;
use super::Refused;
use crate::fake_cluster::State;
use blue_kubernetes_client::{ErrorKind, Lease, Method};
use serde_json::{json, Value};

/// The answer to a Lease request, `None` for one the fake does not serve
/// (lists, patches, deletes).
pub(super) fn answer(
    state: &mut State,
    method: Method,
    target: &Target,
    body: Option<&Value>,
) -> Option<Result<(u16, Value), Refused>> {
    let namespace = target.namespace.as_deref()?;
    if target.subresource.is_some() {
        return Some(Err(Refused::not_found()));
    }
    let State { store, leases, .. } = state;
    let decode = |body: Option<&Value>| {
        let mut object = body.filter(|b| b.is_object()).cloned().unwrap_or_default();
        match object["metadata"].get("namespace").and_then(Value::as_str) {
            Some(given) if given != namespace => return Err(Refused::bad_request()),
            _ => object["metadata"]["namespace"] = json!(namespace),
        }
        Lease::from_object(&object, "lease").map_err(|_| Refused::bad_request())
    };
    let refused = |kind: ErrorKind| match kind {
        ErrorKind::Other => Refused::already_exists(),
        kind => Refused::of_kind(kind),
    };
    Some(match (method, target.name.as_deref()) {
        (Method::Get, Some(name)) => leases
            .get(namespace, name)
            .map(|lease| (200, lease.to_object()))
            .ok_or_else(Refused::not_found),
        (Method::Post, None) => decode(body).and_then(|lease| {
            let created = leases.create(store, &lease).map_err(refused)?;
            Ok((201, created.to_object()))
        }),
        (Method::Put, Some(name)) => decode(body).and_then(|lease| {
            if lease.name != name {
                return Err(Refused::bad_request());
            }
            if leases.get(namespace, name).is_none() {
                return Err(Refused::not_found());
            }
            // Without a resourceVersion a PUT is unconditional.
            let written = match lease.resource_version {
                None => leases.put(store, &lease),
                Some(_) => leases.update(store, &lease).map_err(refused)?,
            };
            Ok((200, written.to_object()))
        }),
        _ => return None,
    })
}
