//! The operator "in-cluster" from outside the cluster: a service-account
//! directory (`ca.crt`, `token`, `namespace`), real ServiceAccount tokens
//! from the TokenRequest API, and the service host/port overrides.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use super::manifests::SERVICE_ACCOUNT;
use super::World;

/// Prepares service-account directory `sa` (CA, namespace, `token`) and
/// returns the flags of an operator running "in-cluster" with it.
pub fn in_cluster_args(w: &World, sa: &Path, token: &str) -> Result<Vec<String>> {
    let endpoint = w.endpoint()?;
    fs::create_dir_all(sa)?;
    fs::write(sa.join("ca.crt"), &endpoint.ca_pem)?;
    fs::write(sa.join("namespace"), w.kube.namespace())?;
    write_token(sa, token)?;
    // What `--in-cluster` reads instead of the pod's: test hooks.
    let hooks = format!(
        "service-account-dir={},service-host={},service-port={}",
        sa.display(),
        endpoint.host,
        endpoint.port
    );
    Ok([
        "--in-cluster",
        "--test-hooks",
        &hooks,
        "--poll-ms",
        &super::POLL_MS.to_string(),
        super::EVERY_CHECK_WRITES[0],
        super::EVERY_CHECK_WRITES[1],
        "--transport",
        w.transport.as_str(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect())
}

/// A fresh token for the operator's ServiceAccount (TokenRequest API).
pub fn request_token(w: &World) -> Result<String> {
    request_token_for(w, SERVICE_ACCOUNT)
}

/// A fresh token for ServiceAccount `account` (TokenRequest API).
pub fn request_token_for(w: &World, account: &str) -> Result<String> {
    blue_e2e::in_cluster::request_token_for(&w.kube, account)
}

/// Replaces the token file atomically, as the kubelet does, so kubectl
/// never reads a half-written token.
pub fn write_token(dir: &Path, token: &str) -> Result<()> {
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
