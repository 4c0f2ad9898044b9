//! `cargo xtask package`: `cargo package` for every published crate at
//! once, so the crates that depend on each other resolve through cargo's
//! local registry overlay before the first of them is on crates.io.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

use super::crates::{published, workspace_root, Published};

pub const USAGE: &str = "  package [--no-verify]\n                       \
     cargo package for each published crate (metadata, files, versioned dependencies; builds each unless --no-verify)";

pub fn main(args: &[String]) -> Result<()> {
    let verify = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => true,
        ["--no-verify"] => false,
        _ => bail!("usage: cargo xtask package [--no-verify]"),
    };
    let root = workspace_root();
    let crates = published(&root.join("Cargo.toml"))?;
    forget_overlay_sources(&crates)?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    // Packaging checks what would be uploaded, not whether it is committed.
    command
        .current_dir(&root)
        .args(["package", "--allow-dirty"]);
    for krate in &crates {
        command.args(["--package", &krate.name]);
    }
    if !verify {
        command.arg("--no-verify");
    }
    let status = command.status().context("running cargo package")?;
    if !status.success() {
        bail!("cargo package failed ({status})");
    }
    Ok(())
}

/// Removes earlier unpackings of these crates' overlay packages.
///
/// Cargo unpacks each overlay package into `$CARGO_HOME/registry/src/-<hash>/`
/// where the hash follows the workspace's path, and reuses an unpacked
/// directory as it is when the name and version match. A version is not
/// bumped for every commit, so a checkout at the same path would otherwise
/// verify a dependent crate against the sources packaged by an earlier run.
fn forget_overlay_sources(crates: &[Published]) -> Result<()> {
    let home = match std::env::var_os("CARGO_HOME") {
        Some(home) => PathBuf::from(home),
        None => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(".cargo"),
            None => return Ok(()),
        },
    };
    let Ok(sources) = std::fs::read_dir(home.join("registry").join("src")) else {
        return Ok(());
    };
    for source in sources {
        let source = source.context("listing cargo's unpacked registry sources")?;
        // Overlay registries have no host, so their directory names start
        // with the hash's dash; crates.io's own sources are never touched.
        if !source.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        for krate in crates {
            let unpacked = source
                .path()
                .join(format!("{}-{}", krate.name, krate.version));
            if unpacked.exists() {
                std::fs::remove_dir_all(&unpacked)
                    .with_context(|| format!("removing {}", unpacked.display()))?;
            }
        }
    }
    Ok(())
}
