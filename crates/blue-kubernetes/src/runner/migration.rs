//! Storage migration from the runner: `--migrate-storage` runs it inside
//! the operator (a cluster-scoped install, whose ClusterRole grants the
//! rights), the `migrate-storage` subcommand runs it once and exits (a
//! namespace-scoped install, as a Job with a ClusterRole of its own).

use super::{BoxError, Flags, TestHookSet};
use crate::config::Problem;
use crate::migration::{Migration, MigrationError, MigrationSettings, DEFAULT_RATE_PER_SECOND};
use crate::telemetry::{Health, Metrics};
use blue_kubernetes_client::{
    AccessCheck, ApiPath, ApiRequest, Client, Method, ResourceDescriptor,
};
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
    /// Migrate the kinds' stored objects to the version the operator stores at, then retire the old versions from the CRDs' status.storedVersions (needs a ClusterRole: `crd --migration-rbac`); any replica may run it, one at a time under the Lease OPERATOR-storage-migration
    #[arg(long, env = "BLUE_MIGRATE_STORAGE", value_parser = FalseyValueParser::new())]
    pub migrate_storage: bool,
    /// Storage migration writes a second, at most [default: 50]
    #[arg(long, value_name = "N", env = "BLUE_MIGRATION_RATE", value_parser = clap::value_parser!(u32).range(1..))]
    pub migration_rate: Option<u32>,
}

impl MigrationFlags {
    /// The settings these flags ask for, for operator `name` whose Lease
    /// lives in `home` (its duration as the test hook
    /// `migration-lease-ms` says, if given).
    pub(crate) fn settings(
        &self,
        name: &str,
        home: &str,
        hooks: &TestHookSet,
    ) -> MigrationSettings {
        let mut settings = MigrationSettings::new(MigrationSettings::lease_name_of(name), home);
        settings.rate_per_second = self.migration_rate.unwrap_or(DEFAULT_RATE_PER_SECOND);
        let lease_ms = hooks
            .value("migration-lease-ms")
            .and_then(|ms| ms.parse::<u64>().ok());
        if let Some(ms) = lease_ms {
            let lease = &mut settings.lease;
            (lease.lease_duration_ms, lease.renew_deadline_ms) = (ms, ms * 2 / 3);
            lease.retry_period_ms = (ms / 6).max(1);
        }
        settings
    }
}

/// One right a migration needs: `check`, on the object `name` where
/// the generated ClusterRole grants it by name (an access review without
/// the name would be refused by such a rule).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Right {
    pub(crate) check: AccessCheck,
    pub(crate) name: Option<String>,
}

impl std::fmt::Display for Right {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.name {
            Some(name) => write!(f, "{} (named {name})", self.check),
            None => write!(f, "{}", self.check),
        }
    }
}

impl Right {
    /// Whether the authorizer allows it (a `SelfSubjectAccessReview`,
    /// with the name when there is one).
    async fn allowed(&self, client: &dyn Client) -> Result<bool, blue_kubernetes_client::Error> {
        if self.name.is_none() {
            return client.can_i(&self.check).await;
        }
        let mut review = self.check.review();
        review["spec"]["resourceAttributes"]["name"] = self.name.clone().into();
        let path = ApiPath::new([
            "apis",
            "authorization.k8s.io",
            "v1",
            "selfsubjectaccessreviews",
        ])?;
        let request = ApiRequest::new(Method::Post, path).with_body(review);
        let answer = client.send_raw(request).await?;
        let body = answer.body.unwrap_or_default();
        Ok(body["status"]["allowed"].as_bool() == Some(true))
    }
}

/// The rights a migration of `kinds` needs, its Lease in `home`: get the
/// CRDs and update their status (by name, as the generated ClusterRole
/// grants them), list and update the kinds in every namespace, and the
/// Lease.
pub(crate) fn rights(kinds: &[ResourceDescriptor], home: &str) -> Vec<Right> {
    let crds = "customresourcedefinitions";
    let group = "apiextensions.k8s.io";
    let mut rights = Vec::new();
    for kind in kinds {
        let name = Some(kind.qualified_plural());
        rights.push(Right {
            check: AccessCheck::new("", "get", group, crds),
            name: name.clone(),
        });
        let status = AccessCheck::new("", "update", group, crds).with_subresource("status");
        rights.push(Right {
            check: status,
            name,
        });
    }
    let unnamed = |check| Right { check, name: None };
    for kind in kinds {
        for verb in ["list", "update"] {
            rights.push(unnamed(AccessCheck::new(
                "",
                verb,
                &kind.group,
                &kind.plural,
            )));
        }
    }
    for verb in ["get", "create", "update"] {
        rights.push(unnamed(AccessCheck::new(
            home,
            verb,
            "coordination.k8s.io",
            "leases",
        )));
    }
    rights
}

