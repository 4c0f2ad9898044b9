//! The transports against the real API server: the proxy's private socket,
//! its restart after it is killed, its death with a SIGKILLed operator, and
//! a smoke pass of the per-call kubectl transport.

use anyhow::{bail, ensure, Context, Result};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use super::{eventually, manifest, tamper, wait_data, wait_ready, World, DEADLINE};
use crate::support::processes::processes_mentioning;
use crate::world::Transport;

/// The proxy directories (`blue-proxy-*`) in the operator's TMPDIR.
fn proxy_dirs(w: &World<'_>) -> Vec<PathBuf> {
    std::fs::read_dir(w.operator_tmp())
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("blue-proxy-"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Pids of live `kubectl ... proxy` processes serving the operator.
pub(super) fn proxy_pids(w: &World<'_>) -> Vec<i32> {
    processes_mentioning(&w.operator_tmp())
        .into_iter()
        .filter(|(_, cmd)| cmd.contains(" proxy ") && cmd.contains("--unix-socket="))
        .map(|(pid, _)| pid)
        .collect()
}

pub(super) fn skip_unless_proxy(w: &World<'_>) -> bool {
    if w.transport != Transport::Proxy {
        println!("  (this run uses the kubectl transport: nothing to check)");
        return true;
    }
    false
}

/// One proxy serves the operator, on a socket in a 0700 directory.
pub fn proxy_socket_is_private(w: &mut World<'_>) -> Result<()> {
    if skip_unless_proxy(w) {
        return Ok(());
    }
    the_proxy(w)?;
    let dirs = proxy_dirs(w);
    ensure!(
        dirs.len() == 1,
        "expected one proxy directory, found {dirs:?}"
    );
    let mode = std::fs::metadata(&dirs[0])?.permissions().mode() & 0o777;
    ensure!(mode == 0o700, "the proxy directory has mode {mode:o}");
    let socket = std::fs::symlink_metadata(dirs[0].join("api.sock")).context("no api.sock")?;
    ensure!(
        socket.permissions().mode() & 0o077 == 0,
        "the socket is reachable by others: {:o}",
        socket.permissions().mode()
    );
    Ok(())
}

/// A killed proxy is replaced; the operator keeps converging.
pub fn proxy_restarted_after_kill(w: &mut World<'_>) -> Result<()> {
    if skip_unless_proxy(w) {
        return Ok(());
    }
    let before = kill_the_proxy(w)?;
    tamper(w, "alpha")?;
    wait_data(w, "alpha", &super::alpha_data())?;
    proxy_replaced(w, &before)?;
    ensure!(
        proxy_dirs(w).len() == 1,
        "the killed proxy's directory remains"
    );
    Ok(())
}

/// The proxy dies with its operator, even on SIGKILL (parent-death
/// signal); the operator is then restarted by the suite.
pub fn proxy_dies_with_a_killed_operator(w: &mut World<'_>) -> Result<()> {
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
    eventually(
        "the killed operator's proxy directory swept",
        DEADLINE,
        || {
            let now = proxy_dirs(w);
            ensure!(
                now.len() == 1 && left.iter().all(|dir| !now.contains(dir)),
                "not swept yet, or no new proxy: {left:?} -> {now:?}"
            );
            Ok(())
        },
    )?;
    wait_ready(w, "alpha").map(drop)
}

/// The per-call kubectl transport still converges a new resource.
pub fn kubectl_transport_smoke(w: &mut World<'_>) -> Result<()> {
    let main = w.transport;
    w.transport = Transport::Kubectl;
    let result = (|| {
        w.start_operator(&w.admin_args())?;
        ensure!(
            proxy_pids(w).is_empty(),
            "the kubectl transport started a proxy"
        );
        w.kube.create(&manifest(
            "foxtrot",
            json!({"config": {"data": {"via": "kubectl"}}}),
        ))?;
        wait_ready(w, "foxtrot")?;
        wait_data(w, "foxtrot", &json!({"via": "kubectl"})).map(drop)
    })();
    w.transport = main;
    w.start_operator(&w.admin_args())?;
    result
}

/// The pid of the operator's one kubectl proxy.
fn the_proxy(w: &World<'_>) -> Result<i32> {
    match proxy_pids(w)[..] {
        [pid] => Ok(pid),
        ref pids => bail!("expected one kubectl proxy, found {pids:?}"),
    }
}

/// SIGKILLs the operator's one kubectl proxy; returns its pid.
pub(super) fn kill_the_proxy(w: &World<'_>) -> Result<Vec<i32>> {
    let pid = the_proxy(w)?;
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
    Ok(vec![pid])
}

/// Exactly one new proxy replaced the killed one.
pub(super) fn proxy_replaced(w: &World<'_>, before: &[i32]) -> Result<()> {
    let after = proxy_pids(w);
    ensure!(
        after.len() == 1 && after != before,
        "expected one new proxy, found {after:?} (was {before:?})"
    );
    Ok(())
}
