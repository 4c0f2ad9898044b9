use super::*;
use blue_kubernetes_client::ResourceDescriptor;
use clap::error::ErrorKind;
use std::sync::Mutex;
use std::time::Duration;

/// Parsing reads the environment: the tests that parse take turns, so one
/// test's variables never reach another's parse.
static ENV: Mutex<()> = Mutex::new(());

/// The variables these tests set; cleared before each parse.
const VARIABLES: [&str; 7] = [
    "BLUE_CONTEXT",
    "BLUE_NAMESPACE",
    "BLUE_WORKERS",
    "BLUE_DRAIN_TIMEOUT",
    "BLUE_TEST_HOOKS",
    "RUST_LOG",
    "RUNNER_TEST_API_TOKEN",
];

fn parse_with_env<A: clap::Args + 'static>(
    runner: &Runner<A>,
    env: &[(&str, &str)],
    args: &[&str],
) -> Result<Invocation<A>, clap::Error> {
    let _turn = ENV.lock().unwrap_or_else(|e| e.into_inner());
    for name in VARIABLES {
        std::env::remove_var(name);
    }
    for (name, value) in env {
        std::env::set_var(name, value);
    }
    let parsed = runner.parse_from(std::iter::once("op").chain(args.iter().copied()));
    for (name, _) in env {
        std::env::remove_var(name);
    }
    parsed
}

fn parse(args: &[&str]) -> Result<Invocation<NoFlags>, clap::Error> {
    parse_with_env(&Runner::new("op"), &[], args)
}

fn run_flags(args: &[&str]) -> Flags {
    match parse(args) {
        Ok(Invocation::Run(flags, _, _)) => *flags,
        Ok(_) => panic!("{args:?}: not a run"),
        Err(e) => panic!("{args:?}: {e}"),
    }
}

fn error(args: &[&str]) -> clap::Error {
    match parse(args) {
        Err(e) => e,
        Ok(_) => panic!("{args:?} parsed"),
    }
}

#[test]
fn the_command_line_is_consistent() {
    Runner::new("op").command_line().debug_assert();
}

#[test]
fn standard_flags_parse_in_both_spellings() {
    let flags = run_flags(&[
        "--context",
        "kind-dev",
        "--kubeconfig=/k",
        "-n",
        "a,b",
        "--workers",
        "3",
        "--transport=kubectl",
        "--log-format",
        "json",
        "--log-level",
        "debug",
        "--drain-timeout",
        "1m 30s",
        "--metrics-bind",
        "127.0.0.1:8080",
        "--no-watch",
    ]);
    assert_eq!(flags.context.as_deref(), Some("kind-dev"));
    assert_eq!(flags.kubeconfig, Some("/k".into()));
    assert_eq!(flags.namespaces("home"), Namespaces::from(["a", "b"]));
    assert_eq!(flags.home_namespace(None), "a");
    assert_eq!(
        (flags.workers, flags.transport),
        (Some(3), Transport::Kubectl)
    );
    assert_eq!(flags.log_format, LogFormat::Json);
    assert_eq!(flags.log_level, "debug");
    assert_eq!(flags.drain_timeout, Duration::from_secs(90));
    assert_eq!(flags.metrics_bind, Some("127.0.0.1:8080".parse().unwrap()));
    assert!(flags.no_watch);
    let kubectl = flags.kubectl_config();
    assert_eq!(kubectl.context.as_deref(), Some("kind-dev"));
    assert!(!kubectl.in_cluster);
}

#[test]
fn defaults_are_the_proxy_the_home_namespace_and_a_25_second_drain() {
    let flags = run_flags(&["--in-cluster"]);
    assert_eq!(flags.transport, Transport::Proxy);
    assert_eq!(flags.log_format, LogFormat::Text);
    assert_eq!(flags.drain_timeout, Duration::from_secs(25));
    assert_eq!(flags.namespaces("infra"), Namespaces::from("infra"));
    assert_eq!(flags.workers, None);
    assert!(flags.kubectl_config().in_cluster);
    assert!(flags.test_hooks.is_none());
    let (election, sharding) = flags.replicas("op", "infra");
    assert!(election.is_none() && sharding.is_none());
}

