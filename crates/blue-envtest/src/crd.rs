//! Installing CRDs: once per control plane and name, CEL rules stripped
//! (Kubernetes 1.20 knows none; the controller still enforces the
//! immutability of `profile` and of the fields the package's schema
//! declares, see `ResourceSchema::immutable`, but not other CEL rules),
//! done when the API server serves the new resource.

use std::collections::HashMap;
use std::fs;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use crate::control_plane::ControlPlane;
use crate::error::{io_error, Error};
use crate::wait::{poll, Probe};

/// The CRDs installed on one control plane, by name, as installed.
#[derive(Debug, Default)]
pub(crate) struct Installed(Mutex<HashMap<String, Value>>);

/// `crd` without `x-kubernetes-validations` anywhere in it.
pub(crate) fn without_cel(crd: &Value) -> Value {
    match crd {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| *key != "x-kubernetes-validations")
                .map(|(key, value)| (key.clone(), without_cel(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_cel).collect()),
        other => other.clone(),
    }
}

impl Installed {
    /// Installs `crd` on `cp` unless this very CRD is installed already;
    /// refuses a different one of the same name.
    pub(crate) fn install(&self, cp: &ControlPlane, crd: &Value) -> Result<(), Error> {
        let crd = without_cel(crd);
        if crd["kind"] != "CustomResourceDefinition" {
            return Err(Error::InvalidCrd {
                reason: "its kind is not CustomResourceDefinition",
            });
        }
        let text = |pointer: &str| crd.pointer(pointer).and_then(Value::as_str);
        let (Some(name), Some(plural), Some(group)) = (
            text("/metadata/name"),
            text("/spec/names/plural"),
            text("/spec/group"),
        ) else {
            return Err(Error::InvalidCrd {
                reason: "it lacks metadata.name, spec.names.plural or spec.group",
            });
        };
        // Held while installing: a second test asking for the same CRD
        // waits for the first instead of racing it.
        let mut installed = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match installed.get(name) {
            Some(same) if *same == crd => return Ok(()),
            Some(_) => return Err(conflict(name)),
            None => {}
        }
        let file = cp.dir().join(format!("crd-{name}.json"));
        fs::write(&file, crd.to_string())
            .map_err(io_error(format!("writing {}", file.display())))?;
        let created = cp
            .kubectl
            .ok(&["create", "-f", &file.to_string_lossy()], None);
        if let Err(Error::Command { detail, .. }) = &created {
            if detail.contains("AlreadyExists") || detail.contains("already exists") {
                return Err(conflict(name));
            }
        }
        created?;
        wait_served(cp, name, &format!("{plural}.{group}"))?;
        installed.insert(name.to_string(), crd.clone());
        Ok(())
    }
}

fn conflict(name: &str) -> Error {
    Error::CrdConflict {
        name: name.to_string(),
    }
}

/// Waits until the CRD is Established and its resource answers a list
/// through discovery (which also refreshes kubectl's discovery cache,
/// shared with [`Envtest::client`](crate::Envtest::client)).
fn wait_served(cp: &ControlPlane, name: &str, resource: &str) -> Result<(), Error> {
    let what = format!("CRD {name} is established and served");
    poll(
        &what,
        Duration::from_secs(60),
        Duration::from_millis(200),
        || {
            let crd = cp.kubectl.ok(&["get", "crd", name, "-o", "json"], None);
            let crd: Value = crd
                .ok()
                .and_then(|json| serde_json::from_str(&json).ok())
                .unwrap_or_default();
            let conditions = crd["status"]["conditions"].as_array().cloned();
            let established = conditions
                .unwrap_or_default()
                .iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True");
            if !established {
                return Err(Probe::NotYet("not Established yet".into()));
            }
            let listed = cp
                .kubectl
                .ok(&["get", resource, "--all-namespaces", "-o", "name"], None);
            listed.map(drop).map_err(|e| Probe::NotYet(e.to_string()))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cel_rules_are_stripped_at_every_depth() {
        let crd = json!({"spec": {"versions": [{"schema": {"openAPIV3Schema": {
            "x-kubernetes-validations": [{"rule": "self == oldSelf"}],
            "properties": {"spec": {"type": "object", "x-kubernetes-validations": []}}
        }}}]}});
        let stripped = without_cel(&crd);
        assert!(!stripped.to_string().contains("x-kubernetes-validations"));
        assert_eq!(
            stripped["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"],
            json!({"type": "object"})
        );
    }
}
