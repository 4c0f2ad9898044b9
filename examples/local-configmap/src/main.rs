//! `local-configmap-operator`: runs the blue-kubernetes controller with the
//! `LocalConfigMap` package until SIGTERM or SIGINT.
//!
//! Logs go to stderr through `tracing` (see [`logging`]): a startup line,
//! preflight problems, one line per phase transition, infrastructure effect,
//! callback failure or health change; never configuration values.

use anyhow::{Context, Result};
use blue_kubernetes::config::{preflight, Namespaces};
use blue_kubernetes::replicas::{LeaderElectionConfig, ShardingConfig};
use blue_kubernetes::telemetry::{serve_http, Stats};
use blue_kubernetes::{controller, start, Config, Package, Runtime};
use blue_kubernetes_client::{kubectl_client, RequestParams};
use local_configmap_operator::audit::AuditLog;
use local_configmap_operator::cli::{self, Args, Command, Transport};
use local_configmap_operator::instrumentation::Instrumentation;
use local_configmap_operator::logging;
use local_configmap_operator::package::{self, Effect, LocalConfigMaps};
use local_configmap_operator::replicas;
use local_configmap_operator::transport::{connect_transport, Connected};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};

/// The component name Events are reported by.
const COMPONENT: &str = "local-configmap-operator";

