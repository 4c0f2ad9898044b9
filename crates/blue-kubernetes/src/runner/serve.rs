//! Running the operator: connect, build the packages and the controller,
//! preflight, start, serve `/metrics`, wait for a signal, drain.

use super::connect::connect_transport;
use super::drain::{self, Signals};
use super::health_log::HealthLog;
use super::{BoxError, Connected, Flags, Runner, TestHookSet, Transport};
use crate::{config::Namespaces, Config, Controller, Report};
use blue_kubernetes_client::{kubectl_client, KubectlConfig, RequestParams, ResourceDescriptor};
use std::path::Path;
use std::time::Duration;

/// Runs the operator on a tokio runtime of its own. Two threads suffice:
/// kubectl runs as child processes, and callbacks that block go through
/// [`blocking`](crate::package::blocking).
pub(crate) fn block_on<A: clap::Args + 'static>(
    runner: Runner<A>,
    flags: Flags,
    args: A,
    hooks: TestHookSet,
) -> Result<(), BoxError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("starting the tokio runtime: {e}"))?
        .block_on(serve(runner, flags, args, hooks))
}

async fn serve<A: clap::Args + 'static>(
    runner: Runner<A>,
    flags: Flags,
    args: A,
    hooks: TestHookSet,
) -> Result<(), BoxError> {
    let mut signals =
        Signals::install().map_err(|e| format!("installing the signal handlers: {e}"))?;
    let home = flags.home_namespace(hooks.value("service-account-dir").map(Path::new));
    let namespaces = flags.namespaces(&home);
    let mut kubectl = flags.kubectl_config();
    hooks.apply(&mut kubectl);
    // kube-rs reports a missing context itself (and kubectl may be absent).
    if !flags.skip_preflight && !flags.in_cluster && flags.transport.runs_kubectl() {
        context_exists(&kubectl).await?;
    }
    let (transport, proxy) = connect_transport(&flags, kubectl).await?;
    let (election, sharding) = flags.replicas(runner.name, &home);
    let connected = Connected {
        flags: &flags,
        args: &args,
        test_hooks: &hooks,
        transport: transport.clone(),
        namespaces: &namespaces,
        home_namespace: &home,
        leader_election: election.as_ref(),
        sharding: sharding.as_ref(),
    };
    let mut packages = Vec::new();
    for build in runner.packages {
        packages.extend(build(&connected)?);
    }
    let mut config = Config::new(transport.clone().into_client(), packages);
    config.workers = runner.workers.unwrap_or(config.workers);
    flags.apply(&mut config);
    config.namespace = namespaces.clone();
    config.names = runner.names;
    config.event_component = (!flags.no_events).then(|| runner.name.to_string());
    config.test_hooks = hooks.pass_hooks().cloned();
    (config.leader_election, config.sharding) = (election.clone(), sharding.clone());
    if let Some(configure) = runner.configure {
        config = configure(config, &connected)?;
    }
    let connection = match flags.in_cluster {
        true => "in-cluster".to_string(),
        false => format!("context {}", flags.context.as_deref().unwrap_or_default()),
    };
    let startup = startup_line(&config, &flags, &connection);
    let elected = config.leader_election.is_some();
    let controller = crate::controller(config)?;
    if let Some(proxy) = proxy {
        controller.metrics().register_proxy(proxy);
    }
    if !flags.skip_preflight {
        preflight(&controller, &connection, &namespaces, &flags, &home).await?;
    }
    if let Some(target) = &flags.once {
        return once(&controller, target, &home).await;
    }
    // Before the controller's first write, on every replica: before 1.27
    // every UPDATE reaches the webhook, the controller's own included.
    #[cfg(feature = "webhook")]
    let webhook =
        super::webhook::run::start(&flags.webhook, runner.name, &controller, &transport).await?;
    let runtime = crate::start(controller)?;
    #[cfg(feature = "webhook")]
    if let Some(webhook) = &webhook {
        runtime.health().gate(webhook.serving());
    }
    tracing::info!("{startup}");
    let migration = super::migration::start(
        &flags.migration,
        &hooks,
        runner.name,
        &home,
        transport.clone().into_client(),
        kinds(runtime.controller()),
        runtime.controller().metrics(),
    )?;
    let server = match flags.metrics_bind {
        None => None,
        Some(address) => {
            let metrics = runtime.controller().metrics().clone();
            let server = crate::telemetry::serve_http(address, metrics, runtime.health())
                .await
                .map_err(|e| format!("opening the --metrics-bind listener: {e}"))?;
            let address = server.address();
            tracing::info!("serving /metrics, /healthz and /readyz on http://{address}");
            Some(server)
        }
    };
    let mut health = HealthLog::new(elected);
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    let signal = loop {
        tokio::select! {
            signal = signals.next() => break signal,
            _ = ticks.tick() => health.check(&runtime),
        }
    };
    // First: its writes are no reconcile's, and it starts over next time.
    if let Some(migration) = migration {
        migration.stop().await;
    }
    let timeout = flags.drain_timeout;
    tracing::info!(
        "{signal} received; finishing running reconciles (at most {})",
        humantime::format_duration(timeout)
    );
    let again = async {
        signals.next().await;
    };
    drain::report(drain::drain(runtime, timeout, again).await, timeout);
    if let Some(server) = server {
        server.stop().await;
    }
    // Last: the drain's final writes (finalizers, status) pass through it.
    #[cfg(feature = "webhook")]
    if let Some(webhook) = webhook {
        webhook.stop().await;
    }
    Ok(())
}

