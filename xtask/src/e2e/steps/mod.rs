//! The e2e checks, in order. Later checks build on earlier ones (one
//! long-lived resource, `alpha`, goes through most of its lifecycle), so a
//! failure can cascade; each check still runs and reports on its own.

mod basics;
mod deletion;
mod drift;
mod failover;
mod in_cluster;
mod observability;
mod transport;
mod watch;

use anyhow::{ensure, Context, Result};
use serde_json::{json, Value};

use crate::cluster::manifests::{manifest, FINALIZER, OWNER_ANNOTATION, REQUEST_ANNOTATION};
use crate::support::interrupt;
use crate::support::kube::LCM;
use crate::support::suite::Suite;
use crate::support::wait::{eventually, DEADLINE};
use crate::world::{condition, phase, World};

type Check = fn(&mut World<'_>) -> Result<()>;

/// Name, resource to show on failure, check.
const CHECKS: &[(&str, Option<&str>, Check)] = &[
    (
        "crd-rejects-invalid-config",
        None,
        basics::crd_rejects_invalid_config,
    ),
    (
        "initial-convergence",
        Some("alpha"),
        basics::initial_convergence,
    ),
    (
        "finalizer-present",
        Some("alpha"),
        basics::finalizer_present,
    ),
    (
        "kubectl-wait-ready",
        Some("bravo"),
        basics::kubectl_wait_ready,
    ),
    (
        "profile-immutable",
        Some("alpha"),
        basics::profile_immutable,
    ),
    ("config-update", Some("alpha"), basics::config_update),
    ("request-burst", Some("alpha"), basics::request_burst),
    ("drift-repair", Some("alpha"), drift::drift_repair),
    ("stop-start", Some("alpha"), drift::stop_start),
    ("suspend-resume", Some("alpha"), drift::suspend_resume),
    (
        "ownership-conflict",
        Some("charlie"),
        drift::ownership_conflict,
    ),
    (
        "failure-explained",
        Some("charlie"),
        observability::failure_explained,
    ),
    (
        "controller-restart",
        Some("alpha"),
        drift::controller_restart,
    ),
    ("metrics-scrape", None, observability::metrics_scrape),
    (
        "proxy-socket-is-private",
        None,
        transport::proxy_socket_is_private,
    ),
    (
        "proxy-restarted-after-kill",
        Some("alpha"),
        transport::proxy_restarted_after_kill,
    ),
    (
        "proxy-dies-with-a-killed-operator",
        Some("alpha"),
        transport::proxy_dies_with_a_killed_operator,
    ),
    (
        "watch-edit-handled-without-polling",
        Some("golf"),
        watch::edit_handled_without_polling,
    ),
    (
        "watch-proxy-killed-loses-nothing",
        Some("hotel"),
        watch::proxy_killed_mid_watch_loses_nothing,
    ),
    (
        "watch-api-server-restart-loses-nothing",
        Some("india"),
        watch::api_server_restart_loses_nothing,
    ),
    (
        "watch-only-the-managed-namespaces",
        None,
        watch::only_the_managed_namespaces,
    ),
    (
        "kubectl-transport-smoke",
        Some("foxtrot"),
        transport::kubectl_transport_smoke,
    ),
    (
        "destroy-blocked-then-destroyed",
        Some("delta"),
        deletion::destroy_blocked_then_destroyed,
    ),
    (
        "retain-keeps-configmap",
        Some("alpha"),
        deletion::retain_keeps_configmap,
    ),
    (
        "preflight-unknown-context",
        None,
        observability::preflight_unknown_context,
    ),
    (
        "preflight-missing-crd",
        None,
        observability::preflight_missing_crd,
    ),
    (
        "preflight-wrong-version",
        None,
        observability::preflight_wrong_version,
    ),
    (
        "preflight-missing-status-rbac",
        None,
        observability::preflight_missing_status_rbac,
    ),
    (
        "in-cluster-token-rotation",
        Some("echo"),
        in_cluster::in_cluster_token_rotation,
    ),
    ("leader-failover", Some("ha-0"), failover::leader_failover),
];

/// Runs every check, printing diagnostics after each failure. A check that
/// left no operator running (e.g. a failed restart) gets it restarted, so
/// one failure does not time out every later check.
pub fn run_all(world: &mut World<'_>, suite: &mut Suite) {
    for (name, resource, check) in CHECKS {
        if interrupt::requested() {
            suite.check(name, || Ok(()));
            continue;
        }
        if !suite.check(name, || check(world)) && !interrupt::requested() {
            world.diagnose(*resource);
        }
        if interrupt::requested() {
            continue;
        }
        if let Err(err) = world.ensure_operator() {
            println!("  (restarting the operator failed: {err:#})");
        }
    }
}

/// The data `alpha` holds after `config-update`.
fn alpha_data() -> Value {
    json!({"greeting": "bonjour", "extra": "1"})
}

/// The resource, which must exist.
fn get(w: &World<'_>, name: &str) -> Result<Value> {
    w.kube
        .get(LCM, name)?
        .with_context(|| format!("localconfigmap {name} does not exist"))
}

/// The ConfigMap, if it exists.
fn config_map(w: &World<'_>, name: &str) -> Result<Option<Value>> {
    w.kube.get("configmap", name)
}

/// A ConfigMap's data (`{}` when it has none).
fn data(cm: &Value) -> Value {
    match cm.get("data") {
        Some(d) if d.is_object() => d.clone(),
        _ => json!({}),
    }
}

/// Desired state handled and converged: phase Ready, `Ready=True/Converged`,
/// `observedGeneration == generation` and the request token acknowledged.
fn check_ready(r: &Value) -> Result<()> {
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
    check_acknowledged(r)
}

/// `observedGeneration == generation` and the request token handled.
fn check_acknowledged(r: &Value) -> Result<()> {
    let generation = &r["metadata"]["generation"];
    let observed = &r["status"]["observedGeneration"];
    ensure!(
        observed == generation,
        "observedGeneration {observed} != generation {generation}"
    );
    let token = r["metadata"]["annotations"][REQUEST_ANNOTATION]
        .as_str()
        .unwrap_or("");
    let handled = r["status"]["lastHandledRequest"].as_str().unwrap_or("");
    ensure!(
        token == handled,
        "lastHandledRequest {handled:?} != annotation {token:?}"
    );
    Ok(())
}

/// Waits until the resource is Ready for its current generation.
fn wait_ready(w: &World<'_>, name: &str) -> Result<Value> {
    eventually(&format!("{name} Ready"), DEADLINE, || {
        let r = get(w, name)?;
        check_ready(&r)?;
        Ok(r)
    })
}

/// Waits for `phase` with the Ready condition's `reason`, for the current
/// generation.
fn wait_phase(w: &World<'_>, name: &str, want: &str, reason: &str) -> Result<Value> {
    eventually(&format!("{name} {want}/{reason}"), DEADLINE, || {
        let r = get(w, name)?;
        let got = condition(&r, "Ready").map(|c| c["reason"].clone());
        ensure!(
            phase(&r) == want && got.as_ref().is_some_and(|g| g == reason),
            "phase is {:?}, Ready reason {}",
            phase(&r),
            got.unwrap_or(Value::Null)
        );
        check_acknowledged(&r)?;
        Ok(r)
    })
}

/// Waits until ConfigMap `name` exists with exactly `expected` data.
fn wait_data(w: &World<'_>, name: &str, expected: &Value) -> Result<Value> {
    eventually(
        &format!("configmap {name} data {expected}"),
        DEADLINE,
        || {
            let cm = config_map(w, name)?.with_context(|| format!("configmap {name} is absent"))?;
            ensure!(data(&cm) == *expected, "data is {}", data(&cm));
            Ok(cm)
        },
    )
}

/// Edits the ConfigMap behind the operator's back: one changed and one
/// added key.
fn tamper(w: &World<'_>, name: &str) -> Result<()> {
    w.kube.merge_patch(
        "configmap",
        name,
        &json!({"data": {"greeting": "tampered", "intruder": "x"}}),
    )
}

/// The resource's UID.
fn uid(r: &Value) -> Result<String> {
    r["metadata"]["uid"]
        .as_str()
        .map(str::to_string)
        .context("resource has no uid")
}

/// The owner annotation of a ConfigMap.
fn owner(cm: &Value) -> &str {
    cm["metadata"]["annotations"][OWNER_ANNOTATION]
        .as_str()
        .unwrap_or("")
}
