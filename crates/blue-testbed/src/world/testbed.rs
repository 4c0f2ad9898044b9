//! Setup and teardown of a run, written once for the bench and the demo:
//! build the operators, open the cluster, install the example into a
//! namespace; afterwards stop and remove everything, in reverse order, also
//! when the run failed.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;

use super::{operator, Transport, World};
use crate::cluster::installation::Installation;
use crate::cluster::{Cluster, Mode};
use crate::support::temp_dir::TempDir;
use blue_envtest::random_hex;

/// The built operator, the cluster and the installation of one run.
pub struct Testbed {
    // Fields drop in declaration order: the installation before the cluster
    // it lives in, the scratch directory last.
    /// The namespace, CRD and RBAC installed.
    pub installation: Installation,
    /// The cluster the run uses.
    pub cluster: Cluster,
    binary: PathBuf,
    pg_binary: PathBuf,
    work: TempDir,
}

impl Testbed {
    /// Sets up for `task` (it names the scratch directory and, unless
    /// `namespace` is given, a fresh namespace `blue-<task>-<random>`),
    /// printing a `setup:` line per step.
    pub fn up(task: &str, mode: &Mode, namespace: Option<&str>) -> Result<Self> {
        let work = TempDir::new(&format!("blue-{task}"))?;
        let packages = [operator::PACKAGE, operator::PG_PACKAGE];
        println!("building {}", packages.join(" and "));
        let built = setup(
            || operator::build(&packages, false),
            |_| "operators built".into(),
        )?;
        let (binary, pg_binary) = (built[0].clone(), built[1].clone());
        let cluster = setup(|| Cluster::open(mode, work.path()), Cluster::describe)?;
        let namespace = match namespace {
            Some(ns) => ns.to_string(),
            None => format!("blue-{task}-{}", random_hex(3)?),
        };
        let installation = setup(
            || Installation::install(&cluster, &cluster.kube(&namespace)),
            |i| {
                let crd = match i.cel {
                    true => "with CEL rules",
                    false => "generated without CEL rules for this pre-1.25 server",
                };
                format!("namespace {namespace}, CRD ({crd}) and RBAC installed")
            },
        )?;
        Ok(Self {
            installation,
            cluster,
            binary,
            pg_binary,
            work,
        })
    }

    /// The shared state of the checks; no operator runs yet.
    pub fn world(&self, transport: Transport) -> World<'_> {
        World {
            cluster: &self.cluster,
            kube: self.installation.kube().clone(),
            binary: self.binary.clone(),
            pg_binary: self.pg_binary.clone(),
            work: self.work.path().to_path_buf(),
            operator: None,
            operator_env: Vec::new(),
            transport,
        }
    }

    /// Removes the installation, stops the cluster and deletes the scratch
    /// directory (stop the operators first: drop the world). Returns the
    /// directories no process may mention any more, for the cleanup check.
    pub fn down(self) -> Result<Vec<PathBuf>> {
        let mut gone = vec![self.work.path().to_path_buf()];
        gone.extend(
            self.cluster
                .control_plane()
                .map(|cp| cp.dir().to_path_buf()),
        );
        self.installation.remove()?;
        self.cluster.stop()?;
        drop(self.work);
        Ok(gone)
    }
}

/// Runs one step of the setup, then prints `setup: <what it did> (1.2s)`.
fn setup<T>(step: impl FnOnce() -> Result<T>, done: impl FnOnce(&T) -> String) -> Result<T> {
    let started = Instant::now();
    let out = step()?;
    let secs = started.elapsed().as_secs_f64();
    println!("setup: {} ({secs:.1}s)", done(&out));
    Ok(out)
}
