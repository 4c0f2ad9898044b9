//! In-cluster mode from outside the cluster: a service-account directory
//! (`ca.crt`, `token`, `namespace`) and the service host/port overrides.
//! The tokens are real ServiceAccount tokens (TokenRequest API) for the
//! operator's ServiceAccount, so the shipped RBAC manifest is what
//! authorizes it.

use std::fs;
use std::path::Path;

use anyhow::{ensure, Context, Result};
use serde_json::json;

use super::{eventually, manifest, wait_data, wait_ready, World, DEADLINE, LCM};
use crate::cluster::manifests::SERVICE_ACCOUNT;
use crate::world::Transport;

/// The operator runs with `--in-cluster`; its token file is rotated to a
/// new valid token, then to an invalid one (calls fail: proof kubectl
/// rereads the file), then to a valid one again (calls work again).
pub fn in_cluster_token_rotation(w: &mut World<'_>) -> Result<()> {
    let status = w.stop_operator()?;
    ensure!(
        status.success(),
        "the operator exited with {status} on SIGTERM"
    );

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
    update(w, "2")?;

    // An invalid token: the operator's calls must start failing.
    let offset = w.operator()?.log_offset();
    write_token(&sa, "not-a-valid-token")?;
    // kubectl proxy (client-go) rereads a tokenFile once a minute, so a
    // token change reaches it within a minute; per-call kubectl reads the
    // file on every run.
    let noticed = match w.transport {
        Transport::Proxy => DEADLINE + std::time::Duration::from_secs(60),
        Transport::Kubectl => DEADLINE,
    };
    eventually("the operator reporting failing calls", noticed, || {
        ensure!(
            w.operator()?.logged_since(offset, "cluster calls failing"),
            "no failure logged yet"
        );
        Ok(())
    })?;

    // A fresh valid token: calls work again without a restart.
    let offset = w.operator()?.log_offset();
    write_token(&sa, &request_token(w)?)?;
    update_within(w, "3", noticed)?;
    eventually("the operator reporting recovery", DEADLINE, || {
        ensure!(
            w.operator()?.logged_since(offset, "succeeding again"),
            "no recovery logged yet"
        );
        Ok(())
    })?;
    ensure!(w.operator()?.is_running(), "the in-cluster operator exited");
    Ok(())
}

/// Prepares service-account directory `sa` (CA, namespace, `token`) and
/// returns the flags of an operator running "in-cluster" with it.
pub(crate) fn in_cluster_args(w: &World<'_>, sa: &Path, token: &str) -> Result<Vec<String>> {
    let endpoint = w.cluster.endpoint()?;
    fs::create_dir_all(sa)?;
    fs::write(sa.join("ca.crt"), &endpoint.ca_pem)?;
    fs::write(sa.join("namespace"), w.kube.namespace())?;
    write_token(sa, token)?;
    Ok([
        "--in-cluster",
        "--service-account-dir",
        &sa.display().to_string(),
        "--service-host",
        &endpoint.host,
        "--service-port",
        &endpoint.port.to_string(),
        "--poll-ms",
        &crate::world::POLL_MS.to_string(),
        "--transport",
        w.transport.as_str(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect())
}

/// Changes echo's data and waits until the ConfigMap and status follow.
fn update(w: &mut World<'_>, value: &str) -> Result<()> {
    update_within(w, value, DEADLINE)
}

fn update_within(w: &mut World<'_>, value: &str, deadline: std::time::Duration) -> Result<()> {
    w.kube.merge_patch(
        LCM,
        "echo",
        &json!({"spec": {"config": {"data": {"v": value}}}}),
    )?;
    let want = json!({ "v": value });
    eventually(&format!("configmap echo data {want}"), deadline, || {
        let cm = w
            .kube
            .get("configmap", "echo")?
            .context("configmap echo is absent")?;
        ensure!(cm["data"] == want, "data is {}", cm["data"]);
        Ok(())
    })?;
    wait_ready(w, "echo").map(drop)
}

/// A fresh token for the operator's ServiceAccount (TokenRequest API).
pub(crate) fn request_token(w: &World<'_>) -> Result<String> {
    request_token_for(w, SERVICE_ACCOUNT)
}

/// A fresh token for ServiceAccount `account` (TokenRequest API).
pub(super) fn request_token_for(w: &World<'_>, account: &str) -> Result<String> {
    let path = format!(
        "/api/v1/namespaces/{}/serviceaccounts/{account}/token",
        w.kube.namespace()
    );
    let body = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600}
    })
    .to_string();
    let out = w
        .kube
        .ok(&["create", "--raw", &path, "-f", "-"], Some(&body))?;
    let response: serde_json::Value =
        serde_json::from_str(&out).context("parsing the TokenRequest response")?;
    response["status"]["token"]
        .as_str()
        .map(str::to_string)
        .context("the TokenRequest response has no token")
}

/// Replaces the token file atomically, as the kubelet does, so kubectl
/// never reads a half-written token.
pub(crate) fn write_token(dir: &Path, token: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = dir.join("..token.tmp");
    let mut file = fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(token.as_bytes())?;
    file.sync_all()?;
    fs::rename(&tmp, dir.join("token")).context("replacing the token file")
}
