//! `cargo xtask chaos`: the chaos checks, `#[test]`s of blue-e2e
//! (`cargo test -p blue-e2e --test chaos`), once the control plane's
//! binaries and PostgreSQL are on the machine. The checks and figures:
//! `crates/blue-e2e/README.md`, "Chaos checks".

use anyhow::{bail, Context, Result};

pub const USAGE: &str = "\
cargo xtask chaos [--long] [--seed N] [--only postgres] [TEST-ARGS...]
                                      faults and hostile input against local control planes
                                      (`cargo test -p blue-e2e --test chaos`); --long: longer
                                      outages, more operator kills, every missing permission;
                                      --seed: replay a run's random kill points (each test prints
                                      its seed); TEST-ARGS go to the test harness";

/// What the flags ask for.
#[derive(Debug, Default, PartialEq, Eq)]
struct Args<'a> {
    long: bool,
    seed: Option<u64>,
    /// Only the PostgreSQL checks.
    only_postgres: bool,
    harness: Vec<&'a str>,
}

fn parse(args: &[String]) -> Result<Args<'_>> {
    let mut parsed = Args::default();
    let mut it = args.iter().map(String::as_str);
    while let Some(arg) = it.next() {
        match arg {
            "--long" => parsed.long = true,
            "--only" => match it.next() {
                Some("postgres") => parsed.only_postgres = true,
                _ => bail!("usage:\n{USAGE}"),
            },
            "--seed" => {
                let n = it.next().and_then(|n| n.parse().ok());
                parsed.seed = Some(n.with_context(|| format!("usage:\n{USAGE}"))?);
            }
            "-h" | "--help" => bail!("usage:\n{USAGE}"),
            other => parsed.harness.push(other),
        }
    }
    Ok(parsed)
}

pub fn main(args: &[String]) -> Result<()> {
    let parsed = parse(args)?;
    blue_testbed::cluster::control_plane::provision::ensure_provisioned()?;
    blue_testbed::support::debian::ensure_postgres()?;
    let mut cargo = blue_testbed::support::cargo::command();
    cargo.args(["test", "--package", "blue-e2e", "--test", "chaos", "--"]);
    cargo.args(parsed.only_postgres.then_some("postgres::"));
    // The figures are part of the output; most checks wait on processes.
    cargo.args(["--nocapture", "--test-threads=4"]);
    cargo.args(&parsed.harness);
    if parsed.long {
        cargo.env("BLUE_CHAOS_PROFILE", "long");
    }
    if let Some(seed) = parsed.seed {
        cargo.env("BLUE_CHAOS_SEED", seed.to_string());
    }
    let status = cargo.status().context("running cargo test")?;
    if !status.success() {
        bail!("the chaos tests failed ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{parse, Args};

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_become_the_profile_seed_and_filter_and_the_rest_goes_to_the_harness() {
        let given = args(&["--long", "--seed", "42", "--only", "postgres", "--exact"]);
        let want = Args {
            long: true,
            seed: Some(42),
            only_postgres: true,
            harness: vec!["--exact"],
        };
        assert_eq!(parse(&given).unwrap(), want);
        assert_eq!(parse(&[]).unwrap(), Args::default());
        for bad in [&["--seed", "x"][..], &["--only", "etcd"][..], &["-h"][..]] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }
}
