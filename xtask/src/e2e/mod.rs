//! `cargo xtask e2e`: the example operator against a real API server.
//!
//! Builds `local-configmap-operator`, starts (or connects to) a cluster,
//! installs the example's CRD and RBAC into a fresh namespace, runs the
//! operator as a separate process and checks its behaviour with real
//! kubectl, printing `PASS name (1.23s)` / `FAIL name (1.23s): reason`.
//! Everything started is stopped and every temporary file removed, also on
//! failure, panic or Ctrl-C (guards with `Drop`; watchdogs if xtask dies).

pub mod ha;
pub mod interrupt;
pub mod kube;
pub mod manifests;
pub mod operator;
pub(crate) mod steps;
pub mod suite;
pub mod target;
pub mod util;
pub mod world;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};

use crate::control_plane::certs::random_hex;
use kube::{Kube, LCM};
use suite::Suite;
use target::{Cluster, Mode};
use util::TempDir;
use world::{Transport, World};

/// Usage of `cargo xtask e2e`.
pub const USAGE: &str = "\
cargo xtask e2e                       example operator against a local control plane (provisioned on first use)
cargo xtask e2e --context NAME [--kubeconfig PATH]
                                      ... against an existing cluster (uses a temporary namespace)
cargo xtask e2e --kind                ... against a new kind cluster (needs kind and a Docker engine)
    [--transport proxy|kubectl]       the operator's transport (default proxy; a smoke check
                                      always runs the other one, kubectl, too)";

/// Runs `e2e <args>`.
pub fn main(args: &[String]) -> Result<()> {
    interrupt::install()?;
    let (mode, transport) = parse(args)?;
    let started = Instant::now();
    let work = TempDir::new("blue-e2e")?;

    let t = Instant::now();
    println!("building {}", operator::PACKAGE);
    let binary = operator::build()?;
    println!("setup: operator built ({:.1}s)", t.elapsed().as_secs_f64());

    let t = Instant::now();
    let cluster = Cluster::open(&mode, work.path())?;
    println!(
        "setup: {} ({:.1}s)",
        cluster.describe(),
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let namespace = format!("blue-e2e-{}", random_hex(3)?);
    let kube = cluster.kube(&namespace);
    let installed = Installation::install(&cluster, &kube)?;
    println!(
        "setup: namespace {namespace}, CRD ({}) and RBAC installed ({:.1}s)",
        if installed.cel {
            "with CEL rules"
        } else {
            "generated without CEL rules for this pre-1.25 server"
        },
        t.elapsed().as_secs_f64()
    );

    let mut world = World {
        cluster: &cluster,
        kube,
        binary,
        work: work.path().to_path_buf(),
        cel: installed.cel,
        operator: None,
        operator_env: Vec::new(),
        transport,
    };
    let args = world.admin_args();
    world.start_operator(&args)?;
    println!(
        "setup: operator started, log {}",
        world.operator_log().display()
    );
    let setup = started.elapsed();

    let t = Instant::now();
    let mut suite = Suite::default();
    steps::run_all(&mut world, &mut suite);
    let checks = t.elapsed();

    let t = Instant::now();
    let mut leftovers = vec![work.path().to_path_buf()];
    leftovers.extend(cluster.control_plane_dir());
    if let Some(mut op) = world.operator.take() {
        let status = op.stop()?;
        if !status.success() {
            println!("note: the operator exited with {status} at the end");
        }
    }
    drop(world);
    installed.remove()?;
    cluster.stop()?;
    drop(work);
    let teardown = t.elapsed();
    suite.run("cleanup", || {
        for dir in &leftovers {
            let procs = util::processes_mentioning(dir);
            ensure!(procs.is_empty(), "processes left behind: {procs:?}");
            ensure!(!dir.exists(), "{} was not removed", dir.display());
        }
        Ok(())
    });

    let total = suite.outcomes().len();
    let failed = suite.failed();
    let skipped = suite.skipped();
    println!(
        "e2e: {} passed, {failed} failed{} in {:.1}s (setup {:.1}s, checks {:.1}s, teardown {:.1}s)",
        total - failed - skipped,
        if skipped > 0 {
            format!(", {skipped} skipped")
        } else {
            String::new()
        },
        started.elapsed().as_secs_f64(),
        setup.as_secs_f64(),
        checks.as_secs_f64(),
        teardown.as_secs_f64()
    );
    if interrupt::requested() {
        bail!("interrupted");
    }
    if failed > 0 {
        let names: Vec<&str> = suite
            .outcomes()
            .iter()
            .filter(|o| o.failure.is_some())
            .map(|o| o.name.as_str())
            .collect();
        bail!(
            "{failed} of {total} e2e checks failed: {}",
            names.join(", ")
        );
    }
    Ok(())
}

fn parse(args: &[String]) -> Result<(Mode, Transport)> {
    let mut transport = Transport::Proxy;
    let mut context = None;
    let mut kubeconfig = None;
    let mut kind = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--context" => context = Some(it.next().context("--context needs a name")?.clone()),
            "--kubeconfig" => {
                kubeconfig = Some(PathBuf::from(
                    it.next().context("--kubeconfig needs a path")?,
                ))
            }
            "--kind" => kind = true,
            "--transport" => {
                transport = Transport::parse(it.next().context("--transport needs a value")?)?
            }
            "-h" | "--help" => bail!("usage:\n{USAGE}"),
            other => bail!("unknown argument {other:?}\nusage:\n{USAGE}"),
        }
    }
    let mode = match (context, kubeconfig, kind) {
        (None, None, false) => Mode::Local,
        (None, None, true) => Mode::Kind,
        (Some(context), kubeconfig, false) => Mode::Context {
            context,
            kubeconfig,
        },
        (None, Some(_), _) => {
            bail!("--kubeconfig needs --context (the current context is never used)")
        }
        (Some(_), _, true) => bail!("--kind and --context exclude each other"),
    };
    Ok((mode, transport))
}