#[test]
fn environment_variables_set_flags_and_a_flag_wins() {
    let runner = Runner::new("op");
    let env = [
        ("BLUE_CONTEXT", "from-env"),
        ("BLUE_NAMESPACE", "x,y"),
        ("BLUE_WORKERS", "7"),
        ("BLUE_DRAIN_TIMEOUT", "85s"),
        ("RUST_LOG", "info,hyper=debug"),
    ];
    let Ok(Invocation::Run(flags, _, _)) = parse_with_env(&runner, &env, &["--workers", "2"])
    else {
        panic!("no run");
    };
    assert_eq!(flags.context.as_deref(), Some("from-env"));
    assert_eq!(flags.namespace, ["x", "y"]);
    assert_eq!(flags.workers, Some(2), "the flag wins");
    assert_eq!(flags.drain_timeout, Duration::from_secs(85));
    assert_eq!(flags.log_level, "info,hyper=debug");
    let env = [("BLUE_WORKERS", "none")];
    let err = parse_with_env(&runner, &env, &["--in-cluster"])
        .err()
        .expect("a bad variable is refused");
    assert!(err.to_string().contains("--workers"), "{err}");
}

#[test]
fn replica_flags_describe_the_election_or_the_sharding() {
    let flags = run_flags(&[
        "--context",
        "x",
        "--leader-elect",
        "--retry-period-ms",
        "100",
    ]);
    let (election, sharding) = flags.replicas("op", "infra");
    let election = election.expect("elected");
    assert_eq!(
        (
            election.lease_name.as_str(),
            election.lease_namespace.as_str()
        ),
        ("op", "infra")
    );
    assert_eq!(election.retry_period_ms, 100);
    assert!(sharding.is_none());
    let args = [
        "--in-cluster",
        "--shards",
        "4",
        "--lease-name",
        "l",
        "--leader-identity",
        "me",
    ];
    let (election, sharding) = run_flags(&args).replicas("op", "infra");
    let sharding = sharding.expect("sharded");
    assert_eq!(sharding.shards, 4);
    assert_eq!(
        (
            sharding.lease.lease_name.as_str(),
            sharding.lease.identity.as_str()
        ),
        ("l", "me")
    );
    assert!(election.is_none());
}

#[test]
fn a_mistyped_flag_is_named_with_the_flag_it_may_have_meant() {
    let err = error(&["--context", "x", "--worker", "3"]);
    assert_eq!(err.kind(), ErrorKind::UnknownArgument);
    let text = err.to_string();
    assert!(text.contains("'--worker'"), "{text}");
    assert!(text.contains("--workers"), "{text}");
}

#[test]
fn mistakes_name_the_flags_involved() {
    for (args, kind, needle) in [
        (&[][..], ErrorKind::MissingRequiredArgument, "--context"),
        (
            &["--context", "x", "--in-cluster"][..],
            ErrorKind::ArgumentConflict,
            "--in-cluster",
        ),
        (
            &["--in-cluster", "--kubeconfig", "/k"][..],
            ErrorKind::ArgumentConflict,
            "--kubeconfig",
        ),
        (
            &["--context", "x", "-A", "-n", "a"][..],
            ErrorKind::ArgumentConflict,
            "--namespace",
        ),
        (
            &["--context", "x", "--leader-elect", "--shards", "4"][..],
            ErrorKind::ArgumentConflict,
            "--shards",
        ),
        (
            &["--context", "x", "--lease-name", "l"][..],
            ErrorKind::MissingRequiredArgument,
            "--leader-elect",
        ),
        (
            &["--context", "x", "--workers", "0"][..],
            ErrorKind::ValueValidation,
            "--workers",
        ),
        (
            &["--context", "x", "--transport", "http"][..],
            ErrorKind::InvalidValue,
            "--transport",
        ),
        (
            &["--context", "x", "--log-level", "=#="][..],
            ErrorKind::ValueValidation,
            "--log-level",
        ),
        (
            &["--context", "x", "--drain-timeout", "soon"][..],
            ErrorKind::ValueValidation,
            "--drain-timeout",
        ),
        (
            &["--context", "x", "-A", "--once", "db"][..],
            ErrorKind::ArgumentConflict,
            "--once",
        ),
    ] {
        let err = error(args);
        let text = err.to_string();
        assert_eq!(err.kind(), kind, "{args:?}: {text}");
        assert!(text.contains(needle), "{args:?}: {text}");
    }
}

