//! `cargo xtask e2e`: the end-to-end tests (crate `blue-e2e`) through
//! `cargo test`, once the control plane's binaries and PostgreSQL are on
//! the machine. Arguments go to the test harness (a name filters).

use anyhow::{bail, Context, Result};

pub const USAGE: &str = "\
cargo xtask e2e [--transport proxy|kubectl] [TEST-ARGS...]
                                      the end-to-end tests (`cargo test -p blue-e2e`) against
                                      local control planes (provisioned on first use); TEST-ARGS
                                      go to the test harness, e.g. a name filter or --nocapture";

/// The harness's threads unless the arguments say otherwise: on two cores
/// four run the suite in about two thirds of the time two take.
const TEST_THREADS: &str = "--test-threads=4";

pub fn main(args: &[String]) -> Result<()> {
    let (transport, harness) = parse(args)?;
    blue_testbed::cluster::control_plane::provision::ensure_provisioned()?;
    blue_testbed::support::debian::ensure_postgres()?;
    // Most checks wait on the operators and the API server, not the CPU.
    let threads = match harness.iter().any(|a| a.starts_with("--test-threads")) {
        true => None,
        false => Some(TEST_THREADS),
    };
    let status = blue_testbed::support::cargo::command()
        .args(["test", "--package", "blue-e2e", "--test", "e2e", "--"])
        .args(threads)
        .args(harness)
        .env("BLUE_E2E_TRANSPORT", transport)
        .status()
        .context("running cargo test")?;
    if !status.success() {
        bail!("the end-to-end tests failed ({status})");
    }
    Ok(())
}

/// The operator's transport and the harness's arguments.
fn parse(args: &[String]) -> Result<(&str, &[String])> {
    match args {
        [flag, value, rest @ ..] if flag == "--transport" => match value.as_str() {
            t @ ("proxy" | "kubectl") => Ok((t, rest)),
            _ => bail!("--transport must be proxy or kubectl"),
        },
        [flag] if flag == "--transport" => bail!("--transport needs a value"),
        [help] if help == "-h" || help == "--help" => bail!("usage:\n{USAGE}"),
        rest => Ok(("proxy", rest)),
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_transport_flag_comes_first_and_the_rest_goes_to_the_harness() {
        let given = args(&["--transport", "kubectl", "drift", "--nocapture"]);
        let (transport, rest) = parse(&given).unwrap();
        assert_eq!((transport, rest), ("kubectl", &given[2..]));
        let plain = args(&["postgres::"]);
        assert_eq!(parse(&plain).unwrap(), ("proxy", &plain[..]));
        for bad in [
            &["--transport"][..],
            &["--transport", "http"][..],
            &["-h"][..],
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }
}
