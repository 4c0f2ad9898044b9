//! Deletion: Destroy blocked by protection then destroying, Retain keeping.

use anyhow::{ensure, Context, Result};
use serde_json::json;

use crate::support::manifests::DESTROY_PROTECTION_KEY;

use super::{
    alpha_data, config_map, data, ensure_stalled, eventually, get, manifest, owner_uid, patch_spec,
    wait_data, wait_gone_with_config_map, wait_phase, wait_ready, DEADLINE, LCM,
};

/// Deleting a Destroy resource with the destroy-protection key is Blocked and
/// keeps the ConfigMap; lifting the protection deletes both.
#[test]
fn destroy_blocked_then_destroyed() -> Result<()> {
    super::check(Some("delta"), super::nothing, |w| {
        w.kube.create(&manifest(
            "delta",
            json!({
                "reconcileInterval": "2s",
                "deletionPolicy": "Destroy",
                "config": {DESTROY_PROTECTION_KEY: true, "data": {"k": "v"}}
            }),
        ))?;
        wait_ready(w, "delta")?;
        wait_data(w, "delta", &json!({"k": "v"}))?;

        w.kube.delete(LCM, "delta")?;
        let r = wait_phase(w, "delta", "Blocked", "DestructionProtected")?;
        ensure_stalled(&r)?;
        ensure!(
            r["status"]["deletionObserved"] == true,
            "deletionObserved is {}",
            r["status"]["deletionObserved"]
        );
        let kept = config_map(w, "delta")?.is_some();
        ensure!(kept, "the protected configmap was deleted");

        let unprotected = json!({"config": {DESTROY_PROTECTION_KEY: false}});
        patch_spec(w, "delta", unprotected)?;
        wait_gone_with_config_map(w, "delta")
    })
}

/// Deleting a Retain resource removes only the finalizer: the ConfigMap
/// stays, data and owner annotation intact.
#[test]
fn retain_keeps_configmap() -> Result<()> {
    super::check(Some("alpha"), super::alpha, |w| {
        let uid = super::uid(&get(w, "alpha")?)?;
        w.kube.delete(LCM, "alpha")?;
        eventually("alpha gone", DEADLINE, || {
            ensure!(w.kube.get(LCM, "alpha")?.is_none(), "alpha still exists");
            Ok(())
        })?;
        let cm = config_map(w, "alpha")?.context("the retained configmap is gone")?;
        ensure!(data(&cm) == alpha_data(), "retained data is {}", data(&cm));
        let owned = owner_uid(&cm) == uid;
        ensure!(owned, "retained configmap lost its owner annotation");
        Ok(())
    })
}
