//! `cargo xtask e2e`: the example operators against a real API server,
//! checked with real kubectl (and psql); the checks: `xtask/README.md`.

mod postgres;
mod steps;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::cluster::Mode;
use crate::support::interrupt;
use crate::support::processes::nothing_left;
use crate::support::suite::Suite;
use crate::world::{Testbed, Transport};

pub const USAGE: &str = "\
cargo xtask e2e                       example operator against a local control plane (provisioned on first use)
cargo xtask e2e --context NAME [--kubeconfig PATH]
                                      ... against an existing cluster (uses a temporary namespace)
    [--transport proxy|kubectl]       the operator's transport (default proxy; a smoke check
                                      always runs the other one, kubectl, too)
    [--group main|postgres]           only the ConfigMap operator's checks, or only the postgres-* group";

pub fn main(args: &[String]) -> Result<()> {
    interrupt::install()?;
    let (mode, transport, group) = parse(args)?;
    let started = Instant::now();
    let testbed = Testbed::up("e2e", &mode, None)?;
    let mut world = testbed.world(transport);
    let main_group = group.as_deref() != Some("postgres");
    if main_group {
        world.start_operator(&world.admin_args())?;
        let log = world.operator_log();
        println!("setup: operator started, log {}", log.display());
    }
    let setup = started.elapsed();

    let t = Instant::now();
    let mut suite = Suite::default();
    if main_group {
        steps::run_all(&mut world, &mut suite);
    }
    // The ConfigMap operator keeps running: its watchdog removes the run's
    // directory if xtask dies.
    let pg_dir = match group.as_deref() != Some("main") {
        true => postgres::run_all(&world, &mut suite),
        false => None,
    };
    let checks = t.elapsed();

    let t = Instant::now();
    if let Some(mut op) = world.operator.take() {
        let status = op.stop()?;
        if !status.success() {
            println!("note: the operator exited with {status} at the end");
        }
    }
    drop(world);
    let mut gone = testbed.down()?;
    gone.extend(pg_dir);
    let teardown = t.elapsed();
    suite.run("cleanup", || nothing_left(&gone));
    suite.finish(
        "e2e",
        &format!(
            "in {:.1}s (setup {:.1}s, checks {:.1}s, teardown {:.1}s)",
            started.elapsed().as_secs_f64(),
            setup.as_secs_f64(),
            checks.as_secs_f64(),
            teardown.as_secs_f64()
        ),
    )
}

fn parse(args: &[String]) -> Result<(Mode, Transport, Option<String>)> {
    let mut transport = Transport::Proxy;
    let mut group = None;
    let mut context = None;
    let mut kubeconfig = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--context" => context = Some(it.next().context("--context needs a name")?.clone()),
            "--kubeconfig" => {
                kubeconfig = Some(PathBuf::from(
                    it.next().context("--kubeconfig needs a path")?,
                ))
            }
            "--transport" => {
                transport = Transport::parse(it.next().context("--transport needs a value")?)?
            }
            "--group" => match it.next().map(String::as_str) {
                Some(g @ ("main" | "postgres")) => group = Some(g.to_string()),
                _ => bail!("--group needs main or postgres"),
            },
            "-h" | "--help" => bail!("usage:\n{USAGE}"),
            other => bail!("unknown argument {other:?}\nusage:\n{USAGE}"),
        }
    }
    let mode = match (context, kubeconfig) {
        (None, None) => Mode::Local,
        (Some(context), kubeconfig) => Mode::Context {
            context,
            kubeconfig,
        },
        (None, Some(_)) => {
            bail!("--kubeconfig needs --context (the current context is never used)")
        }
    };
    Ok((mode, transport, group))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn modes_follow_the_flags() {
        assert_eq!(parse(&[]).unwrap(), (Mode::Local, Transport::Proxy, None));
        let postgres = parse(&args(&["--group", "postgres"])).unwrap().2;
        assert_eq!(postgres.as_deref(), Some("postgres"));
        assert_eq!(
            parse(&args(&["--transport", "kubectl"])).unwrap().1,
            Transport::Kubectl
        );
        assert_eq!(
            parse(&args(&["--context", "dev", "--kubeconfig", "/k"]))
                .unwrap()
                .0,
            Mode::Context {
                context: "dev".into(),
                kubeconfig: Some("/k".into())
            }
        );
        for bad in [
            &["--kubeconfig", "/k"][..],
            &["--context"][..],
            &["--bogus"][..],
            &["--transport", "http"][..],
            &["--group", "other"][..],
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }
}
