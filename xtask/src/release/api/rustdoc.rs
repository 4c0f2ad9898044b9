//! A crate's rustdoc JSON: `cargo rustdoc` with docs.rs's features.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::release::crates::Published;

/// Documents `krate` of the workspace at `root` as JSON into `target_dir`
/// and reads it back. The JSON output is unstable rustdoc: stable
/// toolchains allow it with `RUSTC_BOOTSTRAP=1`.
pub fn json(
    root: &Path,
    target_dir: &Path,
    krate: &Published,
    features: &[String],
) -> Result<Value> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(root)
        .env("RUSTC_BOOTSTRAP", "1")
        .args([
            "rustdoc",
            "--quiet",
            "--lib",
            "--package",
            &krate.name,
            "--target-dir",
        ])
        .arg(target_dir);
    if !features.is_empty() {
        command.args(["--features", &features.join(",")]);
    }
    let (env, cargo_args) = split_env(&krate.docs_cargo_args);
    command.envs(env).args(cargo_args).args([
        "--",
        "-Z",
        "unstable-options",
        "--output-format",
        "json",
    ]);
    let status = command
        .status()
        .with_context(|| format!("running cargo rustdoc for {}", krate.name))?;
    if !status.success() {
        bail!("cargo rustdoc for {} failed ({status})", krate.name);
    }
    let file = target_dir
        .join("doc")
        .join(format!("{}.json", krate.name.replace('-', "_")));
    let text = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
    serde_json::from_slice(&text).with_context(|| format!("parsing {}", file.display()))
}

/// Splits docs.rs's `cargo-args` into the environment they set
/// (`--config env.NAME="value"`) and the rest. The environment is given
/// to cargo as the process's own: cargo fingerprints `[env]` config in
/// every unit, so passing it as config would rebuild the whole
/// dependency graph for this check and again for the next plain build.
fn split_env(args: &[String]) -> (Vec<(String, String)>, Vec<String>) {
    let (mut env, mut rest) = (Vec::new(), Vec::new());
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let setting = (arg == "--config").then(|| args.clone().next()).flatten();
        let pair = setting
            .and_then(|s| s.strip_prefix("env."))
            .and_then(|s| s.split_once('='));
        match pair {
            Some((name, value)) => {
                env.push((
                    name.trim().to_string(),
                    value.trim().trim_matches('"').to_string(),
                ));
                args.next();
            }
            None => rest.push(arg.clone()),
        }
    }
    (env, rest)
}

#[cfg(test)]
mod tests {
    use super::split_env;

    #[test]
    fn a_config_env_setting_becomes_process_environment_and_the_rest_stays() {
        let args = [
            "--config",
            "env.K8S_OPENAPI_ENABLED_VERSION=\"1.33\"",
            "--locked",
            "--config",
            "net.offline=true",
        ];
        let (env, rest) = split_env(&args.map(String::from));
        assert_eq!(
            env,
            vec![(
                "K8S_OPENAPI_ENABLED_VERSION".to_string(),
                "1.33".to_string()
            )]
        );
        assert_eq!(rest, ["--locked", "--config", "net.offline=true"]);
    }
}
