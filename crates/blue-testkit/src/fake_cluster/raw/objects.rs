//! What the API server does with one raw request on an object or a
//! collection: read, list, create, replace, merge-patch, apply, delete,
//! with resourceVersion and uid preconditions.
//!
//! A server-side apply is approximated: it creates the object if absent and
//! otherwise merges the applied fields like a merge patch. The fake keeps no
//! field ownership, so it never answers an apply with a conflict and never
//! removes a field a manager stopped applying.

use super::paths::{resolve, Resolved, Target};
use super::{patch, secrets, Refused};
use crate::fake_cluster::metadata::meta_str;
use crate::fake_cluster::{Operation, State};
use blue_kubernetes_client::{Method, PatchType};
use serde_json::{json, Value};

/// The fault-injection operation of a request: an object path or a
/// collection, and the method.
pub(super) fn operation(method: Method, target: &Target) -> Operation {
    match (method, target.name.is_some()) {
        (Method::Get, true) => Operation::RawGet,
        (Method::Get, false) => Operation::RawList,
        (Method::Post, _) => Operation::RawCreate,
        (Method::Put, _) => Operation::RawReplace,
        (Method::Patch(_), _) => Operation::RawPatch,
        (Method::Delete, _) => Operation::RawDelete,
    }
}

/// The answer to `method` on `target`: the success status and body.
pub(crate) fn answer(
    state: &mut State,
    method: Method,
    target: &Target,
    body: Option<&Value>,
    now: &str,
) -> Result<(u16, Value), Refused> {
    let body_kind = body.and_then(|b| b.get("kind")).and_then(Value::as_str);
    let resolved = resolve(target, state.extras.served(), body_kind);
    if !resolved.fits(target) {
        return Err(Refused::not_found());
    }
    match (&target.subresource, target.name.as_deref()) {
        (None, None) => collection(state, method, target, &resolved, body, now),
        (None, Some(name)) => item(state, method, target, &resolved, name, body, now),
        (Some(sub), Some(name)) if sub == "status" => {
            status(state, method, target, &resolved, name, body)
        }
        _ => Err(Refused::not_found()),
    }
}

fn namespace(target: &Target) -> &str {
    target.namespace.as_deref().unwrap_or_default()
}

fn collection(
    state: &mut State,
    method: Method,
    target: &Target,
    resolved: &Resolved,
    body: Option<&Value>,
    now: &str,
) -> Result<(u16, Value), Refused> {
    let d = &resolved.descriptor;
    match method {
        Method::Get => {
            let items: Vec<Value> = state
                .store
                .list(d, namespace(target))
                .into_iter()
                .filter(|object| target.selector.matches(object))
                .collect();
            Ok((
                200,
                json!({
                    "apiVersion": d.api_version(),
                    "kind": format!("{}List", d.kind),
                    "metadata": {"resourceVersion": state.store.revision().to_string()},
                    "items": items,
                }),
            ))
        }
        Method::Post => create(state, target, resolved, body, now),
        _ => Err(Refused::method_not_allowed()),
    }
}

fn create(
    state: &mut State,
    target: &Target,
    resolved: &Resolved,
    body: Option<&Value>,
    now: &str,
) -> Result<(u16, Value), Refused> {
    let d = &resolved.descriptor;
    let mut object = body
        .filter(|b| b.is_object())
        .cloned()
        .ok_or_else(Refused::bad_request)?;
    if !object.get("metadata").is_some_and(Value::is_object) {
        object["metadata"] = json!({});
    }
    if let Some(ns) = &target.namespace {
        match meta_str(&object, "namespace") {
            Some(given) if !given.is_empty() && given != ns => return Err(Refused::bad_request()),
            _ => object["metadata"]["namespace"] = json!(ns),
        }
    }
    let name = match meta_str(&object, "name").filter(|n| !n.is_empty()) {
        Some(name) => name.to_owned(),
        None => {
            let prefix = meta_str(&object, "generateName")
                .filter(|p| !p.is_empty())
                .ok_or_else(Refused::invalid)?
                .to_owned();
            generated_name(state, d, namespace(target), &prefix)
        }
    };
    object["metadata"]["name"] = json!(name);
    if state.store.get(d, namespace(target), &name).is_some() {
        return Err(Refused::already_exists());
    }
    // The status subresource is not written by a create.
    if let Some(fields) = object.as_object_mut() {
        fields.remove("status");
    }
    object["apiVersion"] = json!(d.api_version());
    secrets::admit(target, &mut object)?;
    let created = state
        .store
        .create_object(d, object, now, resolved.custom)
        .map_err(Refused::of_kind)?;
    Ok((201, created))
}