/// The preflight of a migration of `kinds`: one problem per right the
/// authorizer refuses (or that could not be checked).
pub(crate) async fn preflight(
    client: &dyn Client,
    kinds: &[ResourceDescriptor],
    home: &str,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    for right in rights(kinds, home) {
        match right.allowed(client).await {
            Ok(true) => {}
            Ok(false) => problems.push(Problem::Forbidden(right.check)),
            Err(e) => problems.push(Problem::CheckFailed {
                what: format!("whether RBAC allows {right}"),
                kind: e.kind(),
            }),
        }
    }
    problems
}

impl<A: clap::Args + 'static> super::Runner<A> {
    /// The storage migration's manifests for the kinds declared with
    /// [`Runner::crd`](super::Runner::crd), as YAML documents each after a `---`: what `crd
    /// --migration-rbac NS/SA [--migration-job IMAGE]` prints after the
    /// CRDs (commit it with your deployment; a test can compare the two).
    ///
    /// ```
    /// use blue_kubernetes::migration::MigrationManifests;
    /// # use blue_kubernetes::{crd::CrdConfig, runner::Runner, ResourceSchema};
    /// # let widgets = blue_kubernetes_client::ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// let runner = Runner::new("widget-operator").crd(ResourceSchema::new(widgets.clone()), CrdConfig::default());
    /// let job = MigrationManifests::new("widget-operator", "ops", "widget-migration", vec![widgets])
    ///     .with_job("widget-operator:1.2");
    /// let yaml = runner.migration_yaml("ops", "widget-migration", Some("widget-operator:1.2"));
    /// assert!(yaml.contains("kind: Job") && yaml.contains("- migrate-storage"));
    /// # let _ = job;
    /// ```
    pub fn migration_yaml(
        &self,
        namespace: &str,
        service_account: &str,
        job_image: Option<&str>,
    ) -> String {
        let kinds = self.crds.iter().map(|(s, _)| s.descriptor().clone());
        let manifests = crate::migration::MigrationManifests::new(
            self.name,
            namespace,
            service_account,
            kinds.collect(),
        );
        super::crd::migration_yaml(&match job_image {
            Some(image) => manifests.with_job(image),
            None => manifests,
        })
    }
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
    hooks: &TestHookSet,
    name: &str,
    home: &str,
    client: Arc<dyn Client>,
    kinds: Vec<ResourceDescriptor>,
    metrics: &Metrics,
) -> Result<Option<Running>, BoxError> {
    if !flags.migrate_storage {
        return Ok(None);
    }
    let migration = Migration::new(client, flags.settings(name, home, hooks), metrics)?;
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
    let spec = flags.test_hooks.as_deref().unwrap_or_default();
    let hooks = TestHookSet::parse(spec, &[])?;
    let home = flags.home_namespace(hooks.value("service-account-dir").map(std::path::Path::new));
    let mut kubectl = flags.kubectl_config();
    hooks.apply(&mut kubectl);
    let (transport, _proxy) = super::connect::connect_transport(&flags, kubectl).await?;
    let client = transport.into_client();
    if !flags.skip_preflight {
        let problems = preflight(client.as_ref(), &kinds, &home).await;
        for problem in &problems {
            tracing::error!("preflight: {problem}");
        }
        if !problems.is_empty() {
            let n = problems.len();
            return Err(format!("preflight found {n} problem(s); not migrating").into());
        }
    }
    let settings = flags.migration.settings(name, &home, &hooks);
    let lease = format!("{home}/{}", settings.lease.lease_name);
    let metrics = Arc::new(Metrics::new());
    let migration = Migration::new(client, settings, &metrics)?;
    // A Job migrating many objects is watched like the operator: its
    // progress (objects rewritten, left, Conflicts, passes) on `/metrics`.
    let server = match flags.metrics_bind {
        None => None,
        Some(address) => {
            // No reflectors: live and ready while the process runs.
            let health = Arc::new(Health::new(crate::clock::system_clock(), 1_000, 0));
            let server = crate::telemetry::serve_http(address, metrics.clone(), health)
                .await
                .map_err(|e| format!("opening the --metrics-bind listener: {e}"))?;
            tracing::info!("serving /metrics on http://{}", server.address());
            Some(server)
        }
    };
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
    if let Some(server) = server {
        server.stop().await;
    }
    result?;
    tracing::info!(kinds = ?kinds_named, "storage migration done: every kind's status.storedVersions holds its storage version alone");
    Ok(())
}

/// `NAME migrate-storage`: logs as the operator does, migrates, and
/// says how it went in the exit code.
pub(crate) fn run_once(
    name: &str,
    flags: Flags,
    kinds: Vec<ResourceDescriptor>,
) -> std::process::ExitCode {
    let target = name.replace('-', "_");
    super::logging::init(flags.log_format, &flags.log_level, &target);
    match block_on(flags, name, kinds) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{}", super::chain(&*err));
            std::process::ExitCode::FAILURE
        }
    }
}

/// Runs the one-shot `migrate-storage` on a tokio runtime of its own.
fn block_on(flags: Flags, name: &str, kinds: Vec<ResourceDescriptor>) -> Result<(), BoxError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("starting the tokio runtime: {e}"))?
        .block_on(one_shot(flags, name, kinds))
}
