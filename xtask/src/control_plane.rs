//! `cargo xtask control-plane <provision|run>`.

use std::time::Duration;

use anyhow::{bail, Result};

use blue_testbed::cluster::control_plane::{self, provision};
use blue_testbed::support::interrupt;

pub const USAGE: &str = "\
cargo xtask control-plane provision   build and cache kube-apiserver (Debian), link etcd
cargo xtask control-plane run         start a local control plane until Ctrl-C";

pub fn main(args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        Some("provision") => provision::provision(),
        Some("run") => run(),
        _ => bail!("usage:\n{USAGE}"),
    }
}

fn run() -> Result<()> {
    interrupt::install()?;
    let cp = interrupt::with_default_mask(control_plane::start)?;
    println!(
        "control plane ready in {:.1}s at {}",
        cp.startup_time().as_secs_f64(),
        cp.server()
    );
    println!("  kubeconfig: {}", cp.kubeconfig_path().display());
    println!("  context:    {}", cp.context());
    println!("  logs:       {}", cp.dir().display());
    println!(
        "  try: kubectl --kubeconfig {} --context {} get ns",
        cp.kubeconfig_path().display(),
        cp.context()
    );
    println!("press Ctrl-C to stop");
    while !interrupt::sleep(Duration::from_secs(3600)) {}
    cp.stop()?;
    println!("stopped");
    Ok(())
}
