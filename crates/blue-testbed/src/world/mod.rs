//! Everything a check needs: kubectl bound to the test namespace, the
//! operator process (restartable), and scratch space; and the testbed that
//! sets all of it up and tears it down.

pub mod operator;
mod testbed;

pub use testbed::Testbed;

use std::path::PathBuf;
use std::process::ExitStatus;

use anyhow::{Context, Result};

use crate::cluster::Cluster;
use crate::support::kube::Kube;
use operator::Operator;

/// The operator's poll period in the e2e: short, so checks are quick, but
/// not so short that kubectl's ~0.1 s of CPU per call starves two cores.
pub const POLL_MS: u64 = 250;
/// The operator's transport (`--transport`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// One long-lived `kubectl proxy` (the operator's default).
    Proxy,
    /// One kubectl process per request.
    Kubectl,
}

impl Transport {
    const NAMES: [(Transport, &'static str); 2] =
        [(Transport::Proxy, "proxy"), (Transport::Kubectl, "kubectl")];

    /// The transport `--transport` names (`proxy` or `kubectl`).
    pub fn parse(text: &str) -> Result<Self> {
        let found = Self::NAMES.iter().find(|(_, name)| *name == text);
        found
            .map(|(t, _)| *t)
            .context("--transport must be proxy or kubectl")
    }

    /// The name `--transport` takes.
    pub fn as_str(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(t, _)| *t == self)
            .map_or("", |n| n.1)
    }
}

/// Shared state of one e2e run.
pub struct World<'a> {
    /// The cluster the run uses.
    pub cluster: &'a Cluster,
    /// kubectl in the test namespace.
    pub kube: Kube,
    /// The example operator's binary.
    pub binary: PathBuf,
    /// The PostgreSQL example operator's binary.
    pub pg_binary: PathBuf,
    /// Scratch directory (removed at the end).
    pub work: PathBuf,
    /// The operator [`World::start_operator`] started, while it runs.
    pub operator: Option<Operator>,
    /// Extra environment for the operator.
    pub operator_env: Vec<(String, String)>,
    /// The operator's transport.
    pub transport: Transport,
}

impl World<'_> {
    /// Where the operator [`World::start_operator`] starts logs.
    pub fn operator_log(&self) -> PathBuf {
        self.work.join("operator.log")
    }

    /// The flags connecting the operator as the world's kubectl does
    /// (context, kubeconfig, namespace) with its transport; the operator's
    /// own default poll period.
    pub fn connect_args(&self) -> Vec<String> {
        blue_e2e::connect::connect_args(&self.kube, self.transport.as_str())
    }

    /// Starts the operator with `args` (stopping a running one first).
    pub fn start_operator(&mut self, args: &[String]) -> Result<()> {
        if self.operator.is_some() {
            self.stop_operator()?;
        }
        let log = self.operator_log();
        self.operator = Some(self.spawn_operator(args, &log)?);
        Ok(())
    }

    /// Starts one more operator process with `args`, logging to `log`; the
    /// caller owns (and stops) it.
    pub fn spawn_operator(&self, args: &[String], log: &std::path::Path) -> Result<Operator> {
        Ok(Operator::start(
            &self.binary,
            args,
            &self.operator_env,
            log,
            &self.work,
        )?)
    }

    /// Stops the operator (SIGTERM, drain) and returns its exit status.
    pub fn stop_operator(&mut self) -> Result<ExitStatus> {
        let mut op = self.operator.take().context("no operator is running")?;
        Ok(op.stop()?)
    }

    /// The running operator, or an error when none runs.
    pub fn operator(&mut self) -> Result<&mut Operator> {
        self.operator.as_mut().context("no operator is running")
    }
}