/// `generateName` plus five characters, as the server picks them; taken
/// from the cluster's counter, so a test run is repeatable.
fn generated_name(
    state: &State,
    d: &blue_kubernetes_client::ResourceDescriptor,
    namespace: &str,
    prefix: &str,
) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut seed = state.store.revision() + 1;
    loop {
        let mut n = seed.wrapping_mul(2_654_435_761);
        let suffix: String = (0..5)
            .map(|_| {
                let c = ALPHABET[(n % ALPHABET.len() as u64) as usize];
                n /= ALPHABET.len() as u64;
                char::from(c)
            })
            .collect();
        let name = format!("{prefix}{suffix}");
        if state.store.get(d, namespace, &name).is_none() {
            return name;
        }
        seed += 1;
    }
}

/// `metadata.uid` and `metadata.resourceVersion` of `given`, where
/// present, must be the stored object's: else `409 Conflict`.
fn preconditions(given: &Value, stored: &Value) -> Result<(), Refused> {
    for field in ["uid", "resourceVersion"] {
        match given.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::String(v)) if Some(v.as_str()) == meta_str(stored, field) => {}
            Some(Value::String(_)) => return Err(Refused::conflict()),
            Some(_) => return Err(Refused::bad_request()),
        }
    }
    Ok(())
}

fn item(
    state: &mut State,
    method: Method,
    target: &Target,
    resolved: &Resolved,
    name: &str,
    body: Option<&Value>,
    now: &str,
) -> Result<(u16, Value), Refused> {
    let d = &resolved.descriptor;
    let ns = namespace(target);
    let stored = state.store.get(d, ns, name);
    match method {
        Method::Get => stored.map(|o| (200, o)).ok_or_else(Refused::not_found),
        Method::Post => Err(Refused::method_not_allowed()),
        Method::Delete => {
            let stored = stored.ok_or_else(Refused::not_found)?;
            let options = body.cloned().unwrap_or_else(|| json!({}));
            preconditions(&options["preconditions"], &stored)?;
            match state.store.delete(d, ns, name, now) {
                // Finalizers hold it: accepted, not yet gone.
                Some(deleting) => Ok((202, deleting)),
                None => Ok((200, stored)),
            }
        }
        Method::Patch(PatchType::Apply) if stored.is_none() => {
            if body.and_then(|b| meta_str(b, "name")) != Some(name) {
                return Err(Refused::bad_request());
            }
            let mut collection = target.clone();
            collection.name = None;
            let (_, created) = create(state, &collection, resolved, body, now)?;
            Ok((201, created))
        }
        Method::Put | Method::Patch(_) => {
            let stored = stored.ok_or_else(Refused::not_found)?;
            let mut next = written(method, body, &stored)?;
            if meta_str(&next, "name").is_some_and(|n| n != name)
                || meta_str(&next, "namespace").is_some_and(|n| n != ns && !ns.is_empty())
            {
                return Err(Refused::bad_request());
            }
            secrets::admit(target, &mut next)?;
            let edited = state.store.edit(d, ns, name, |object| *object = next);
            match edited {
                Some(Ok(object)) => Ok((200, object)),
                Some(Err(kind)) => Err(Refused::of_kind(kind)),
                None => Err(Refused::not_found()),
            }
        }
    }
}

/// The whole object a `PUT`, merge `PATCH` or apply asks for, once its
/// preconditions hold. A `PUT` without a resourceVersion is unconditional,
/// like on the real server.
fn written(method: Method, body: Option<&Value>, stored: &Value) -> Result<Value, Refused> {
    if matches!(
        method,
        Method::Patch(PatchType::Json | PatchType::Strategic)
    ) {
        return Err(Refused::unsupported_media_type());
    }
    let body = body
        .filter(|b| b.is_object())
        .ok_or_else(Refused::bad_request)?;
    preconditions(&body["metadata"], stored)?;
    match method {
        Method::Put => Ok(body.clone()),
        _ => Ok(patch::merge(stored.clone(), body)),
    }
}

/// The `status` subresource: reads the object, or writes its status only.
fn status(
    state: &mut State,
    method: Method,
    target: &Target,
    resolved: &Resolved,
    name: &str,
    body: Option<&Value>,
) -> Result<(u16, Value), Refused> {
    let d = &resolved.descriptor;
    let ns = namespace(target);
    let stored = state
        .store
        .get(d, ns, name)
        .ok_or_else(Refused::not_found)?;
    match method {
        Method::Get => Ok((200, stored)),
        Method::Put | Method::Patch(_) => {
            let next = written(method, body, &stored)?;
            // The preconditions held: the write is guarded by the stored version.
            let status = next.get("status").cloned().unwrap_or(Value::Null);
            let written = state.store.write_status(d, &stored, &status);
            written.map(|o| (200, o)).map_err(Refused::of_kind)
        }
        _ => Err(Refused::method_not_allowed()),
    }
}
