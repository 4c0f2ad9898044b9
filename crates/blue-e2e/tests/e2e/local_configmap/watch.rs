//! Watches against the real API server. Each check runs an operator that
//! lists once an hour (default 5-minute resync) and manages two
//! namespaces, so within their deadlines only a watch event can explain a
//! reaction.

use anyhow::{ensure, Context, Result};
use serde_json::{json, Value};

use super::transport::{kill_the_proxy, proxy_replaced, skip_unless_proxy};
use super::{
    check_ready, edit_v, eventually, manifest, wait_data, wait_data_within, wait_ready, World,
    DEADLINE, LCM,
};
use blue_envtest::Component;
use blue_envtest::Kubectl;

/// A poll period no check waits out: reactions come from watches.
const HOUR_MS: &str = "3600000";

/// The second managed namespace and the ignored one, named after the
/// check's.
fn extra_namespaces(main: &str) -> [String; 2] {
    [format!("{main}-watched"), format!("{main}-ignored")]
}

/// Starts the watching operator. False, and nothing to check, on the
/// kubectl transport.
fn watching_operator(w: &mut World) -> Result<bool> {
    if skip_unless_proxy(w) {
        return Ok(false);
    }
    for ns in extra_namespaces(w.kube.namespace()) {
        if w.kube.get("namespace", &ns)?.is_none() {
            w.kube.ok(&["create", "namespace", &ns], None)?;
        }
    }
    let [watched, _] = extra_namespaces(w.kube.namespace());
    let mut args = w.admin_args();
    set_flag(&mut args, "--poll-ms", HOUR_MS)?;
    let both = format!("{},{watched}", w.kube.namespace());
    set_flag(&mut args, "--namespace", &both)?;
    w.start_operator(&args)?;
    Ok(true)
}

/// The watching operator, with `golf` converged on `{"v": "2"}` (the data
/// it has after [`edit_handled_without_polling`]). False, and nothing to
/// check, on the kubectl transport.
fn watching_golf(w: &mut World) -> Result<bool> {
    if !watching_operator(w)? {
        return Ok(false);
    }
    w.kube.create(&manifest("golf", golf(json!({"v": "2"}))))?;
    wait_ready(w, "golf")?;
    wait_data(w, "golf", &json!({"v": "2"}))?;
    Ok(true)
}

/// Replaces the value after `flag` in an operator's flags.
pub(super) fn set_flag(args: &mut [String], flag: &str, value: &str) -> Result<()> {
    let at = args
        .iter()
        .position(|a| a == flag)
        .with_context(|| format!("the operator's flags have no {flag}"))?;
    args[at + 1] = value.to_string();
    Ok(())
}

/// `golf`'s spec: no periodic check within the test (1 h), so only the
/// edits' watch events make it due.
fn golf(data: Value) -> Value {
    json!({"reconcileInterval": "1h", "config": {"data": data}})
}

/// A create and then an edit are handled although no list is due for an
/// hour.
#[test]
fn edit_handled_without_polling() -> Result<()> {
    crate::support::run(World::new("lcm")?, Some("golf"), |w| {
        if !watching_operator(w)? {
            return Ok(());
        }
        w.kube.create(&manifest("golf", golf(json!({"v": "1"}))))?;
        wait_ready(w, "golf")?;
        wait_data(w, "golf", &json!({"v": "1"}))?;
        edit_v(w, "golf", "2", DEADLINE)
    })
}

/// Deleted, then edited behind the operator's back, `golf`'s ConfigMap
/// is repaired within seconds: its watch (a related kind) asks for the
/// check, not the hour-long interval nor the 5-minute resync.
#[test]
fn deleted_config_map_restored() -> Result<()> {
    crate::support::run(World::new("lcm")?, Some("golf"), |w| {
        if !watching_golf(w)? {
            return Ok(());
        }
        let soon = std::time::Duration::from_secs(10);
        let want = json!({"v": "2"});
        w.kube.ok(&["delete", "configmap", "golf"], None)?;
        wait_data_within(w, "golf", &want, soon)?;
        w.kube
            .merge_patch("configmap", "golf", &json!({"data": {"v": "tampered"}}))?;
        wait_data_within(w, "golf", &want, soon).map(drop)
    })
}

