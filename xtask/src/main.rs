//! `cargo xtask`: developer tasks for blue-kubernetes.
//!
//! See `xtask/README.md`.

mod bench;
mod chaos;
mod control_plane;
mod demo;
mod e2e;
mod release;
mod test_all;

use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <command>\n\ncommands:";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("control-plane") => control_plane::main(&args[1..]),
        Some("e2e") => e2e::main(&args[1..]),
        Some("demo") => demo::main(&args[1..]),
        Some("bench") => bench::main(&args[1..]),
        Some("chaos") => chaos::main(&args[1..]),
        Some("test") => test_all::main(&args[1..]),
        Some("package") => release::package::main(&args[1..]),
        Some("api") => release::api::main(&args[1..]),
        _ => {
            eprintln!("{USAGE}\n{}", control_plane::USAGE);
            eprintln!("{}\n{}", e2e::USAGE, demo::USAGE);
            eprintln!("{}", bench::USAGE);
            eprintln!("{}", chaos::USAGE);
            eprintln!("{}", test_all::USAGE);
            eprintln!("{}\n{}", release::package::USAGE, release::api::USAGE);
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
