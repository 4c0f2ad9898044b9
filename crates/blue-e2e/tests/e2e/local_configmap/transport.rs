//! The transports against the real API server: the proxy, the per-call
//! kubectl transport and kube-rs's client.

use anyhow::{bail, ensure, Context, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use super::{
    edit_v, eventually, manifest, tamper, wait_data, wait_gone_with_config_map, wait_ready, World,
    DEADLINE, LCM,
};
use crate::support::Transport;
use blue_envtest::procfs::processes_mentioning;

/// The proxy directories (`blue-proxy-*`) in the operator's TMPDIR.
fn proxy_dirs(w: &World) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(w.operator_tmp()).into_iter().flatten();
    let proxy = |n: &std::ffi::OsStr| n.to_string_lossy().starts_with("blue-proxy-");
    let dirs = entries.flatten().map(|e| e.path());
    dirs.filter(|p| p.file_name().is_some_and(proxy)).collect()
}

/// Pids of live `kubectl ... proxy` processes serving the operator.
pub(super) fn proxy_pids(w: &World) -> Vec<i32> {
    processes_mentioning(&w.operator_tmp())
        .into_iter()
        .filter(|(_, cmd)| cmd.contains(" proxy ") && cmd.contains("--unix-socket="))
        .map(|(pid, _)| pid)
        .collect()
}

pub(super) fn skip_unless_proxy(w: &World) -> bool {
    if w.transport != Transport::Proxy {
        println!("  (this run uses the kubectl transport: nothing to check)");
        return true;
    }
    false
}

/// One proxy serves the operator, on a socket in a 0700 directory.
#[test]
fn proxy_socket_is_private() -> Result<()> {
    super::check(None, super::alpha, |w| {
        if skip_unless_proxy(w) {
            return Ok(());
        }
        the_proxy(w)?;
        let dirs = proxy_dirs(w);
        let one = dirs.len() == 1;
        ensure!(one, "expected one proxy directory, found {dirs:?}");
        let mode = std::fs::metadata(&dirs[0])?.permissions().mode() & 0o777;
        ensure!(mode == 0o700, "the proxy directory has mode {mode:o}");
        let socket = std::fs::symlink_metadata(dirs[0].join("api.sock")).context("no api.sock")?;
        ensure!(
            socket.permissions().mode() & 0o077 == 0,
            "the socket is reachable by others: {:o}",
            socket.permissions().mode()
        );
        Ok(())
    })
}

#[test]
fn proxy_restarted_after_kill() -> Result<()> {
    super::check(Some("alpha"), super::alpha, |w| {
        if skip_unless_proxy(w) {
            return Ok(());
        }
        let before = kill_the_proxy(w)?;
        tamper(w, "alpha")?;
        wait_data(w, "alpha", &super::alpha_data())?;
        proxy_replaced(w, &before)?;
        let swept = proxy_dirs(w).len() == 1;
        ensure!(swept, "the killed proxy's directory remains");
        Ok(())
    })
}

/// The proxy dies with its operator, even on SIGKILL (parent-death
/// signal); the next operator sweeps the directory it left.
#[test]
fn proxy_dies_with_a_killed_operator() -> Result<()> {
    super::check(Some("alpha"), super::alpha, |w| {
        if skip_unless_proxy(w) {
            return Ok(());
        }
        the_proxy(w)?;
        // SIGKILL to the operator alone (its proxy must die by itself), reaped
        // here: the proxy can die before the operator is a zombie, and a
        // check that still saw it running would not restart it.
        w.operator()?.crash()?;
        eventually("the proxy gone after its operator", DEADLINE, || {
            let left = proxy_pids(w);
            ensure!(left.is_empty(), "kubectl proxy still running: {left:?}");
            Ok(())
        })?;
        // A SIGKILLed process cannot remove its directory: the next operator's
        // client sweeps it at startup, and only its own stays.
        let left = proxy_dirs(w);
        ensure!(
            !left.is_empty(),
            "the killed operator left no directory to sweep"
        );
        w.ensure_operator()?;
        let what = "the killed operator's proxy directory swept";
        eventually(what, DEADLINE, || {
            let now = proxy_dirs(w);
            ensure!(
                now.len() == 1 && left.iter().all(|dir| !now.contains(dir)),
                "not swept yet, or no new proxy: {left:?} -> {now:?}"
            );
            Ok(())
        })?;
        wait_ready(w, "alpha").map(drop)
    })
}

#[test]
fn kubectl_transport_smoke() -> Result<()> {
    crate::support::run(World::new("lcm")?, Some("foxtrot"), |w| {
        on_transport(w, "kubectl", &[], |w| {
            let no_proxy = proxy_pids(w).is_empty();
            ensure!(no_proxy, "the kubectl transport started a proxy");
            w.kube.create(&manifest(
                "foxtrot",
                json!({"config": {"data": {"via": "kubectl"}}}),
            ))?;
            wait_ready(w, "foxtrot")?;
            wait_data(w, "foxtrot", &json!({"via": "kubectl"})).map(drop)
        })
    })
}

/// On kube-rs's client, with no kubectl to run (`KUBECTL` names none) and
/// no proxy: the operator watches, a new resource converges, an edit
/// reaches its ConfigMap, and deletion (Destroy) removes both.
#[test]
fn kube_transport_basics() -> Result<()> {
    crate::support::run(World::new("lcm")?, Some("kilo"), |w| {
        let no_kubectl = [("KUBECTL".to_string(), "/nonexistent/kubectl".to_string())];
        on_transport(w, "kube", &no_kubectl, |w| {
            let spec = json!({"deletionPolicy": "Destroy", "config": {"data": {"v": "kube"}}});
            w.kube.create(&manifest("kilo", spec))?;
            wait_ready(w, "kilo")?;
            wait_data(w, "kilo", &json!({"v": "kube"}))?;
            let log = std::fs::read_to_string(w.operator_log()).unwrap_or_default();
            let says = log.contains("kube transport, watches");
            ensure!(says, "the operator does not say it watches through kube");
            let no_proxy = proxy_pids(w).is_empty();
            ensure!(no_proxy, "the kube transport started a proxy");
            edit_v(w, "kilo", "edited", DEADLINE)?;
            w.kube.delete(LCM, "kilo")?;
            wait_gone_with_config_map(w, "kilo")
        })
    })
}

/// Runs `check` against an operator started with `--transport transport`
/// and `env` added.
fn on_transport(
    w: &mut World,
    transport: &str,
    env: &[(String, String)],
    check: impl FnOnce(&mut World) -> Result<()>,
) -> Result<()> {
    let mut args = w.admin_args();
    super::watch::set_flag(&mut args, "--transport", transport)?;
    w.operator_env.extend_from_slice(env);
    w.start_operator(&args)?;
    check(w)
}

fn the_proxy(w: &World) -> Result<i32> {
    match proxy_pids(w)[..] {
        [pid] => Ok(pid),
        ref pids => bail!("expected one kubectl proxy, found {pids:?}"),
    }
}

/// SIGKILLs the operator's one kubectl proxy; returns its pid.
pub(super) fn kill_the_proxy(w: &World) -> Result<Vec<i32>> {
    let pid = the_proxy(w)?;
    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    Ok(vec![pid])
}

pub(super) fn proxy_replaced(w: &World, before: &[i32]) -> Result<()> {
    let after = proxy_pids(w);
    ensure!(
        after.len() == 1 && after != before,
        "expected one new proxy, found {after:?} (was {before:?})"
    );
    Ok(())
}
