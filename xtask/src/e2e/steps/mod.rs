//! The e2e checks, in order. Later checks build on earlier ones (one
//! long-lived resource, `alpha`, goes through most of its lifecycle), so a
//! failure can cascade; each check still runs and reports on its own.

mod basics;
mod deletion;
mod drift;
mod failover;
mod in_cluster;
mod observability;
mod sharding;
mod transport;
mod watch;

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use serde_json::{json, Value};

use crate::cluster::manifests::{manifest, owner_uid, FINALIZER, REQUEST_ANNOTATION};
use crate::support::kube::LCM;
use crate::support::suite::{checks, Suite};
use crate::support::wait::{eventually, DEADLINE};
use crate::world::{self, condition, phase, World};

type Check = fn(&mut World<'_>) -> Result<()>;

const CHECKS: &[(&str, Option<&str>, Check)] = checks! {Check:
    "crd-rejects-invalid-config" => basics::crd_rejects_invalid_config,
    "initial-convergence" on "alpha" => basics::initial_convergence,
    "finalizer-present" on "alpha" => basics::finalizer_present,
    "kubectl-wait-ready" on "bravo" => basics::kubectl_wait_ready,
    "profile-immutable" on "alpha" => basics::profile_immutable,
    "config-update" on "alpha" => basics::config_update,
    "request-burst" on "alpha" => basics::request_burst,
    "drift-repair" on "alpha" => drift::drift_repair,
    "stop-start" on "alpha" => drift::stop_start,
    "suspend-resume" on "alpha" => drift::suspend_resume,
    "ownership-conflict" on "charlie" => drift::ownership_conflict,
    "failure-explained" on "charlie" => observability::failure_explained,
    "controller-restart" on "alpha" => drift::controller_restart,
    // Before metrics-scrape, whose restart waits for /readyz (the proxy
    // checks after it need the proxy up).
    "quiet-checks-write-nothing" on "bravo" => observability::quiet_checks_write_nothing,
    "metrics-scrape" => observability::metrics_scrape,
    "proxy-socket-is-private" => transport::proxy_socket_is_private,
    "proxy-restarted-after-kill" on "alpha" => transport::proxy_restarted_after_kill,
    "proxy-dies-with-a-killed-operator" on "alpha" => transport::proxy_dies_with_a_killed_operator,
    "watch-edit-handled-without-polling" on "golf" => watch::edit_handled_without_polling,
    "watch-deleted-configmap-restored" on "golf" => watch::deleted_config_map_restored,
    "watch-proxy-killed-loses-nothing" on "hotel" => watch::proxy_killed_mid_watch_loses_nothing,
    "watch-api-server-restart-loses-nothing" on "india" => watch::api_server_restart_loses_nothing,
    "watch-only-the-managed-namespaces" => watch::only_the_managed_namespaces,
    "kubectl-transport-smoke" on "foxtrot" => transport::kubectl_transport_smoke,
    "kube-transport-basics" on "kilo" => transport::kube_transport_basics,
    "destroy-blocked-then-destroyed" on "delta" => deletion::destroy_blocked_then_destroyed,
    "retain-keeps-configmap" on "alpha" => deletion::retain_keeps_configmap,
    "preflight-unknown-context" => observability::preflight_unknown_context,
    "preflight-missing-crd" => observability::preflight_missing_crd,
    "preflight-wrong-version" => observability::preflight_wrong_version,
    "preflight-missing-status-rbac" => observability::preflight_missing_status_rbac,
    "in-cluster-token-rotation" on "echo" => in_cluster::in_cluster_token_rotation,
    "leader-failover" on "ha-0" => failover::leader_failover,
    "scale-out-1-3-2-no-overlap" on "so-0" => sharding::scale_out,
};

/// Runs every check ([`Suite::run_table`]).
pub fn run_all(world: &mut World<'_>, suite: &mut Suite) {
    let recover = ("the operator", World::ensure_operator);
    suite.run_table(world, CHECKS, World::diagnose, recover);
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

/// [`world::check_ready`] with the example's request annotation.
fn check_ready(r: &Value) -> Result<()> {
    world::check_ready(r, REQUEST_ANNOTATION)
}

/// [`world::check_acknowledged`] with the example's request annotation.
fn check_acknowledged(r: &Value) -> Result<()> {
    world::check_acknowledged(r, REQUEST_ANNOTATION)
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
    w.wait_phase(name, (want, reason), DEADLINE, check_acknowledged)
}

/// Waits until ConfigMap `name` exists with exactly `expected` data.
fn wait_data(w: &World<'_>, name: &str, expected: &Value) -> Result<Value> {
    wait_data_within(w, name, expected, DEADLINE)
}

fn wait_data_within(
    w: &World<'_>,
    name: &str,
    expected: &Value,
    deadline: Duration,
) -> Result<Value> {
    let what = format!("configmap {name} data {expected}");
    eventually(&what, deadline, || {
        let cm = config_map(w, name)?.with_context(|| format!("configmap {name} is absent"))?;
        ensure!(data(&cm) == *expected, "data is {}", data(&cm));
        Ok(cm)
    })
}

/// A merge patch of the resource's spec.
fn patch_spec(w: &World<'_>, name: &str, spec: Value) -> Result<()> {
    w.kube.merge_patch(LCM, name, &json!({ "spec": spec }))
}

/// Sets `name`'s data to `{"v": value}` and waits until the ConfigMap
/// (within `deadline`) and the status follow.
fn edit_v(w: &World<'_>, name: &str, value: &str, deadline: Duration) -> Result<()> {
    let data = json!({"v": value});
    patch_spec(w, name, json!({"config": {"data": data}}))?;
    wait_data_within(w, name, &data, deadline)?;
    wait_ready(w, name).map(drop)
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

/// Waits until the resource and its ConfigMap are both gone.
fn wait_gone_with_config_map(w: &World<'_>, name: &str) -> Result<()> {
    eventually(&format!("{name} and its configmap gone"), DEADLINE, || {
        ensure!(w.kube.get(LCM, name)?.is_none(), "{name} still exists");
        let cm = config_map(w, name)?;
        ensure!(cm.is_none(), "configmap {name} still exists");
        Ok(())
    })
}

/// The resource's `Stalled` condition is True.
fn ensure_stalled(r: &Value) -> Result<()> {
    let stalled = world::condition(r, "Stalled").context("no Stalled condition")?;
    let status = &stalled["status"];
    ensure!(status == "True", "Stalled is {status}");
    Ok(())
}

fn uid(r: &Value) -> Result<String> {
    r["metadata"]["uid"]
        .as_str()
        .map(str::to_string)
        .context("resource has no uid")
}
