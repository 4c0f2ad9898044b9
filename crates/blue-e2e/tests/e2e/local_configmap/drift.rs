//! Drift, stop/start, suspend/resume, ownership conflicts and restarts.

use anyhow::{bail, ensure, Context, Result};
use serde_json::json;
use std::time::{Duration, SystemTime};

use super::{
    alpha_data, condition, config_map, data, eventually, get, manifest, owner_uid, patch_spec,
    phase, tamper, uid, wait_data, wait_phase, wait_ready, World, DEADLINE,
};

#[test]
fn drift_repair() -> Result<()> {
    super::check(Some("alpha"), super::alpha, |w| {
        tamper(w, "alpha")?;
        wait_data(w, "alpha", &alpha_data()).map(drop)
    })
}

/// `state: stopped` keeps the (owned) ConfigMap but empties it; `running`
/// restores the data.
#[test]
fn stop_start() -> Result<()> {
    super::check(Some("alpha"), super::alpha, |w| {
        let r = get(w, "alpha")?;
        patch_spec(w, "alpha", json!({"state": "stopped"}))?;
        let cm = wait_data(w, "alpha", &json!({}))?;
        let owned = owner_uid(&cm) == uid(&r)?;
        ensure!(owned, "stopped configmap lost its owner");
        wait_ready(w, "alpha")?;
        patch_spec(w, "alpha", json!({"state": "running"}))?;
        wait_data(w, "alpha", &alpha_data())?;
        wait_ready(w, "alpha").map(drop)
    })
}

/// Suspended: drift is left alone (while another resource, `bravo`, shows
/// the operator repairing drift and two intervals passing); resumed: repaired.
#[test]
fn suspend_resume() -> Result<()> {
    super::check(Some("alpha"), super::alpha_and_bravo, |w| {
        patch_spec(w, "alpha", json!({"suspend": true}))?;
        wait_phase(w, "alpha", "Suspended", "Suspended")?;

        let tampered_at = SystemTime::now();
        tamper(w, "alpha")?;
        tamper(w, "bravo")?;
        // bravo's interval is 2 s: once it was repaired and checked again more
        // than two intervals after the tampering, alpha would have been too.
        let what = "bravo repaired and rechecked after two intervals";
        eventually(what, DEADLINE, || {
            let cm = config_map(w, "bravo")?.context("configmap bravo is absent")?;
            let repaired = data(&cm) == json!({"witness": "1"});
            ensure!(repaired, "bravo not repaired yet");
            let r = get(w, "bravo")?;
            let last = r["status"]["lastReconcileTime"]
                .as_str()
                .and_then(|t| humantime::parse_rfc3339(t).ok())
                .context("bravo has no lastReconcileTime")?;
            let after = last.duration_since(tampered_at).unwrap_or_default();
            ensure!(
                after >= Duration::from_millis(4_500),
                "bravo last checked {} ms after the tampering",
                after.as_millis()
            );
            Ok(())
        })?;
        let cm = config_map(w, "alpha")?.context("configmap alpha vanished")?;
        let left_alone = data(&cm)["greeting"] == "tampered";
        ensure!(left_alone, "a suspended resource's drift was repaired");
        let r = get(w, "alpha")?;
        ensure!(phase(&r) == "Suspended", "phase is {:?}", phase(&r));

        patch_spec(w, "alpha", json!({"suspend": false}))?;
        wait_data(w, "alpha", &alpha_data())?;
        wait_ready(w, "alpha").map(drop)
    })
}

/// A ConfigMap owned by someone else is never touched: the resource goes
/// Failed with a growing retryCount; once the ConfigMap is gone it recovers.
#[test]
fn ownership_conflict() -> Result<()> {
    super::check(
        Some("charlie"),
        super::nothing,
        charlie_failed_then_recovered,
    )
}

/// `charlie` goes Failed on a ConfigMap someone else owns, which stays
/// untouched, and recovers once that ConfigMap is gone.
pub(super) fn charlie_failed_then_recovered(w: &mut World) -> Result<()> {
    let theirs = json!({"theirs": "1"});
    w.kube.create(
        &json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "taken", "annotations": {crate::support::manifests::OWNER_ANNOTATION: "someone-else"}},
            "data": theirs,
        })
        .to_string(),
    )?;
    w.kube.create(&manifest(
        "charlie",
        json!({
            "reconcileInterval": "2s",
            "config": {"configMapName": "taken", "data": {"mine": "1"}}
        }),
    ))?;
    let mut first = 0;
    for at_least in [1, 2] {
        let what = format!("charlie Failed with retryCount >= {at_least}");
        let count = eventually(&what, DEADLINE, || {
            let r = get(w, "charlie")?;
            let reason = condition(&r, "Ready").map(|c| c["reason"].clone());
            let count = r["status"]["retryCount"].as_u64().unwrap_or(0);
            ensure!(
                phase(&r) == "Failed"
                    && reason.as_ref().is_some_and(|r| r == "ExecutionFailed")
                    && count >= at_least
                    && count > first,
                "phase {:?}, reason {}, retryCount {count}",
                phase(&r),
                reason.unwrap_or_default()
            );
            Ok(count)
        })?;
        first = count;
    }
    let cm = config_map(w, "taken")?.context("the foreign configmap vanished")?;
    let untouched = owner_uid(&cm) == "someone-else" && data(&cm) == theirs;
    ensure!(untouched, "the foreign configmap was modified");

    w.kube.ok(&["delete", "configmap", "taken"], None)?;
    let r = wait_ready(w, "charlie")?;
    ensure!(r["status"]["retryCount"] == 0, "retryCount not reset");
    let cm = wait_data(w, "taken", &json!({"mine": "1"}))?;
    let owned = owner_uid(&cm) == uid(&r)?;
    ensure!(owned, "recreated configmap not owned by charlie");
    Ok(())
}

/// SIGTERM drains and exits 0; drift made while the operator is down is
/// repaired by the next one.
#[test]
fn controller_restart() -> Result<()> {
    super::check(Some("alpha"), super::alpha, |w| {
        w.stop_operator_cleanly()?;
        let log = std::fs::read_to_string(w.operator_log()).unwrap_or_default();
        if !log.trim_end().ends_with("stopped") {
            bail!("the operator did not log a graceful stop");
        }
        tamper(w, "alpha")?;
        w.start_operator(&w.admin_args())?;
        wait_data(w, "alpha", &alpha_data())?;
        wait_ready(w, "alpha").map(drop)
    })
}
