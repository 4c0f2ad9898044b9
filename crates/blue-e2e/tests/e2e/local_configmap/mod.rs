//! The LocalConfigMap example operator against a real API server, checked
//! with kubectl. Each test starts from a fixture of its own ([`World`],
//! plus the resources it needs, made the way the checks before it used to
//! make them), so any one of them runs alone.

mod admission;
mod admission_hostile;
mod basics;
mod deletion;
mod drift;
mod failover;
mod in_cluster;
mod observability;
mod sharding;
mod transport;
mod versions;
mod versions_retire;
mod watch;

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use serde_json::{json, Value};

use crate::support::manifests::{manifest, owner_uid, LCM, REQUEST_ANNOTATION};
use crate::support::wait::{eventually, DEADLINE};
use crate::support::{self, World};
use blue_e2e::status::{self, condition, phase};

/// Runs `check` on a fresh namespace with the operator running, after
/// `setup` (e.g. [`alpha`]); a failure shows `resource`.
fn check(
    resource: Option<&str>,
    setup: fn(&mut World) -> Result<()>,
    check: impl FnOnce(&mut World) -> Result<()>,
) -> Result<()> {
    let w = World::with_operator("lcm")?;
    support::run(w, resource, |w| {
        setup(w)?;
        check(w)
    })
}

/// No setup.
fn nothing(_: &mut World) -> Result<()> {
    Ok(())
}

/// `alpha` converged with the data it has after a config update
/// ([`alpha_data`]), checked every 2 s.
fn alpha(w: &mut World) -> Result<()> {
    let spec = json!({"reconcileInterval": "2s", "config": {"data": alpha_data()}});
    w.kube.create(&manifest("alpha", spec))?;
    wait_ready(w, "alpha")?;
    wait_data(w, "alpha", &alpha_data()).map(drop)
}

/// `bravo` converged, checked every 2 s.
fn bravo(w: &mut World) -> Result<()> {
    let spec = json!({"reconcileInterval": "2s", "config": {"data": {"witness": "1"}}});
    w.kube.create(&manifest("bravo", spec))?;
    wait_ready(w, "bravo").map(drop)
}

/// [`alpha`] and [`bravo`].
fn alpha_and_bravo(w: &mut World) -> Result<()> {
    alpha(w)?;
    bravo(w)
}

/// The data `alpha` holds after `config-update`.
fn alpha_data() -> Value {
    json!({"greeting": "bonjour", "extra": "1"})
}

/// The resource, which must exist.
fn get(w: &World, name: &str) -> Result<Value> {
    w.kube
        .get(LCM, name)?
        .with_context(|| format!("localconfigmap {name} does not exist"))
}

/// The ConfigMap, if it exists.
fn config_map(w: &World, name: &str) -> Result<Option<Value>> {
    Ok(w.kube.get("configmap", name)?)
}

/// A ConfigMap's data (`{}` when it has none).
fn data(cm: &Value) -> Value {
    match cm.get("data") {
        Some(d) if d.is_object() => d.clone(),
        _ => json!({}),
    }
}

/// [`status::check_ready`] with the example's request annotation.
fn check_ready(r: &Value) -> Result<()> {
    status::check_ready(r, REQUEST_ANNOTATION)
}

/// [`status::check_acknowledged`] with the example's request annotation.
fn check_acknowledged(r: &Value) -> Result<()> {
    status::check_acknowledged(r, REQUEST_ANNOTATION)
}

/// Waits until the resource is Ready for its current generation.
fn wait_ready(w: &World, name: &str) -> Result<Value> {
    eventually(&format!("{name} Ready"), DEADLINE, || {
        let r = get(w, name)?;
        check_ready(&r)?;
        Ok(r)
    })
}

/// Waits for `phase` with the Ready condition's `reason`, for the current
/// generation.
fn wait_phase(w: &World, name: &str, want: &str, reason: &str) -> Result<Value> {
    w.wait_phase(name, (want, reason), DEADLINE, check_acknowledged)
}

/// Waits until ConfigMap `name` exists with exactly `expected` data.
fn wait_data(w: &World, name: &str, expected: &Value) -> Result<Value> {
    wait_data_within(w, name, expected, DEADLINE)
}

fn wait_data_within(w: &World, name: &str, expected: &Value, deadline: Duration) -> Result<Value> {
    let what = format!("configmap {name} data {expected}");
    eventually(&what, deadline, || {
        let cm = config_map(w, name)?.with_context(|| format!("configmap {name} is absent"))?;
        ensure!(data(&cm) == *expected, "data is {}", data(&cm));
        Ok(cm)
    })
}

/// A merge patch of the resource's spec.
fn patch_spec(w: &World, name: &str, spec: Value) -> Result<()> {
    Ok(w.kube.merge_patch(LCM, name, &json!({ "spec": spec }))?)
}

/// Sets `name`'s data to `{"v": value}` and waits until the ConfigMap
/// (within `deadline`) and the status follow.
fn edit_v(w: &World, name: &str, value: &str, deadline: Duration) -> Result<()> {
    let data = json!({"v": value});
    patch_spec(w, name, json!({"config": {"data": data}}))?;
    wait_data_within(w, name, &data, deadline)?;
    wait_ready(w, name).map(drop)
}

/// Edits the ConfigMap behind the operator's back: one changed and one
/// added key.
fn tamper(w: &World, name: &str) -> Result<()> {
    let edit = json!({"data": {"greeting": "tampered", "intruder": "x"}});
    Ok(w.kube.merge_patch("configmap", name, &edit)?)
}

/// Waits until the resource and its ConfigMap are both gone.
fn wait_gone_with_config_map(w: &World, name: &str) -> Result<()> {
    eventually(&format!("{name} and its configmap gone"), DEADLINE, || {
        ensure!(w.kube.get(LCM, name)?.is_none(), "{name} still exists");
        let cm = config_map(w, name)?;
        ensure!(cm.is_none(), "configmap {name} still exists");
        Ok(())
    })
}

/// The resource's `Stalled` condition is True.
fn ensure_stalled(r: &Value) -> Result<()> {
    let stalled = condition(r, "Stalled").context("no Stalled condition")?;
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
