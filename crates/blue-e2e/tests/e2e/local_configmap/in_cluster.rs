//! The operator in-cluster (see `world::in_cluster`): the tokens are real
//! ServiceAccount tokens for the operator's ServiceAccount, so the shipped
//! RBAC manifest is what authorizes it, and rotating the token file works.

use std::time::Duration;

use anyhow::{ensure, Result};
use serde_json::json;

use super::{edit_v, eventually, manifest, wait_data, wait_ready, World, DEADLINE};
use crate::support::in_cluster::{in_cluster_args, request_token, write_token};
use crate::support::Transport;

/// The operator runs with `--in-cluster`; its token file is rotated to a
/// new valid token, then to an invalid one (calls fail: proof kubectl
/// rereads the file), then to a valid one again (calls work again).
#[test]
fn in_cluster_token_rotation() -> Result<()> {
    crate::support::run(World::new("lcm")?, Some("echo"), |w| {
        let sa = w.scratch("serviceaccount");
        let args = in_cluster_args(w, &sa, &request_token(w)?)?;
        w.start_operator(&args)?;

        w.kube.create(&manifest(
            "echo",
            json!({"reconcileInterval": "2s", "config": {"data": {"v": "1"}}}),
        ))?;
        wait_ready(w, "echo")?;
        wait_data(w, "echo", &json!({"v": "1"}))?;

        // Rotation to a second valid token.
        write_token(&sa, &request_token(w)?)?;
        edit_v(w, "echo", "2", DEADLINE)?;

        // An invalid token: the operator's calls must start failing.
        let offset = w.operator()?.log_offset();
        write_token(&sa, "not-a-valid-token")?;
        // kubectl proxy (client-go) rereads a tokenFile once a minute, so a
        // token change reaches it within a minute; per-call kubectl reads the
        // file on every run.
        let noticed = match w.transport {
            Transport::Proxy => DEADLINE + Duration::from_secs(60),
            Transport::Kubectl => DEADLINE,
        };
        wait_logged(w, offset, "cluster calls failing", noticed)?;

        // A fresh valid token: calls work again without a restart.
        let offset = w.operator()?.log_offset();
        write_token(&sa, &request_token(w)?)?;
        edit_v(w, "echo", "3", noticed)?;
        wait_logged(w, offset, "succeeding again", DEADLINE)?;
        ensure!(w.operator()?.is_running(), "the in-cluster operator exited");
        Ok(())
    })
}

/// Waits until the operator logs `needle` after log `offset`.
fn wait_logged(w: &mut World, offset: u64, needle: &str, deadline: Duration) -> Result<()> {
    let what = format!("the operator logging {needle:?}");
    eventually(&what, deadline, || {
        let logged = w.operator()?.logged_since(offset, needle);
        ensure!(logged, "not logged yet");
        Ok(())
    })
}
