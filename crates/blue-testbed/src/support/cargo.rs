//! Cargo as the tasks run it: without the variables `cargo run` set for
//! xtask itself. A build script that watches one of them (ring's watches
//! `CARGO_MANIFEST_DIR`) would otherwise be rebuilt, with everything after
//! it, whenever a developer alternates `cargo test` and `cargo xtask`.

use std::process::Command;

/// `$CARGO` (else `cargo`) with xtask's own package variables removed.
pub fn command() -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let own = name.starts_with("CARGO_PKG_")
            || [
                "CARGO_MANIFEST_DIR",
                "CARGO_MANIFEST_PATH",
                "CARGO_CRATE_NAME",
                "CARGO_BIN_NAME",
                "CARGO_PRIMARY_PACKAGE",
            ]
            .contains(&name.as_ref());
        if own {
            cmd.env_remove(name.as_ref());
        }
    }
    cmd
}