#[test]
fn help_works_for_the_operator_and_every_subcommand() {
    let runner = Runner::new("op").about("Manages widgets.");
    let err = parse_with_env(&runner, &[], &["--help"]).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::DisplayHelp);
    let text = err.to_string();
    assert!(
        text.starts_with("Manages widgets.\n"),
        "the operator's own words: {text}"
    );
    for flag in [
        "--context",
        "--drain-timeout",
        "terminationGracePeriodSeconds",
        "crd",
    ] {
        assert!(text.contains(flag), "{flag}: {text}");
    }
    assert!(!text.contains("--test-hooks"), "hidden: {text}");
    let err = error(&["crd", "--help"]);
    assert_eq!(err.kind(), ErrorKind::DisplayHelp);
    assert!(err.to_string().starts_with("Print the CRDs"), "{err}");
    assert!(err.to_string().contains("--no-cel"), "{err}");
    let err = error(&["help", "crd"]);
    assert_eq!(err.kind(), ErrorKind::DisplayHelp);
}

#[test]
fn help_shows_which_variables_set_a_flag_but_never_their_values() {
    let env = [
        ("BLUE_CONTEXT", "prod-context-from-env"),
        ("BLUE_NAMESPACE", "ns-from-env"),
    ];
    let err = parse_with_env(&Runner::new("op"), &env, &["--help"])
        .err()
        .unwrap();
    assert_eq!(err.kind(), ErrorKind::DisplayHelp);
    let text = err.to_string();
    assert!(text.contains("BLUE_CONTEXT"), "{text}");
    assert!(!text.contains("from-env"), "a value was shown: {text}");
}

/// An operator's own flag that carries a credential.
#[derive(Clone, Debug, clap::Args)]
struct TokenFlags {
    /// The API token
    #[arg(long, env = "RUNNER_TEST_API_TOKEN", value_parser = at_least_ten)]
    api_token: Option<String>,
    /// Retries
    #[arg(long)]
    retries: Option<u8>,
}

fn at_least_ten(text: &str) -> Result<String, String> {
    match text.len() >= 10 {
        true => Ok(text.to_string()),
        false => Err("too short".into()),
    }
}

#[test]
fn an_invalid_value_of_a_credential_flag_is_named_but_never_shown() {
    let runner = Runner::with_flags::<TokenFlags>("op");
    for (env, args) in [
        (&[][..], &["--in-cluster", "--api-token", "s3cr3t"][..]),
        (
            &[("RUNNER_TEST_API_TOKEN", "s3cr3t")][..],
            &["--in-cluster"][..],
        ),
    ] {
        let err = parse_with_env(&runner, env, args).err().expect("refused");
        let text = err.to_string();
        assert_eq!(err.kind(), ErrorKind::ValueValidation, "{text}");
        assert!(!text.contains("s3cr3t"), "the value was shown: {text}");
        assert!(text.contains("'--api-token <API_TOKEN>'"), "named: {text}");
    }
    // Other values are shown: they help, and they are no secret.
    let args = ["--in-cluster", "--retries", "many"];
    let err = parse_with_env(&runner, &[], &args).err().unwrap();
    assert!(err.to_string().contains("'many'"), "{err}");
}

#[test]
fn crd_takes_only_its_own_flag_and_needs_no_connection() {
    assert!(matches!(
        parse(&["crd"]),
        Ok(Invocation::Crd {
            cel: true,
            webhook: None,
            migration: None
        })
    ));
    let no_cel = parse(&["crd", "--no-cel"]);
    assert!(matches!(
        no_cel,
        Ok(Invocation::Crd {
            cel: false,
            webhook: None,
            migration: None
        })
    ));
    let err = error(&["crd", "--context", "x"]);
    assert_eq!(err.kind(), ErrorKind::UnknownArgument);
    assert!(err.to_string().contains("'--context'"), "{err}");
}

fn widgets() -> ResourceSchema {
    ResourceSchema::new(ResourceDescriptor::new(
        "example.com",
        "v1",
        "widgets",
        "Widget",
    ))
}

fn gadgets() -> ResourceSchema {
    ResourceSchema::new(ResourceDescriptor::new(
        "example.com",
        "v1",
        "gadgets",
        "Gadget",
    ))
}

