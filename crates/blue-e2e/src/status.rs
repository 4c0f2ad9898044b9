//! Reading a resource's status as kubectl prints it (JSON): its phase, its
//! conditions, and whether the desired state was handled and converged.

use anyhow::{ensure, Result};
use serde_json::Value;

/// `status.phase` of a resource ("" when absent).
pub fn phase(r: &Value) -> &str {
    r["status"]["phase"].as_str().unwrap_or("")
}

/// The condition of `kind` in a resource's status.
pub fn condition<'v>(r: &'v Value, kind: &str) -> Option<&'v Value> {
    r["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

/// Desired state handled and converged: phase Ready, `Ready=True/Converged`,
/// `observedGeneration == generation` and the request token acknowledged.
pub fn check_ready(r: &Value, request: &str) -> Result<()> {
    let ready = condition(r, "Ready");
    ensure!(
        phase(r) == "Ready"
            && ready.is_some_and(|c| c["status"] == "True" && c["reason"] == "Converged"),
        "phase is {:?}, Ready condition {}",
        phase(r),
        ready.map_or("absent".into(), |c| format!(
            "{}/{}",
            c["status"], c["reason"]
        ))
    );
    check_acknowledged(r, request)
}

/// `observedGeneration == generation` and the request token (annotation
/// `request`) handled.
pub fn check_acknowledged(r: &Value, request: &str) -> Result<()> {
    let generation = &r["metadata"]["generation"];
    let observed = &r["status"]["observedGeneration"];
    ensure!(
        observed == generation,
        "observedGeneration {observed} != generation {generation}"
    );
    let token = r["metadata"]["annotations"][request].as_str().unwrap_or("");
    let handled = r["status"]["lastHandledRequest"].as_str().unwrap_or("");
    ensure!(
        token == handled,
        "lastHandledRequest {handled:?} != annotation {token:?}"
    );
    Ok(())
}
