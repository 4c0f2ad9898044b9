//! kubectl as xtask's tasks use it: blue-envtest's [`Kubectl`](blue_envtest::Kubectl) (bound to
//! one kubeconfig/context, one namespace and a private discovery cache,
//! with a request deadline), and the binary to run.

use std::path::PathBuf;

use anyhow::{Context, Result};
pub use blue_envtest::Kubectl as Kube;

/// Plural.group of the example's resource.
pub const LCM: &str = "localconfigmaps.examples.blue.dev";

/// `$KUBECTL`, else `kubectl` from `PATH`.
pub fn kubectl_binary() -> Result<PathBuf> {
    blue_envtest::kubectl::find().context("kubectl not found in PATH (or set KUBECTL)")
}