/// The namespace, CRD and RBAC of a run. On clusters that outlive the run,
/// removes what it added (also on drop, e.g. after a failed setup).
pub struct Installation {
    kube: Kube,
    disposable: bool,
    created_crd: bool,
    /// The server evaluates the CRD's CEL rules.
    pub cel: bool,
    removed: bool,
}

impl Installation {
    /// Creates the namespace, applies the CRD (without CEL rules on servers
    /// before 1.25), waits until it is established, and applies the RBAC.
    pub fn install(cluster: &Cluster, kube: &Kube) -> Result<Self> {
        let created_crd = kube.get("crd", manifests::CRD_NAME)?.is_none();
        let mut this = Self {
            kube: kube.clone(),
            disposable: cluster.is_disposable(),
            created_crd,
            cel: false,
            removed: false,
        };
        kube.ok(&["create", "namespace", kube.namespace()], None)?;
        let (crd, cel) = manifests::crd_for(kube)?;
        kube.apply(&crd)?;
        kube.ok(
            &[
                "wait",
                "--for=condition=Established",
                &format!("crd/{}", manifests::CRD_NAME),
                "--timeout=60s",
            ],
            None,
        )?;
        kube.apply(&manifests::in_namespace(manifests::RBAC, kube.namespace()))?;
        this.cel = cel;
        Ok(this)
    }

    /// On a cluster that outlives the run: drops the finalizers of leftover
    /// resources (the operator is stopped by now), deletes the namespace
    /// (and the watch checks' extra ones) and,
    /// if this run created it, the CRD.
    pub fn remove(mut self) -> Result<()> {
        self.remove_now()
    }

    fn remove_now(&mut self) -> Result<()> {
        if self.removed || self.disposable {
            self.removed = true;
            return Ok(());
        }
        self.removed = true;
        let main = self.kube.namespace().to_string();
        let [watched, ignored] = steps::watch::extra_namespaces(&main);
        for ns in [main.clone(), watched, ignored] {
            let kube = self.kube.in_namespace(&ns);
            if ns != main && kube.get("namespace", &ns)?.is_none() {
                continue;
            }
            let names = kube.ok(&["get", LCM, "-o", "name"], None)?;
            for name in names.lines().filter(|l| !l.trim().is_empty()) {
                kube.ok(
                    &[
                        "patch",
                        name,
                        "--type=merge",
                        "-p",
                        r#"{"metadata":{"finalizers":null}}"#,
                    ],
                    None,
                )?;
            }
            kube.ok(&["delete", "namespace", &ns, "--wait=false"], None)?;
        }
        if self.created_crd {
            self.kube.ok(
                &["delete", "crd", manifests::CRD_NAME, "--wait=false"],
                None,
            )?;
        }
        Ok(())
    }
}

impl Drop for Installation {
    fn drop(&mut self) {
        if let Err(err) = self.remove_now() {
            eprintln!("warning: cleaning up the test namespace: {err:#}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn modes_follow_the_flags() {
        assert_eq!(parse(&[]).unwrap(), (Mode::Local, Transport::Proxy));
        assert_eq!(parse(&args(&["--kind"])).unwrap().0, Mode::Kind);
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
            &["--kind", "--context", "dev"][..],
            &["--context"][..],
            &["--bogus"][..],
            &["--transport", "http"][..],
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }
}