/// With a missing context every later check (and the proxy's start)
/// would only say that the server did not answer: asked first, through
/// one kubectl run.
async fn context_exists(kubectl: &KubectlConfig) -> Result<(), BoxError> {
    let client = kubectl_client(kubectl.clone())?;
    let context = client.context().to_string();
    let lookup = ["config", "get-contexts", context.as_str(), "-o", "name"];
    match client.request(&lookup, RequestParams::raw()).await {
        Ok(_) => Ok(()),
        Err(_) => {
            Err(format!("preflight: context {context} does not exist in the kubeconfig").into())
        }
    }
}

/// Runs the startup preflight; each problem is one ERROR line.
async fn preflight(
    controller: &Controller,
    connection: &str,
    namespaces: &Namespaces,
    flags: &Flags,
    home: &str,
) -> Result<(), BoxError> {
    #[allow(unused_mut)]
    let mut problems = crate::config::preflight(controller).await;
    if flags.migration.migrate_storage {
        let client = controller.config.client.as_ref();
        let kinds = kinds(controller);
        problems.extend(super::migration::preflight(client, &kinds, home).await);
    }
    #[cfg(feature = "webhook")]
    for check in super::webhook::run::access_checks(&flags.webhook, &controller.config.packages) {
        match controller.config.client.can_i(&check).await {
            Ok(true) => {}
            Ok(false) => problems.push(crate::config::Problem::Forbidden(check)),
            Err(e) => problems.push(crate::config::Problem::CheckFailed {
                what: format!("whether RBAC allows {check}"),
                kind: e.kind(),
            }),
        }
    }
    #[cfg(not(feature = "webhook"))]
    let _ = flags;
    for problem in &problems {
        tracing::error!("preflight ({connection}, {}): {problem}", scope(namespaces));
    }
    match problems.len() {
        0 => Ok(()),
        n => Err(format!("preflight found {n} problem(s); not starting").into()),
    }
}

/// The kinds of `controller`'s packages.
fn kinds(controller: &Controller) -> Vec<ResourceDescriptor> {
    let packages = controller.config.packages.iter();
    packages.map(|p| p.descriptor().clone()).collect()
}

/// `--once [KIND/]NAME`: one pass over one resource in `namespace`.
async fn once(controller: &Controller, target: &str, namespace: &str) -> Result<(), BoxError> {
    let packages = &controller.config.packages;
    let descriptors = packages.iter().map(|p| p.descriptor());
    let (index, name) = once_target(descriptors, target)?;
    let package = &packages[index];
    let namespace = match package.descriptor().namespaced {
        true => namespace,
        false => "",
    };
    let report: Report = crate::reconcile(controller, package, namespace, name).await?;
    println!("{namespace}/{name}: {report:?}");
    Ok(())
}

/// Which of the packages (by their `descriptors`) `--once`'s `[KIND/]NAME`
/// names, and the name: KIND is a kind, plural or `plural.group` of one
/// of them, in any case; without it there must be one package only.
pub(crate) fn once_target<'t, 'd>(
    descriptors: impl Iterator<Item = &'d ResourceDescriptor> + Clone,
    target: &'t str,
) -> Result<(usize, &'t str), String> {
    let (kind, name) = match target.split_once('/') {
        Some((kind, name)) => (Some(kind), name),
        None => (None, target),
    };
    let named = |d: &ResourceDescriptor| {
        kind.is_none_or(|k| {
            [&d.kind, &d.plural, &d.qualified_plural()]
                .iter()
                .any(|n| n.eq_ignore_ascii_case(k))
        })
    };
    let found: Vec<usize> = descriptors
        .clone()
        .enumerate()
        .filter(|(_, d)| named(d))
        .map(|(i, _)| i)
        .collect();
    match (&found[..], name.is_empty()) {
        (&[index], false) => Ok((index, name)),
        _ => {
            let kinds = descriptors.map(|d| d.kind.as_str()).collect::<Vec<_>>();
            Err(format!(
                "--once needs [KIND/]NAME, KIND one of: {}",
                kinds.join(", ")
            ))
        }
    }
}

/// The startup line: what is watched where, how, and among which replicas
/// (tests wait for it: it begins with `watching`).
fn startup_line(config: &Config, flags: &Flags, connection: &str) -> String {
    let kinds = config
        .packages
        .iter()
        .map(|p| p.descriptor().qualified_plural());
    let kinds = kinds.collect::<Vec<_>>().join(", ");
    let transport = flags.transport.name();
    // The per-call kubectl transport cannot watch: it lists.
    let discovery = match config.watch && flags.transport != Transport::Kubectl {
        true => format!("watches, full list every {} ms", config.resync_ms),
        false => format!("list every {} ms", config.poll_ms),
    };
    let replicas = match (&config.sharding, &config.leader_election) {
        (Some(s), _) => format!(
            "; sharded ({} shards) on leases {}/{}-* as {}",
            s.shards, s.lease.lease_namespace, s.lease.lease_name, s.lease.identity
        ),
        (None, Some(e)) => format!(
            "; leader election on lease {}/{} as {}",
            e.lease_namespace, e.lease_name, e.identity
        ),
        (None, None) => String::new(),
    };
    let scope = scope(&config.namespace);
    format!(
        "watching {kinds} in {scope} ({connection}, {transport} transport, {discovery}{replicas})"
    )
}

/// `namespace a`, `namespaces a,b` or `all namespaces`, for log lines.
fn scope(namespaces: &Namespaces) -> String {
    match namespaces {
        Namespaces::Only(names) if names.len() == 1 => format!("namespace {namespaces}"),
        Namespaces::Only(_) => format!("namespaces {namespaces}"),
        Namespaces::All => namespaces.to_string(),
    }
}
