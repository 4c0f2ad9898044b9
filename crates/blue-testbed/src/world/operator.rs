//! The example operator as a separate process: built with cargo here, run
//! as blue-envtest's [`Operator`] (its output in a log file, stopped with
//! SIGTERM as it drains, cleaned up by a watchdog if xtask itself dies).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Stdio;

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// Cargo package (and binary) name of the example operator.
pub const PACKAGE: &str = "local-configmap-operator";

/// Cargo package (and binary) name of the PostgreSQL example operator.
pub const PG_PACKAGE: &str = "postgres-operator";

/// Builds the operator with cargo, optimised when `release` (for
/// measurements), and returns the binary's path.
pub fn build_profile(release: bool) -> Result<PathBuf> {
    Ok(build(&[PACKAGE], release)?.remove(0))
}

/// Builds the binaries of `packages` (each named like its package) in one
/// cargo run, so they share one build of their dependencies; returns their
/// paths in order.
pub fn build(packages: &[&str], release: bool) -> Result<Vec<PathBuf>> {
    let named: Vec<(&str, &str)> = packages.iter().map(|p| (*p, *p)).collect();
    build_bins(&named, release)
}

/// Builds each `(package, binary)` of `bins` in one cargo run (a binary
/// not named like its package, e.g. blue-e2e's
/// `e2e-local-configmap-operator-v1beta1`); returns their paths in order.
pub fn build_bins(bins: &[(&str, &str)], release: bool) -> Result<Vec<PathBuf>> {
    let names: Vec<&str> = bins.iter().map(|(_, bin)| *bin).collect();
    let mut cmd = crate::support::cargo::command();
    cmd.arg("build");
    for (package, bin) in bins {
        cmd.args(["--package", package, "--bin", bin]);
    }
    let mut child = cmd
        .arg("--message-format=json-render-diagnostics")
        .args(release.then_some("--release"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("running cargo build")?;
    let mut binaries = vec![None; names.len()];
    let stdout = child.stdout.take().context("cargo stdout")?;
    for line in BufReader::new(stdout).lines() {
        let Ok(msg) = serde_json::from_str::<Value>(&line?) else {
            continue;
        };
        let built = names.iter().position(|p| msg["target"]["name"] == *p);
        if let (Some(i), "compiler-artifact") = (built, msg["reason"].as_str().unwrap_or("")) {
            if let Some(exe) = msg["executable"].as_str() {
                binaries[i] = Some(PathBuf::from(exe));
            }
        }
    }
    let status = child.wait().context("waiting for cargo build")?;
    if !status.success() {
        bail!("cargo build of {} failed ({status})", names.join(", "));
    }
    let named = binaries.into_iter().zip(&names);
    named
        .map(|(b, p)| b.with_context(|| format!("cargo build reported no {p} executable")))
        .collect()
}

pub use blue_envtest::operator::{log_since, Operator};
