//! `cargo xtask bench`: the benchmarks, package `blue-bench`, run as a
//! release build (measurements need optimised code) with the same flags.
//! Its flags: `cargo xtask bench --help`; what each part measures and the
//! figures: `BENCHMARKS.md`.

use anyhow::{bail, Context, Result};

pub const USAGE: &str = "\
cargo xtask bench [FLAGS...]          measure the controller (`cargo run --release -p blue-bench`):
                                      BENCHMARKS.md's blocks, target/bench; FLAGS: --help";

pub fn main(args: &[String]) -> Result<()> {
    let status = blue_testbed::support::cargo::command()
        .args([
            "run",
            "--release",
            "--quiet",
            "--package",
            "blue-bench",
            "--",
        ])
        .args(args)
        .status()
        .context("running cargo run -p blue-bench")?;
    if !status.success() {
        bail!("the bench failed ({status})");
    }
    Ok(())
}
