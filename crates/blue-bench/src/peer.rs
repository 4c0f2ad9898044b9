//! The peer operator for `--peer` without a binary: built from its source
//! beside this repository (`../shared/peer-kube-rs`, a kube-runtime
//! operator doing the example's job). It is a measuring instrument: built
//! into `target/peer`, never part of this tree.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{ensure, Context, Result};

/// Where the peer's source is expected, relative to the workspace.
const SOURCE: &str = "../shared/peer-kube-rs";

/// Builds the peer (release) and returns its binary.
pub fn build(workspace: &Path) -> Result<PathBuf> {
    let source = workspace.join(SOURCE);
    let manifest = source.join("Cargo.toml");
    ensure!(
        manifest.exists(),
        "no peer source at {}: pass --peer BINARY",
        source.display()
    );
    let target = workspace.join("target/peer");
    eprintln!("[bench] building the peer from {}", source.display());
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .context("running cargo build for the peer")?;
    ensure!(status.success(), "building the peer failed ({status})");
    let binary = target.join("release").join(package_name(&manifest)?);
    ensure!(
        binary.exists(),
        "the peer build made no {}",
        binary.display()
    );
    Ok(binary)
}

/// `[package] name` of a Cargo manifest.
fn package_name(manifest: &Path) -> Result<String> {
    let text = std::fs::read_to_string(manifest)?;
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("name"))
        .find_map(|rest| {
            Some(
                rest.trim()
                    .strip_prefix('=')?
                    .trim()
                    .trim_matches('"')
                    .to_string(),
            )
        })
        .with_context(|| format!("no package name in {}", manifest.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binary_is_named_after_the_manifests_package() {
        let dir = blue_testbed::support::temp_dir::TempDir::new("peer-name").unwrap();
        let manifest = dir.path().join("Cargo.toml");
        std::fs::write(
            &manifest,
            "[package]\nname = \"peer-operator\"\nversion = \"0.1.0\"\n",
        )
        .unwrap();
        assert_eq!(package_name(&manifest).unwrap(), "peer-operator");
    }
}
