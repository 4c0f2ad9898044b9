//! One object converted between two versions of its kind, losslessly:
//! only `apiVersion`, `spec.config` and the library's own annotation
//! change. What the down-conversion cannot express is kept in that
//! annotation (the Kubernetes API conventions' way to round-trip a field
//! an older version lacks) and restored on the way up.

use super::{merge::three_way, old::OldVersion};
use crate::domain::names::Names;
use blue_kubernetes_client::ResourceDescriptor;
use serde_json::{json, Map, Value};

/// A kind with the versions it serves, erased: what conversion needs.
#[derive(Clone, Debug)]
pub(crate) struct VersionedKind {
    /// The kind, at its stored version.
    pub(crate) descriptor: ResourceDescriptor,
    pub(crate) old: Vec<OldVersion>,
}

impl VersionedKind {
    /// Whether the kind serves `version`.
    pub(crate) fn serves(&self, version: &str) -> bool {
        version == self.descriptor.version || self.old_version(version).is_some()
    }

    fn old_version(&self, version: &str) -> Option<&OldVersion> {
        self.old.iter().find(|o| o.name == version)
    }

    /// `object`, an object of this kind at version `from` (served), as
    /// version `to` (served). Never fails: a config its version's type
    /// does not decode (one the controller reports Invalid) passes
    /// through unchanged rather than failing every list of the kind.
    pub(crate) fn convert(&self, object: &mut Value, from: &str, to: &str, names: &Names) {
        let api_version = format!("{}/{to}", self.descriptor.group);
        object["apiVersion"] = Value::String(api_version);
        if from == to {
            return;
        }
        let key = names.stored_config_annotation();
        let kept = take_annotation(object, &key);
        let Some(Value::Object(config)) = object.pointer_mut("/spec/config") else {
            return;
        };
        let (reserved, plain): (Map<String, Value>, Map<String, Value>) = std::mem::take(config)
            .into_iter()
            .partition(|(k, _)| k == "profile" || *k == names.destroy_protection_key);
        let stored = self.up(Value::Object(plain), from, kept.as_deref());
        let (converted, keep) = self.down(stored, to);
        let mut converted = match converted {
            Value::Object(map) => map,
            // A config type that is not a struct has no CRD: not reached.
            _ => Map::new(),
        };
        converted.extend(reserved);
        *config = converted;
        if let Some(keep) = keep {
            put_annotation(object, key, keep);
        }
    }

    /// The config at the stored version, restoring what a down-conversion
    /// to `from` kept in the annotation and the old client left alone.
    fn up(&self, config: Value, from: &str, kept: Option<&str>) -> Value {
        let Some(old) = self.old_version(from) else {
            return config;
        };
        let Ok(ours) = (old.up)(&config) else {
            return config;
        };
        let theirs = kept.and_then(|kept| self.kept_config(kept, from));
        let Some(theirs) = theirs else {
            return ours;
        };
        match (old.down)(&theirs).and_then(|read| (old.up)(&read)) {
            Ok(base) => three_way(&base, &theirs, &ours),
            Err(_) => ours,
        }
    }

    /// The config at `to`, and what the annotation must keep when `to`
    /// cannot express all of it.
    fn down(&self, stored: Value, to: &str) -> (Value, Option<String>) {
        let Some(old) = self.old_version(to) else {
            return (stored, None);
        };
        let Ok(converted) = (old.down)(&stored) else {
            return (stored, None);
        };
        let lossless = (old.up)(&converted).is_ok_and(|back| back == stored);
        let keep = (!lossless).then(|| {
            json!({"storedVersion": self.descriptor.version, "servedVersion": to, "config": stored})
                .to_string()
        });
        (converted, keep)
    }

    /// The stored config an annotation kept, if it was kept for a
    /// down-conversion to `from` of the current stored version (another
    /// one's, or a hand-written value, is ignored).
    fn kept_config(&self, kept: &str, from: &str) -> Option<Value> {
        let mut kept: Value = serde_json::from_str(kept).ok()?;
        let fits = kept["storedVersion"] == self.descriptor.version.as_str()
            && kept["servedVersion"] == from
            && kept["config"].is_object();
        fits.then(|| kept["config"].take())
    }
}

fn take_annotation(object: &mut Value, key: &str) -> Option<String> {
    let annotations = object
        .pointer_mut("/metadata/annotations")?
        .as_object_mut()?;
    let value = annotations.remove(key)?;
    if annotations.is_empty() {
        if let Some(metadata) = object["metadata"].as_object_mut() {
            metadata.remove("annotations");
        }
    }
    value.as_str().map(str::to_string)
}

fn put_annotation(object: &mut Value, key: String, value: String) {
    if !object["metadata"].is_object() {
        object["metadata"] = json!({});
    }
    let metadata = &mut object["metadata"];
    if !metadata["annotations"].is_object() {
        metadata["annotations"] = json!({});
    }
    metadata["annotations"][key] = Value::String(value);
}