#[test]
fn crd_prints_every_declared_crd_with_or_without_cel() {
    let crds = [
        (widgets(), CrdConfig::default()),
        (
            gadgets(),
            CrdConfig::default().with_short_names(vec!["gdg".into()]),
        ),
    ];
    let yaml = crd::yaml("op", &crds, true, None).unwrap();
    assert!(
        yaml.starts_with("# Generated by `op crd`: do not edit.\n"),
        "{yaml}"
    );
    assert_eq!(yaml.matches("\n---\n").count(), 1, "{yaml}");
    let widgets_at = yaml.find("name: widgets.example.com").unwrap();
    let gadgets_at = yaml.find("name: gadgets.example.com").unwrap();
    assert!(widgets_at < gadgets_at, "in the order declared");
    assert!(yaml.contains("- gdg"), "{yaml}");
    assert!(yaml.contains("x-kubernetes-validations"));
    let without = crd::yaml("op", &crds, false, None).unwrap();
    assert!(!without.contains("x-kubernetes-validations"), "{without}");
}

#[derive(Clone, Debug, clap::Args)]
struct OwnFlags {
    /// The Alertmanager to manage silences on
    #[arg(long, env = "RUNNER_TEST_ALERTMANAGER")]
    alertmanager: String,
}

#[derive(Clone, Debug, PartialEq, Eq, clap::Subcommand)]
enum Tools {
    /// Print what would be done
    Plan {
        /// Only this resource
        #[arg(long)]
        only: Option<String>,
    },
}

#[test]
fn an_operator_adds_flags_and_subcommands_of_its_own() {
    let runner = Runner::with_flags::<OwnFlags>("op").command(|_: Tools, _, _| Ok(()));
    runner.command_line().debug_assert();
    let args = ["--context", "x", "--alertmanager", "http://am"];
    let Ok(Invocation::Run(flags, own, _)) = parse_with_env(&runner, &[], &args) else {
        panic!("no run");
    };
    assert_eq!(
        (flags.context.as_deref(), own.alertmanager.as_str()),
        (Some("x"), "http://am")
    );
    let err = parse_with_env(&runner, &[], &["--context", "x"])
        .err()
        .unwrap();
    assert!(err.to_string().contains("--alertmanager"), "{err}");
    let args = ["--alertmanager", "http://am", "plan", "--only", "w"];
    let Ok(Invocation::Command(matches, _, _)) = parse_with_env(&runner, &[], &args) else {
        panic!("no subcommand");
    };
    let only = Some("w".to_string());
    assert_eq!(
        Tools::from_arg_matches(&matches).unwrap(),
        Tools::Plan { only }
    );
    let err = parse_with_env(&runner, &[], &["plan", "--help"])
        .err()
        .unwrap();
    assert_eq!(err.kind(), ErrorKind::DisplayHelp);
}

#[test]
fn test_hooks_are_off_by_default_and_checked_when_given() {
    let runner = Runner::new("op").test_hooks(&["audit-steps", "fail-step"]);
    let Ok(Invocation::Run(_, _, hooks)) = parse_with_env(&runner, &[], &["--in-cluster"]) else {
        panic!("no run");
    };
    assert!(hooks.is_empty() && hooks.pass_hooks().is_none());
    let spec = "audit-steps, fail-step=/tmp/f,kill:after-step:role,service-host=10.0.0.1";
    let args = ["--in-cluster", "--test-hooks", spec];
    let Ok(Invocation::Run(flags, _, hooks)) = parse_with_env(&runner, &[], &args) else {
        panic!("no run");
    };
    assert!(hooks.has("audit-steps") && !hooks.has("dir"));
    assert_eq!(hooks.value("fail-step"), Some("/tmp/f"));
    assert_eq!(hooks.pass_hooks().unwrap().hooks().len(), 1);
    let mut kubectl = flags.kubectl_config();
    hooks.apply(&mut kubectl);
    assert_eq!(kubectl.service_host.as_deref(), Some("10.0.0.1"));
    let env = [("BLUE_TEST_HOOKS", "audit-steps")];
    let Ok(Invocation::Run(_, _, hooks)) = parse_with_env(&runner, &env, &["--in-cluster"]) else {
        panic!("no run");
    };
    assert!(hooks.has("audit-steps"), "from the environment");
    for (spec, needle) in [
        ("audit-stpes", "`audit-stpes`: unknown"),
        ("pause:after-converge", "needs dir=PATH"),
        ("stop:after-converge", "unknown"),
        ("audit-steps,audit-steps", "twice"),
    ] {
        let args = ["--in-cluster", "--test-hooks", spec];
        let err = parse_with_env(&runner, &[], &args).err().expect(spec);
        assert_eq!(err.kind(), ErrorKind::InvalidValue, "{spec}");
        assert!(err.to_string().contains(needle), "{spec}: {err}");
    }
}

