//! `cargo xtask package`: `cargo package` for every published crate at
//! once, so the crates that depend on each other resolve through cargo's
//! local registry overlay before the first of them is on crates.io.

use std::process::Command;

use anyhow::{bail, Context, Result};

use super::crates::{published, workspace_root};

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
