//! Watches against the real API server. These checks share one operator
//! that lists once an hour (default 5-minute resync) and manages two
//! namespaces, so within their deadlines only a watch event can explain a
//! reaction.

use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{ensure, Context, Result};
use serde_json::{json, Value};

use super::transport::{kill_the_proxy, proxy_replaced, skip_unless_proxy};
use super::{
    check_ready, edit_v, eventually, manifest, wait_data, wait_data_within, wait_ready, World,
    DEADLINE, LCM,
};
use crate::cluster::control_plane::Component;
use crate::cluster::installation::extra_namespaces;
use crate::support::kube::Kube;

/// A poll period no check waits out: reactions come from watches.
const HOUR_MS: &str = "3600000";

/// The pid of the operator [`watching_operator`] started, to reuse it.
static WATCHING_PID: AtomicU32 = AtomicU32::new(0);

/// The watching operator: reused while it runs, else started (the suite
/// restarts a crashed operator with its usual flags, which poll). False,
/// and nothing to check, on the kubectl transport.
fn watching_operator(w: &mut World<'_>) -> Result<bool> {
    if skip_unless_proxy(w) {
        return Ok(false);
    }
    let pid = WATCHING_PID.load(Ordering::SeqCst);
    let same = pid != 0 && w.operator.as_ref().and_then(|o| o.pid()) == Some(pid);
    if same && w.operator()?.is_running() {
        return Ok(true);
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
    WATCHING_PID.store(w.operator()?.pid().unwrap_or(0), Ordering::SeqCst);
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

/// `golf`'s spec: no periodic check within the run (1 h), so only the
/// edits' watch events make it due.
fn golf(data: Value) -> Value {
    json!({"reconcileInterval": "1h", "config": {"data": data}})
}

/// A create and then an edit are handled although no list is due for an
/// hour.
pub fn edit_handled_without_polling(w: &mut World<'_>) -> Result<()> {
    if !watching_operator(w)? {
        return Ok(());
    }
    w.kube.create(&manifest("golf", golf(json!({"v": "1"}))))?;
    wait_ready(w, "golf")?;
    wait_data(w, "golf", &json!({"v": "1"}))?;
    edit_v(w, "golf", "2", DEADLINE)
}

/// Deleted, then edited behind the operator's back, `golf`'s ConfigMap
/// is repaired within seconds: its watch (a related kind) asks for the
/// check, not the hour-long interval nor the 5-minute resync.
pub fn deleted_config_map_restored(w: &mut World<'_>) -> Result<()> {
    if !watching_operator(w)? {
        return Ok(());
    }
    let soon = std::time::Duration::from_secs(10);
    let want = json!({"v": "2"});
    w.kube.ok(&["delete", "configmap", "golf"], None)?;
    wait_data_within(w, "golf", &want, soon)?;
    w.kube
        .merge_patch("configmap", "golf", &json!({"data": {"v": "tampered"}}))?;
    wait_data_within(w, "golf", &want, soon).map(drop)
}

/// With the proxy killed under the watch, a later edit and create are
/// still handled: the client starts a new proxy and the watch resumes.
pub fn proxy_killed_mid_watch_loses_nothing(w: &mut World<'_>) -> Result<()> {
    if !watching_operator(w)? {
        return Ok(());
    }
    let before = kill_the_proxy(w)?;
    edit_v(w, "golf", "3", DEADLINE)?;
    w.kube.create(&manifest("hotel", golf(json!({"v": "1"}))))?;
    wait_ready(w, "hotel")?;
    proxy_replaced(w, &before)
}

/// With the API server restarted under the watch, a later edit and create
/// are still handled (rewatch, or relist after `410 Gone`).
pub fn api_server_restart_loses_nothing(w: &mut World<'_>) -> Result<()> {
    if skip_unless_proxy(w) {
        return Ok(());
    }
    let Some(control_plane) = w.cluster.control_plane() else {
        println!("  (not the local control plane: the API server cannot be restarted here)");
        return Ok(());
    };
    watching_operator(w)?;
    control_plane.restart(Component::ApiServer)?;
    edit_v(w, "golf", "4", DEADLINE)?;
    // Both namespaces: each has its own watch to resume.
    let [watched, _] = extra_namespaces(w.kube.namespace());
    let watched = w.kube.in_namespace(&watched);
    w.kube.create(&manifest("india", golf(json!({"v": "1"}))))?;
    watched.create(&manifest("india", golf(json!({"v": "1"}))))?;
    wait_ready(w, "india")?;
    ready_in(&watched, "india")
}

/// A resource in the second managed namespace converges; one in a
/// namespace the operator does not manage is never touched, until the
/// operator manages all namespaces (on the run's own cluster). Then the
/// operator goes back to its usual flags.
pub fn only_the_managed_namespaces(w: &mut World<'_>) -> Result<()> {
    if skip_unless_proxy(w) {
        return Ok(());
    }
    let result = (|| {
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
        // Every namespace of a cluster someone else uses would include
        // their resources: only on the run's own cluster.
        if !w.cluster.is_disposable() {
            println!("  (a shared cluster: --all-namespaces not tried)");
            return Ok(());
        }
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
    })();
    w.start_operator(&w.admin_args())?;
    result
}

fn ready_in(kube: &Kube, name: &str) -> Result<()> {
    let what = format!("{name} Ready in {}", kube.namespace());
    eventually(&what, DEADLINE, || check_ready(&existing(kube, name)?))
}

fn existing(kube: &Kube, name: &str) -> Result<Value> {
    let namespace = kube.namespace();
    let found = kube.get(LCM, name)?;
    found.with_context(|| format!("localconfigmap {name} does not exist in {namespace}"))
}