/// With the proxy killed under the watch, a later edit and create are
/// still handled: the client starts a new proxy and the watch resumes.
#[test]
fn proxy_killed_mid_watch_loses_nothing() -> Result<()> {
    crate::support::run(World::new("lcm")?, Some("hotel"), |w| {
        if !watching_golf(w)? {
            return Ok(());
        }
        let before = kill_the_proxy(w)?;
        edit_v(w, "golf", "3", DEADLINE)?;
        w.kube.create(&manifest("hotel", golf(json!({"v": "1"}))))?;
        wait_ready(w, "hotel")?;
        proxy_replaced(w, &before)
    })
}

/// With the API server restarted under the watch, a later edit and create
/// are still handled (rewatch, or relist after `410 Gone`).
#[test]
fn api_server_restart_loses_nothing() -> Result<()> {
    crate::support::run(World::on_own_control_plane("lcm")?, Some("india"), |w| {
        if !watching_golf(w)? {
            return Ok(());
        }
        w.control_plane().restart(Component::ApiServer)?;
        edit_v(w, "golf", "4", DEADLINE)?;
        // Both namespaces: each has its own watch to resume.
        let [watched, _] = extra_namespaces(w.kube.namespace());
        let watched = w.kube.in_namespace(&watched);
        w.kube.create(&manifest("india", golf(json!({"v": "1"}))))?;
        watched.create(&manifest("india", golf(json!({"v": "1"}))))?;
        wait_ready(w, "india")?;
        ready_in(&watched, "india")
    })
}

/// A resource in the second managed namespace converges; one in a
/// namespace the operator does not manage is never touched, until the
/// operator manages all namespaces (on a control plane of the check's own).
#[test]
fn only_the_managed_namespaces() -> Result<()> {
    crate::support::run(World::on_own_control_plane("lcm")?, None, |w| {
        if skip_unless_proxy(w) {
            return Ok(());
        }
        {
            watching_operator(w)?;
            let [watched, ignored] = extra_namespaces(w.kube.namespace());
            let (watched, ignored) = (w.kube.in_namespace(&watched), w.kube.in_namespace(&ignored));
            let spec = golf(json!({"v": "1"}));
            ignored.create(&manifest("juliet", spec.clone()))?;
            watched.create(&manifest("juliet", spec))?;
            ready_in(&watched, "juliet")?;
            let untouched = existing(&ignored, "juliet")?;
            ensure!(
                untouched.get("status").is_none() && untouched["metadata"]["finalizers"].is_null(),
                "the operator touched a resource outside its namespaces: status {}, finalizers {}",
                untouched["status"],
                untouched["metadata"]["finalizers"]
            );
            let clean = ignored.get("configmap", "juliet")?.is_none();
            ensure!(clean, "a ConfigMap appeared in the unmanaged namespace");
            // Deleted while the operator runs, so its finalizer goes too.
            watched.ok(&["delete", LCM, "juliet", "--timeout=30s"], None)?;
            // Every namespace of a shared control plane would include
            // other checks' resources: only on the check's own.
            ensure!(w.owns_the_control_plane(), "a shared control plane");
            let mut args = w.admin_args();
            let at = args
                .iter()
                .position(|a| a == "--namespace")
                .context("the operator's flags have no --namespace")?;
            args.splice(at..at + 2, ["--all-namespaces".to_string()]);
            w.start_operator(&args)?;
            ready_in(&ignored, "juliet")?;
            ignored.ok(&["delete", LCM, "juliet", "--timeout=30s"], None)?;
            Ok(())
        }
    })
}

fn ready_in(kube: &Kubectl, name: &str) -> Result<()> {
    let what = format!("{name} Ready in {}", kube.namespace());
    eventually(&what, DEADLINE, || check_ready(&existing(kube, name)?))
}

fn existing(kube: &Kubectl, name: &str) -> Result<Value> {
    let namespace = kube.namespace();
    let found = kube.get(LCM, name)?;
    found.with_context(|| format!("localconfigmap {name} does not exist in {namespace}"))
}