fn main() -> ExitCode {
    let args = match cli::parse(std::env::args().skip(1)) {
        Ok(Command::Help) => {
            println!("{}", cli::USAGE);
            return ExitCode::SUCCESS;
        }
        Ok(Command::Crd { cel }) => {
            return match package::crd_yaml(cel) {
                Ok(yaml) => {
                    print!("{yaml}");
                    ExitCode::SUCCESS
                }
                Err(err) => {
                    eprintln!("error: {err}");
                    ExitCode::FAILURE
                }
            };
        }
        Ok(Command::Run(args)) => *args,
        Err(message) => {
            eprintln!("error: {message}\n\n{}", cli::USAGE);
            return ExitCode::from(2);
        }
    };
    logging::init(args.json_logs);
    // Two runtime threads suffice: kubectl runs as child processes and the
    // package's callbacks are asynchronous.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build();
    let result = runtime
        .context("starting the tokio runtime")
        .and_then(|rt| rt.block_on(run(args)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<()> {
    // Install the handlers first: a signal that arrives during startup must
    // still lead to a graceful stop, not the default termination.
    let mut terminate =
        signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;

    let namespaces = args.namespaces();
    let home = args.home_namespace();
    let leader_election = args.leader_election(&home);
    let sharding = args.sharding(&home);
    // Before connecting: an unusable --audit-file fails at once.
    let aids = instrumentation(&args, &leader_election, &sharding)?;
    let connection = if args.in_cluster {
        "in-cluster".to_string()
    } else {
        format!("context {}", args.context.as_deref().unwrap_or_default())
    };
    let kubectl_reads_kubeconfig = args.transport != Transport::Kube;
    if !args.skip_preflight && !args.in_cluster && kubectl_reads_kubeconfig {
        // Asked first, through one kubectl run: with a missing context every
        // later check (and the proxy's start) would only say that the server
        // did not answer. kube-rs reports a missing context itself.
        let kubectl = kubectl_client(args.kubectl_options()).context("configuring kubectl")?;
        let context = kubectl.context().to_string();
        let lookup = ["config", "get-contexts", context.as_str(), "-o", "name"];
        if kubectl
            .request(&lookup, RequestParams::raw())
            .await
            .is_err()
        {
            anyhow::bail!("preflight: context {context} does not exist in the kubeconfig");
        }
    }
    let transport_kind = args.transport;
    let Connected { transport, proxy } = connect_transport(&args).await?;
    let on_effect = Arc::new(|effect: &Effect| tracing::info!("{effect}"));
    let local_config_maps = LocalConfigMaps::new(on_effect)
        .on(args.descriptor())
        .with_aids(aids);
    let package = Package::new(local_config_maps)?;
    let mut config = Config::new(transport.into_client(), vec![package]);
    config.namespace = namespaces.clone();
    config.names = package::names();
    config.watch = !args.no_watch;
    // Test-only: BLUE_TEST_HOOKS pauses or kills this process at a boundary.
    config.test_hooks = blue_kubernetes::test_hooks::TestHooks::from_env()?;
    if let Some(poll_ms) = args.poll_ms {
        config.poll_ms = poll_ms;
    }
    if let Some(resync_ms) = args.resync_ms {
        config.resync_ms = resync_ms;
    }
    if let Some(heartbeat_ms) = args.status_heartbeat_ms {
        config.status_heartbeat_ms = heartbeat_ms;
    }
    if let Some(slack_ms) = args.timer_slack_ms {
        config.timer_slack_ms = slack_ms;
    }
    config.workers = args.workers.unwrap_or(cli::DEFAULT_WORKERS);
    config.log_callback_errors = !args.hide_callback_errors;
    if !args.no_events {
        config.event_component = Some(COMPONENT.to_string());
    }
    config.leader_election = leader_election;
    config.sharding = sharding;
    let replicas =
        replicas::startup_note(config.leader_election.as_ref(), config.sharding.as_ref());
    // The per-call kubectl transport cannot watch: it lists.
    let discovery = if config.watch && transport_kind != Transport::Kubectl {
        format!("watches, full list every {} ms", config.resync_ms)
    } else {
        format!("list every {} ms", config.poll_ms)
    };
    let elected = config.leader_election.is_some();
    let controller = controller(config)?;
    if let Some(proxy) = proxy {
        controller.metrics().register_proxy(proxy);
    }
    if !args.skip_preflight {
        let problems = preflight(&controller).await;
        for problem in &problems {
            tracing::error!(
                "preflight ({connection}, {}): {problem}",
                scope(&namespaces)
            );
        }
        anyhow::ensure!(
            problems.is_empty(),
            "preflight found {} problem(s); not starting",
            problems.len()
        );
    }
    let runtime = start(controller)?;
    tracing::info!(
        "watching {}.{} in {} ({connection}, {} transport, {discovery}{replicas})",
        package::PLURAL,
        package::GROUP,
        scope(&namespaces),
        transport_kind.as_str(),
    );
    let server = match args.metrics_bind {
        None => None,
        Some(address) => {
            let metrics = runtime.controller().metrics().clone();
            let server = serve_http(address, metrics, runtime.health())
                .await
                .context("opening the --metrics-bind listener")?;
            tracing::info!(
                "serving /metrics, /healthz and /readyz on http://{}",
                server.address()
            );
            Some(server)
        }
    };

    let mut health = Health {
        elected,
        ..Health::default()
    };
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    let signal_name = loop {
        tokio::select! {
            _ = terminate.recv() => break "SIGTERM",
            _ = interrupt.recv() => break "SIGINT",
            _ = ticks.tick() => health.check(&runtime),
        }
    };
    tracing::info!("{signal_name} received; finishing running reconciles");
    runtime.stop().await;
    if let Some(server) = server {
        server.stop().await;
    }
    tracing::info!("stopped");
    Ok(())
}

/// `--audit-file` (naming the replica by [`replicas::audit_name`]) and
/// `--callback-delay-ms`.
fn instrumentation(
    args: &Args,
    election: &Option<LeaderElectionConfig>,
    sharding: &Option<ShardingConfig>,
) -> Result<Instrumentation> {
    let audit = match &args.audit_file {
        None => None,
        Some(path) => {
            let replica = replicas::audit_name(
                election.as_ref(),
                sharding.as_ref(),
                args.leader_identity.as_deref(),
            );
            let log = AuditLog::open(path, replica)
                .with_context(|| format!("opening --audit-file {}", path.display()))?;
            Some(Arc::new(log))
        }
    };
    Ok(Instrumentation {
        audit,
        converge_delay: args
            .callback_delay_ms
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis),
    })
}

/// `namespace a`, `namespaces a,b` or `all namespaces`, for log lines.
fn scope(namespaces: &Namespaces) -> String {
    match namespaces {
        Namespaces::Only(names) if names.len() == 1 => format!("namespace {namespaces}"),
        Namespaces::Only(_) => format!("namespaces {namespaces}"),
        Namespaces::All => namespaces.to_string(),
    }
}

/// Turns the runtime's counters into "failing"/"recovered" lines, and
/// leadership into "leading"/"not leading" lines, logged only when the
/// state flips, so a long outage costs one line.
#[derive(Default)]
struct Health {
    last: Stats,
    failing: bool,
    /// Leader election is on, so leadership flips are worth a line.
    elected: bool,
    leading: bool,
}

impl Health {
    fn check(&mut self, runtime: &Runtime) {
        let now = runtime.stats();
        let leading = runtime.is_leader();
        if self.elected && leading != self.leading {
            let line = if leading {
                "leading: this replica reconciles"
            } else {
                "not leading: waiting for the lease"
            };
            tracing::info!("{line}");
            self.leading = leading;
        }
        if now.fenced_writes > self.last.fenced_writes {
            tracing::warn!("lease expired while reconciles ran: their status writes were refused");
        }
        let failures = |s: &Stats| s.transport_failures.values().sum::<u64>() + s.reconcile_errors;
        let failed = failures(&now) > failures(&self.last);
        // Lists are rare while watching: events and reconciles show
        // success too.
        let progressed = now.polls > self.last.polls
            || now.watch_events > self.last.watch_events
            || now.reconciles > self.last.reconciles;
        let succeeded = progressed && !failed;
        if failed && !self.failing {
            tracing::warn!("cluster calls failing (cluster unreachable, credentials rejected or a write refused); retrying");
            self.failing = true;
        } else if succeeded && self.failing {
            tracing::info!("cluster calls succeeding again");
            self.failing = false;
        }
        self.last = now;
    }
}
