//! The workspace's published crates, from `cargo metadata`: every member
//! whose manifest does not say `publish = false`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// A crate the workspace publishes, and how docs.rs builds its docs (the
/// features the API check lists, so that the checked API is the
/// documented one).
#[derive(Debug, Clone)]
pub struct Published {
    pub name: String,
    pub version: String,
    /// `[package.metadata.docs.rs] features`.
    pub docs_features: Vec<String>,
    /// `[package.metadata.docs.rs] cargo-args`.
    pub docs_cargo_args: Vec<String>,
    /// The features and dependency names the manifest declares.
    pub known_features: Vec<String>,
}

impl Published {
    /// The docs.rs features this version of the crate knows (an older
    /// version, read for a baseline, may lack some of today's).
    pub fn features_known_of(&self, wanted: &[String]) -> Vec<String> {
        let head = |f: &String| f.split('/').next().unwrap_or_default().to_string();
        wanted
            .iter()
            .filter(|f| self.known_features.contains(&head(f)))
            .cloned()
            .collect()
    }
}

/// The published members of the workspace whose root manifest this is,
/// in the workspace's order.
pub fn published(manifest: &Path) -> Result<Vec<Published>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--manifest-path",
        ])
        .arg(manifest)
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: Value =
        serde_json::from_slice(&output.stdout).context("reading cargo metadata")?;
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect()
    };
    let packages = metadata["packages"].as_array().into_iter().flatten();
    // `publish = false` is an empty list of registries.
    let packages = packages.filter(|p| p["publish"].as_array().is_none_or(|r| !r.is_empty()));
    Ok(packages
        .map(|p| {
            let docs = &p["metadata"]["docs"]["rs"];
            let features = p["features"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(f, _)| f.clone());
            let deps = p["dependencies"].as_array().into_iter().flatten();
            let deps = deps.filter_map(|d| {
                d["rename"]
                    .as_str()
                    .or(d["name"].as_str())
                    .map(String::from)
            });
            Published {
                name: p["name"].as_str().unwrap_or_default().to_string(),
                version: p["version"].as_str().unwrap_or_default().to_string(),
                docs_features: strings(&docs["features"]),
                docs_cargo_args: strings(&docs["cargo-args"]),
                known_features: features.chain(deps).collect(),
            }
        })
        .collect())
}

/// The workspace's root directory (xtask lives one level below it).
pub fn workspace_root() -> PathBuf {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask).to_path_buf()
}
