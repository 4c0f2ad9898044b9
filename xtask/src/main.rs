//! `cargo xtask`: developer tasks for blue-kubernetes.
//!
//! See `xtask/README.md`.

mod control_plane;
mod demo;
mod e2e;

use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <command>\n\ncommands:";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("control-plane") => control_plane::cli::main(&args[1..]),
        Some("e2e") => e2e::main(&args[1..]),
        Some("demo") => demo::main(&args[1..]),
        _ => {
            eprintln!("{USAGE}\n{}", control_plane::cli::USAGE);
            eprintln!("{}\n{}", e2e::USAGE, demo::USAGE);
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
