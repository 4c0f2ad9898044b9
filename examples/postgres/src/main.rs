//! `postgres-operator`: runs the blue-kubernetes controller with the
//! `PostgresServer` and `PostgresDatabase` packages until SIGTERM or
//! SIGINT (or, with `--once`, for one pass over one `PostgresDatabase`).

use anyhow::{Context, Result};
use blue_kubernetes::config::preflight;
use blue_kubernetes::telemetry::serve_http;
use blue_kubernetes::test_hooks::TestHooks;
use blue_kubernetes::{controller, reconcile, start, Config};
use blue_kubernetes_client::{connect, proxy_client, ProxyConfig, Transport, TransportKind};
use postgres_operator::cli::{self, Args, Command};
use postgres_operator::{logging, package};
use std::process::ExitCode;
use std::sync::Arc;
use tokio::signal::unix::{signal, SignalKind};

/// The component name Events are reported by.
const COMPONENT: &str = "postgres-operator";

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
    // callbacks are asynchronous.
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
    // Installed first: a signal during startup still stops gracefully.
    let mut terminate =
        signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;

    let kind = args.transport();
    let transport: Arc<dyn Transport> = match kind {
        TransportKind::Proxy => {
            let proxy = Arc::new(proxy_client(ProxyConfig::new(args.kubectl_options()))?);
            proxy
                .start()
                .await
                .context("starting the proxy transport")?;
            proxy
        }
        // Kubectl, and any kind the client adds later: `connect` builds it.
        _ => connect(kind, args.kubectl_options())
            .await
            .context("starting the kubectl transport")?,
    };
    let features = package::Features {
        audit_steps: args.audit_steps,
    };
    // Servers and databases, in one controller: a database's reference
    // resolves only against a kind the same controller manages.
    let packages = package::packages(features)?;
    let database = packages[1].clone();
    let namespaces = args.namespaces();
    let mut config = Config::new(transport.into_client(), packages)
        .with_names(package::names())
        .with_namespace(namespaces.clone())
        .with_watch(!args.no_watch)
        .with_workers(args.workers.unwrap_or(cli::DEFAULT_WORKERS))
        .with_log_callback_errors(!args.hide_callback_errors);
    config.test_hooks = TestHooks::from_env()?;
    if let Some(poll_ms) = args.poll_ms {
        config = config.with_poll_ms(poll_ms);
    }
    if !args.no_events {
        config = config.with_event_component(COMPONENT.to_string());
    }
    let controller = controller(config)?;
    if !args.skip_preflight {
        let problems = preflight(&controller).await;
        for problem in &problems {
            tracing::error!("preflight: {problem}");
        }
        anyhow::ensure!(
            problems.is_empty(),
            "preflight found {} problem(s); not starting",
            problems.len()
        );
    }
    if let Some(name) = &args.once {
        let namespace = args.home_namespace();
        let report = reconcile(&controller, &database, &namespace, name).await?;
        println!("{namespace}/{name}: {report:?}");
        return Ok(());
    }
    let runtime = start(controller)?;
    tracing::info!(
        "watching {} and {}.{} in {namespaces} ({kind} transport)",
        postgres_operator::postgres_server::PLURAL,
        package::PLURAL,
        package::GROUP
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
    let signal_name = tokio::select! {
        _ = terminate.recv() => "SIGTERM",
        _ = interrupt.recv() => "SIGINT",
    };
    tracing::info!("{signal_name} received; finishing running reconciles");
    runtime.stop().await;
    if let Some(server) = server {
        server.stop().await;
    }
    tracing::info!("stopped");
    Ok(())
}
