//! `cargo xtask test`: the whole suite, exactly what CI runs. The cheap
//! steps that sink submissions (formatting, lints, docs) come first.

use anyhow::{bail, Context, Result};
use std::time::Instant;

pub const USAGE: &str =
    "  test                 fmt, clippy, docs, the public API against the last release, cargo package,\n                       \
     the workspace's tests but e2e, the Clojure differential, e2e, short chaos";

/// A step: its name, cargo's arguments (split at spaces) and extra environment.
type Step = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

pub fn main(args: &[String]) -> Result<()> {
    if let Some(extra) = args.first() {
        bail!("`cargo xtask test` takes no arguments (got `{extra}`)");
    }
    blue_testbed::support::debian::ensure_postgres()?;
    blue_testbed::support::debian::ensure_clojure()?;
    // The workspace's tests start blue-envtest control planes, which never
    // provision by themselves: the same (cached) step as
    // `cargo xtask control-plane provision`.
    println!("==> control plane binaries");
    blue_testbed::cluster::control_plane::provision::ensure_provisioned()?;
    let steps: [Step; 9] = [
        ("fmt", "fmt --all -- --check", &[]),
        (
            "clippy",
            "clippy --workspace --all-targets -- -D warnings",
            &[],
        ),
        (
            "doc",
            "doc --workspace --no-deps --exclude xtask",
            &[("RUSTDOCFLAGS", "-D warnings")],
        ),
        // A breaking change needs a version bump (api/ holds the last
        // release's API); the published crates must package and build
        // from their packages alone.
        ("public API against the last release", "xtask api", &[]),
        ("package the published crates", "xtask package", &[]),
        // The end-to-end tests run in their own step, below.
        (
            "unit, property and doc tests",
            "test --workspace --exclude blue-e2e",
            &[],
        ),
        (
            "Clojure differential (ignored without clojure)",
            "test -p blue-identity --test clojure_differential -- --ignored",
            &[],
        ),
        ("e2e (cargo test -p blue-e2e)", "xtask e2e", &[]),
        ("chaos (short profile)", "xtask chaos", &[]),
    ];
    for (name, args, env) in steps {
        println!("==> {name}: cargo {args}");
        let started = Instant::now();
        let status = blue_testbed::support::cargo::command()
            .args(args.split(' '))
            .envs(env.iter().copied())
            .status()
            .with_context(|| format!("running cargo for {name}"))?;
        if !status.success() {
            bail!("{name} failed ({status}) after {:.1?}", started.elapsed());
        }
        println!("==> {name}: ok in {:.1?}", started.elapsed());
    }
    Ok(())
}
