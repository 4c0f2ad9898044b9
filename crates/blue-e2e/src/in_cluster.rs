//! Real ServiceAccount tokens from the TokenRequest API, for an operator
//! connecting as its shipped account.

use anyhow::{Context, Result};
use blue_envtest::Kubectl;
use serde_json::json;

/// A fresh token for ServiceAccount `account` in `kube`'s namespace
/// (TokenRequest API).
pub fn request_token_for(kube: &Kubectl, account: &str) -> Result<String> {
    let path = format!(
        "/api/v1/namespaces/{}/serviceaccounts/{account}/token",
        kube.namespace()
    );
    let body = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600}
    })
    .to_string();
    let out = kube.ok(&["create", "--raw", &path, "-f", "-"], Some(&body))?;
    let response: serde_json::Value =
        serde_json::from_str(&out).context("parsing the TokenRequest response")?;
    response["status"]["token"]
        .as_str()
        .map(str::to_string)
        .context("the TokenRequest response has no token")
}
