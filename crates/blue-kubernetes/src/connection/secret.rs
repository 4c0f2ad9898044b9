//! The connection Secret as the API server stores it: its path, the body
//! the controller writes, and what it reads back. Values are base64 in
//! `data`, as core/v1 Secrets keep them.

use super::error::ConnectionError;
use crate::cached::ObjectStore;
use crate::domain::names::MANAGED_BY;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use blue_kubernetes_client::{ApiPath, ApiRequest, Client, ErrorKind, Method, ResourceDescriptor};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Connection values by key.
pub(crate) type Data = BTreeMap<String, String>;

/// Where the Secret lives and whom it belongs to.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub(crate) namespace: String,
    pub(crate) name: String,
    owner: Value,
    owner_uid: String,
}

impl Target {
    pub(crate) fn new(descriptor: &ResourceDescriptor, resource: &Value, name: String) -> Self {
        let meta = &resource["metadata"];
        let owner_uid = meta["uid"].as_str().unwrap_or_default().to_string();
        let owner = json!({
            "apiVersion": format!("{}/{}", descriptor.group, descriptor.version),
            "kind": descriptor.kind,
            "name": meta["name"],
            "uid": owner_uid,
            "controller": true,
            "blockOwnerDeletion": true,
        });
        Self {
            namespace: meta["namespace"].as_str().unwrap_or_default().to_string(),
            name,
            owner,
            owner_uid,
        }
    }

    pub(crate) fn owner_uid(&self) -> &str {
        &self.owner_uid
    }

    pub(crate) fn item(&self) -> Result<ApiPath, ConnectionError> {
        ApiPath::namespaced("", "v1", &self.namespace, "secrets", Some(&self.name), None)
            .map_err(|_| ConnectionError::InvalidName)
    }

    pub(crate) fn collection(&self) -> Result<ApiPath, ConnectionError> {
        ApiPath::namespaced("", "v1", &self.namespace, "secrets", None, None)
            .map_err(|_| ConnectionError::InvalidName)
    }

    /// The Secret holding `data`; `resource_version` guards a replace.
    pub(crate) fn body(&self, data: &Data, resource_version: Option<&str>) -> Value {
        let encoded: Map<String, Value> = data
            .iter()
            .map(|(k, v)| (k.clone(), json!(STANDARD.encode(v))))
            .collect();
        let mut metadata = json!({
            "name": self.name,
            "namespace": self.namespace,
            "labels": {MANAGED_BY.0: MANAGED_BY.1},
            "ownerReferences": [self.owner],
        });
        if let Some(version) = resource_version {
            metadata["resourceVersion"] = json!(version);
        }
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": metadata,
            "type": "Opaque",
            "data": encoded,
        })
    }
}

/// A stored Secret as read.
#[derive(Clone, Debug)]
pub(crate) struct Stored {
    pub(crate) resource_version: String,
    pub(crate) data: Data,
}

/// Reads a stored Secret: ours (owned by `owner_uid`), or
/// [`ConnectionError::NotOurs`]. Undecodable values read as absent, so a
/// corrupted key is rewritten rather than trusted.
fn read(secret: &Value, owner_uid: &str) -> Result<Stored, ConnectionError> {
    let ours = secret["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|refs| refs.iter().any(|r| r["uid"] == owner_uid));
    if !ours {
        return Err(ConnectionError::NotOurs);
    }
    let data = secret["data"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            let bytes = STANDARD.decode(v.as_str()?).ok()?;
            Some((k.clone(), String::from_utf8(bytes).ok()?))
        })
        .collect();
    Ok(Stored {
        resource_version: secret["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        data,
    })
}

/// A Secret data key: `[-._a-zA-Z0-9]+`, at most 253 characters.
pub(crate) fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 253
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The Secret as stored, if there is one; read through the controller's
/// cache of connection Secrets, which waits for this process's own writes.
pub(super) async fn fetch(
    client: &dyn Client,
    objects: &ObjectStore,
    target: &Target,
) -> Result<Option<Stored>, ConnectionError> {
    target.item()?; // the name is one
    let secrets = ResourceDescriptor::new("", "v1", "secrets", "Secret");
    let (namespace, name) = (&target.namespace, &target.name);
    match objects.read(client, &secrets, namespace, name).await {
        Ok(Some(body)) => read(&body, target.owner_uid()).map(Some),
        Ok(None) => Ok(None),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Creates (no Secret) or replaces (guarded by the version read) the
/// Secret with `data`; false on a lost race.
pub(super) async fn replace(
    client: &dyn Client,
    target: &Target,
    stored: Option<&Stored>,
    data: &Data,
) -> Result<bool, ConnectionError> {
    let request = match stored {
        None => {
            ApiRequest::new(Method::Post, target.collection()?).with_body(target.body(data, None))
        }
        Some(s) => ApiRequest::new(Method::Put, target.item()?)
            .with_body(target.body(data, Some(&s.resource_version))),
    };
    match client.send_raw(request).await {
        Ok(_) => Ok(true),
        Err(e @ blue_kubernetes_client::Error::Fenced { .. }) => Err(e.into()),
        Err(e) if matches!(e.kind(), ErrorKind::Conflict | ErrorKind::NotFound) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        let d = ResourceDescriptor::new("db.example.com", "v1", "databases", "Database");
        let resource = json!({"metadata": {"name": "app", "namespace": "dev", "uid": "u-1"}});
        Target::new(&d, &resource, "app-connection".into())
    }

    #[test]
    fn the_secret_is_owned_labelled_and_base64_encoded() {
        let data = Data::from([("password".to_string(), "pw".to_string())]);
        let body = target().body(&data, Some("7"));
        assert_eq!(body["data"]["password"], "cHc=");
        assert_eq!(body["metadata"]["resourceVersion"], "7");
        assert_eq!(body["metadata"]["labels"][MANAGED_BY.0], MANAGED_BY.1);
        let owner = &body["metadata"]["ownerReferences"][0];
        assert_eq!(owner["uid"], "u-1");
        assert_eq!(owner["kind"], "Database");
        assert_eq!(owner["apiVersion"], "db.example.com/v1");
        assert_eq!(owner["controller"], true);
    }

    #[test]
    fn reading_back_decodes_ours_and_refuses_anyone_elses() {
        let data = Data::from([("user".to_string(), "app".to_string())]);
        let mut stored = target().body(&data, None);
        stored["metadata"]["resourceVersion"] = json!("3");
        stored["data"]["broken"] = json!("%%%");
        let read_back = read(&stored, "u-1").unwrap();
        assert_eq!(read_back.data, data, "the undecodable key reads as absent");
        assert_eq!(read_back.resource_version, "3");
        assert!(matches!(
            read(&stored, "u-2"),
            Err(ConnectionError::NotOurs)
        ));
    }

    #[test]
    fn keys_are_what_a_secret_accepts() {
        assert!(valid_key("password") && valid_key("db.host") && valid_key("a_b-c"));
        assert!(!valid_key("") && !valid_key("a/b") && !valid_key("pass word"));
    }
}