#[test]
fn a_bare_level_applies_to_the_operator_and_the_library_only() {
    let filter = logging::filter("debug", "silence_operator").to_string();
    for directive in [
        "warn",
        "silence_operator=debug",
        "blue_kubernetes=debug",
        "blue_kubernetes_client=debug",
    ] {
        assert!(filter.contains(directive), "{directive}: {filter}");
    }
    let given = logging::filter("info,hyper=debug", "op").to_string();
    let mut directives: Vec<_> = given.split(',').collect();
    directives.sort();
    assert_eq!(directives, ["hyper=debug", "info"], "taken as given");
}

#[tokio::test(start_paused = true)]
async fn the_drain_ends_at_its_timeout_when_a_reconcile_never_finishes() {
    let started = tokio::time::Instant::now();
    let never = std::future::pending::<()>();
    let drained = drain::bounded(never, Duration::from_secs(25), std::future::pending()).await;
    assert_eq!(drained, Drained::TimedOut);
    assert_eq!(started.elapsed(), Duration::from_secs(25));
}

#[tokio::test(start_paused = true)]
async fn the_drain_ends_when_the_reconciles_do_or_at_a_second_signal() {
    let started = tokio::time::Instant::now();
    let stop = tokio::time::sleep(Duration::from_secs(3));
    let drained = drain::bounded(stop, Duration::from_secs(25), std::future::pending()).await;
    assert_eq!(
        (drained, started.elapsed()),
        (Drained::Finished, Duration::from_secs(3))
    );
    let second = tokio::time::sleep(Duration::from_secs(1));
    let never = std::future::pending::<()>();
    let drained = drain::bounded(never, Duration::from_secs(25), second).await;
    assert_eq!(drained, Drained::Interrupted);
}

#[test]
fn once_names_a_resource_by_kind_or_plural_when_there_are_several() {
    let kinds = [widgets(), gadgets()];
    let descriptors = || kinds.iter().map(|s| s.descriptor());
    assert_eq!(
        serve::once_target(descriptors(), "Gadget/g1"),
        Ok((1, "g1"))
    );
    assert_eq!(serve::once_target(descriptors(), "widgets/w"), Ok((0, "w")));
    assert_eq!(
        serve::once_target(descriptors(), "gadgets.example.com/g"),
        Ok((1, "g"))
    );
    let err = serve::once_target(descriptors(), "w").unwrap_err();
    assert!(err.contains("Widget, Gadget"), "{err}");
    assert!(serve::once_target(descriptors(), "Machine/m").is_err());
    assert!(serve::once_target(descriptors(), "Widget/").is_err());
    let one = || kinds[..1].iter().map(|s| s.descriptor());
    assert_eq!(serve::once_target(one(), "w"), Ok((0, "w")));
}

#[cfg(feature = "kube")]
#[tokio::test]
async fn the_kube_transport_names_what_is_wrong_and_never_quotes_the_kubeconfig() {
    let dir = std::env::temp_dir().join(format!("runner-kube-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("config");
    let user = "users: [{name: u, user: {token: t0p-s3cr3t}}]";
    // Plain HTTP: this crate alone brings no TLS stack (the binary picks one).
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:1'}}}}]\n\
         contexts: [{{name: dev, context: {{cluster: c, user: u}}}}]\n{user}\n"
    );
    std::fs::write(&kubeconfig, text).unwrap();
    let path = kubeconfig.display().to_string();
    let flags = |context: &str, path: &str| {
        let args = [
            "--context",
            context,
            "--kubeconfig",
            path,
            "--transport",
            "kube",
        ];
        run_flags(&args)
    };
    assert_eq!(flags("dev", &path).transport, Transport::Kube);
    assert!(!Transport::Kube.runs_kubectl() && Transport::Proxy.runs_kubectl());
    assert!(super::kube::connect(&flags("dev", &path)).await.is_ok());
    let missing = super::kube::connect(&flags("prod", &path))
        .await
        .err()
        .unwrap();
    let missing = missing.to_string();
    assert!(missing.contains("context prod is missing"), "{missing}");
    let unreadable = dir.join("absent").display().to_string();
    let err = super::kube::connect(&flags("dev", &unreadable))
        .await
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("is not a readable kubeconfig"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(!missing.contains("s3cr3t") && !err.to_string().contains("s3cr3t"));
}
