//! Storage migration from the runner: `--migrate-storage` runs it inside
//! the operator (a cluster-scoped install, whose ClusterRole grants the
//! rights), the `migrate-storage` subcommand runs it once and exits (a
//! namespace-scoped install, as a Job with a ClusterRole of its own).

use super::{BoxError, Flags};
use crate::migration::{Migration, MigrationError, MigrationSettings, DEFAULT_RATE_PER_SECOND};
use crate::telemetry::Metrics;
use blue_kubernetes_client::{AccessCheck, Client, ResourceDescriptor};
use clap::builder::FalseyValueParser;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How often a running operator looks again for old stored versions once
/// a migration finished (two reads per kind: the CRD and discovery).
const LOOK_AGAIN: Duration = Duration::from_secs(60);

/// `--migrate-storage` and `--migration-rate`.
#[derive(Clone, Debug, clap::Args)]
#[group(skip)]
#[non_exhaustive]
pub struct MigrationFlags {
    /// Migrate the kinds' stored objects to the version the operator stores at, then retire the old versions from the CRDs' status.storedVersions (needs a ClusterRole: `crd --migration-rbac`); any replica may run it, one at a time under the Lease <operator>-storage-migration
    #[arg(long, env = "BLUE_MIGRATE_STORAGE", value_parser = FalseyValueParser::new())]
    pub migrate_storage: bool,
    /// Storage migration writes a second, at most [default: 50]
    #[arg(long, value_name = "N", env = "BLUE_MIGRATION_RATE", value_parser = clap::value_parser!(u32).range(1..))]
    pub migration_rate: Option<u32>,
}

impl MigrationFlags {
    /// The settings these flags ask for, for operator `name` whose Lease
    /// lives in `home`.
    pub(crate) fn settings(&self, name: &str, home: &str) -> MigrationSettings {
        let mut settings = MigrationSettings::new(MigrationSettings::lease_name_of(name), home);
        settings.rate_per_second = self.migration_rate.unwrap_or(DEFAULT_RATE_PER_SECOND);
        settings
    }
}

/// The rights a migration of `kinds` needs, its Lease in `home`: get the
/// CRDs, update their status, list and update the kinds in every
/// namespace, and the Lease.
pub(crate) fn access_checks(kinds: &[ResourceDescriptor], home: &str) -> Vec<AccessCheck> {
    let crds = "customresourcedefinitions";
    let group = "apiextensions.k8s.io";
    let mut checks = vec![
        AccessCheck::new("", "get", group, crds),
        AccessCheck::new("", "update", group, crds).with_subresource("status"),
    ];
    for kind in kinds {
        for verb in ["list", "update"] {
            checks.push(AccessCheck::new("", verb, &kind.group, &kind.plural));
        }
    }
    for verb in ["get", "create", "update"] {
        checks.push(AccessCheck::new(
            home,
            verb,
            "coordination.k8s.io",
            "leases",
        ));
    }
    checks
}

/// A migration running beside the operator.
pub(crate) struct Running {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Running {
    /// Stops it: the write in flight finishes, the Lease is released.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// With `--migrate-storage`: the migration of `kinds`, now and whenever
/// a CRD stores old versions again, until stopped.
pub(crate) fn start(
    flags: &MigrationFlags,
    name: &str,
    home: &str,
    client: Arc<dyn Client>,
    kinds: Vec<ResourceDescriptor>,
    metrics: &Metrics,
) -> Result<Option<Running>, BoxError> {
    if !flags.migrate_storage {
        return Ok(None);
    }
    let migration = Migration::new(client, flags.settings(name, home), metrics)?;
    let (stop, mut stopped) = watch::channel(false);
    let task = tokio::spawn(async move {
        loop {
            match migration.run(&kinds, stopped.clone()).await {
                Ok(()) | Err(MigrationError::Stopped) => {}
                Err(e) => tracing::error!(
                    "{e}; looking again in {}",
                    humantime::format_duration(LOOK_AGAIN)
                ),
            }
            tokio::select! {
                _ = tokio::time::sleep(LOOK_AGAIN) => {}
                _ = stopped.changed() => {}
            }
            if *stopped.borrow() {
                return;
            }
        }
    });
    Ok(Some(Running { stop, task }))
}

/// `migrate-storage`: connects as the flags say, checks the rights
/// (unless `--skip-preflight`), migrates `kinds` and returns once every
/// one's old versions are retired; SIGTERM or SIGINT stops it (a Job's
/// next attempt starts over, which is safe).
pub(crate) async fn one_shot(
    flags: Flags,
    name: &str,
    kinds: Vec<ResourceDescriptor>,
) -> Result<(), BoxError> {
    if flags.context.is_none() && !flags.in_cluster {
        return Err("migrate-storage needs --context NAME or --in-cluster".into());
    }
    let mut signals = super::drain::Signals::install()
        .map_err(|e| format!("installing the signal handlers: {e}"))?;
    let home = flags.home_namespace(None);
    let (transport, _proxy) =
        super::serve::connect_transport(&flags, flags.kubectl_config()).await?;
    let client = transport.into_client();
    if !flags.skip_preflight {
        let mut problems = 0;
        for check in access_checks(&kinds, &home) {
            match client.can_i(&check).await {
                Ok(true) => {}
                Ok(false) => {
                    problems += 1;
                    tracing::error!("preflight: RBAC does not allow {check}");
                }
                Err(e) => {
                    problems += 1;
                    tracing::error!(
                        "preflight: could not check whether RBAC allows {check} ({})",
                        e.kind()
                    );
                }
            }
        }
        if problems > 0 {
            return Err(format!("preflight found {problems} problem(s); not migrating").into());
        }
    }
    let settings = flags.migration.settings(name, &home);
    let lease = format!("{home}/{}", settings.lease.lease_name);
    let migration = Migration::new(client, settings, &Metrics::new())?;
    let kinds_named: Vec<String> = kinds.iter().map(|k| k.qualified_plural()).collect();
    tracing::info!(kinds = ?kinds_named, %lease, "storage migration begins");
    let (stop, stopped) = watch::channel(false);
    let run = migration.run(&kinds, stopped);
    tokio::pin!(run);
    let result = tokio::select! {
        result = &mut run => result,
        signal = signals.next() => {
            tracing::info!("{signal} received; stopping the storage migration");
            let _ = stop.send(true);
            run.await
        }
    };
    result?;
    tracing::info!(kinds = ?kinds_named, "storage migration done: every kind's status.storedVersions holds its storage version alone");
    Ok(())
}
