//! What the suite installs from Debian's packages. PostgreSQL 15, for the
//! PostgreSQL example's tests and the e2e's PostgreSQL group: each starts
//! private servers of its own (`postgres_operator::test_server`), so here
//! only the binaries are installed, and no system service is created or
//! started. Clojure, for the state-identity differential test.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

/// Where Debian puts the server binaries the tests run.
pub const BIN_DIR: &str = "/usr/lib/postgresql/15/bin";

/// Keeps the package's post-install from creating and starting a system
/// cluster (which would outlive the tests on port 5432).
const NO_MAIN_CLUSTER: (&str, &str) = (
    "/etc/postgresql-common/createcluster.d/blue-no-main-cluster.conf",
    "create_main_cluster = false\n",
);
const NO_SERVICE_START: &str = "/usr/sbin/policy-rc.d";

/// Installs Debian's `clojure` (1.11) unless `clojure` is there.
pub fn ensure_clojure() -> Result<()> {
    if Path::new("/usr/bin/clojure").exists() {
        return Ok(());
    }
    println!("==> clojure: installing Debian's clojure");
    let install = || apt(&["install", "-y", "--no-install-recommends", "clojure"]);
    install().or_else(|_| apt(&["update"]).and_then(|()| install()))
}

/// Installs the `postgresql` package unless its binaries are there.
pub fn ensure_postgres() -> Result<()> {
    if Path::new(BIN_DIR).join("initdb").exists() {
        return Ok(());
    }
    println!("==> postgresql: installing Debian's postgresql (binaries only, no service)");
    let (conf, text) = NO_MAIN_CLUSTER;
    std::fs::create_dir_all(Path::new(conf).parent().expect("a directory"))?;
    std::fs::write(conf, text).with_context(|| format!("writing {conf} (run as root)"))?;
    let guard = !Path::new(NO_SERVICE_START).exists();
    if guard {
        std::fs::write(NO_SERVICE_START, "#!/bin/sh\nexit 101\n")?;
        let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        std::fs::set_permissions(NO_SERVICE_START, mode)?;
    }
    let install = || apt(&["install", "-y", "--no-install-recommends", "postgresql"]);
    let installed = install().or_else(|_| apt(&["update"]).and_then(|()| install()));
    if guard {
        let _ = std::fs::remove_file(NO_SERVICE_START);
    }
    installed?;
    if !Path::new(BIN_DIR).join("initdb").exists() {
        bail!("apt-get installed postgresql, but {BIN_DIR}/initdb is missing");
    }
    Ok(())
}

fn apt(args: &[&str]) -> Result<()> {
    let status = Command::new("apt-get")
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .context("running apt-get (PostgreSQL and Clojure come from Debian's packages)")?;
    match status.success() {
        true => Ok(()),
        false => bail!("apt-get {} failed ({status})", args.join(" ")),
    }
}
