//! The runner (feature `runner`): what every operator binary needs, so a
//! binary is a few lines. It gives the standard flags, each also read
//! from an environment variable (`--help` lists them), logging to stderr
//! as text or JSON, the connection (a kubeconfig context or in-cluster,
//! over the proxy or per-call kubectl, or with the feature `kube` over
//! kube-rs's client, `--transport kube`), a startup preflight (the context,
//! discovery and RBAC), `/metrics`, `/healthz` and `/readyz`, leader
//! election or sharding, and a graceful stop: SIGTERM or SIGINT drains
//! running reconciles for at most `--drain-timeout`, which should match
//! the pod's `terminationGracePeriodSeconds`. A callback still running
//! when the process ends is cut off as by a crash: its durable steps are
//! what resume that work in the next process.
//!
//! With the feature `webhook`, `--webhook-bind` serves the packages'
//! validating admission webhook (see `runner::webhook` and the crate
//! README's "Admission"), before the controller's first write and until
//! after its last, and the conversions of the kinds serving older
//! versions, before the controller's watches (the README's "Versions and
//! upgrades").
//!
//! `NAME crd` prints the CRDs declared with [`Runner::crd`] (`--no-cel`
//! for Kubernetes before 1.25; `--webhook-service NS/NAME` adds the
//! ValidatingWebhookConfiguration and sends the CRDs' conversions to the
//! same Service; `--migration-rbac NS/SA` the storage migration's
//! ClusterRole, and with `--migration-job IMAGE` its Job).
//! `--migrate-storage` migrates the kinds' storage inside the operator;
//! `NAME migrate-storage` does it once and exits (see
//! [`migration`](crate::migration)); `--help` works for every subcommand, and a
//! mistyped flag is named in the error. `--help` names each flag's
//! environment variable but never shows the value it holds, and an
//! invalid value of a flag whose name says it may be a credential (a
//! token, password, secret, key, certificate or kubeconfig) is named in
//! the error but not shown.
//!
//! ```no_run
//! use blue_kubernetes::runner::Runner;
//! use blue_kubernetes::{config::Names, crd::CrdConfig, Package, ResourceSchema};
//! # use blue_kubernetes::{async_trait, package::NoOutputs, CallbackResult, Context, Infrastructure, Observation, Outcome};
//! # #[derive(serde::Deserialize, schemars::JsonSchema)]
//! # struct SilenceConfig { matcher: String }
//! # struct Silences;
//! # #[async_trait]
//! # impl Infrastructure for Silences {
//! #     type Config = SilenceConfig;
//! #     type Outputs = NoOutputs;
//! #     fn schema() -> ResourceSchema {
//! #         ResourceSchema::new(blue_kubernetes_client::ResourceDescriptor::new("example.com", "v1", "silences", "Silence"))
//! #     }
//! #     async fn observe(&self, _: &Context<SilenceConfig>) -> CallbackResult<Observation<NoOutputs>> { Ok(Observation::ABSENT) }
//! #     async fn converge(&self, _: &Context<SilenceConfig>) -> CallbackResult<Outcome<NoOutputs>> { Ok(Outcome::done()) }
//! #     async fn delete(&self, _: &Context<SilenceConfig>) -> CallbackResult<Outcome<NoOutputs>> { Ok(Outcome::done()) }
//! # }
//!
//! fn main() -> std::process::ExitCode {
//!     let names = Names::for_domain("example.com");
//!     Runner::new("silence-operator")
//!         .names(names.clone())
//!         .crd(ResourceSchema::of::<Silences>(), CrdConfig::default().with_names(names))
//!         .packages(|_| Ok(vec![Package::new(Silences)?]))
//!         .run()
//! }
//! ```
//!
//! An operator adds flags of its own with a `clap::Args` struct
//! ([`Runner::with_flags`]), subcommands with a `clap::Subcommand` enum
//! ([`Runner::command`]), and hooks for its own tests
//! ([`Runner::test_hooks`]). Its packages may be built from what the
//! runner connected ([`Connected`]), and [`Runner::configure`] sees the
//! controller's [`Config`] before it starts.

mod connect;
pub(crate) mod crd;
mod drain;
mod flags;
mod health_log;
mod hooks;
#[cfg(feature = "kube")]
mod kube;
mod logging;
mod migration;
#[cfg(test)]
mod migration_tests;
mod serve;
#[cfg(test)]
mod tests;
#[cfg(feature = "webhook")]
pub mod webhook;
#[cfg(test)]
mod webhook_manifest_tests;

pub use clap;
pub use drain::{drain, Drained};
pub use flags::{Flags, Transport};
pub use hooks::{TestHookError, TestHookSet};
pub use logging::LogFormat;
pub use migration::MigrationFlags;

use crate::{
    config::{Names, Namespaces},
    crd::CrdConfig,
    package::{erased::Package, schema::ResourceSchema},
    replicas::LeaderElectionConfig,
    Config,
};
use clap::{ArgMatches, Args, FromArgMatches};
use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::Arc;

/// Any error a package builder, a configuration step or a subcommand
/// returns: `?` converts the library's errors, `std::io::Error`, a
/// `String` and `anyhow::Error` into it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// No flags beyond the standard ones.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct NoFlags {}

/// What the runner parsed and connected, for building the packages
/// ([`Runner::packages`]) and adjusting the configuration
/// ([`Runner::configure`]).
#[non_exhaustive]
pub struct Connected<'a, A> {
    /// The standard flags.
    pub flags: &'a Flags,
    /// The operator's own flags.
    pub args: &'a A,
    /// `--test-hooks`: empty unless a test set it.
    pub test_hooks: &'a TestHookSet,
    /// The connected transport (`into_raw_api` for a package's own
    /// requests).
    pub transport: Arc<dyn blue_kubernetes_client::Transport>,
    /// The namespaces managed.
    pub namespaces: &'a Namespaces,
    /// The operator's own namespace: the first `--namespace`, else the
    /// pod's, else `default`.
    pub home_namespace: &'a str,
    /// With `--leader-elect`: the election (its holder identity names
    /// this replica).
    pub leader_election: Option<&'a LeaderElectionConfig>,
    /// With `--shards`: the sharding.
    pub sharding: Option<&'a crate::replicas::ShardingConfig>,
}

type PackagesFn<A> = dyn FnOnce(&Connected<'_, A>) -> Result<Vec<Package>, BoxError>;
type ConfigureFn<A> = dyn FnOnce(Config, &Connected<'_, A>) -> Result<Config, BoxError>;
type CommandFn<A> = dyn FnOnce(&ArgMatches, &Flags, &A) -> Result<(), BoxError>;
type Augment = fn(clap::Command) -> clap::Command;

/// An operator binary: its name, CRDs and packages; [`Runner::run`] parses
/// the command line and runs it. `A` holds the operator's own flags.
#[must_use = "a runner does nothing until `run`"]
pub struct Runner<A = NoFlags> {
    name: &'static str,
    about: Option<&'static str>,
    crds: Vec<(ResourceSchema, CrdConfig)>,
    packages: Vec<Box<PackagesFn<A>>>,
    configure: Option<Box<ConfigureFn<A>>>,
    names: Names,
    workers: Option<usize>,
    test_hooks: Vec<&'static str>,
    commands: Option<(Augment, Box<CommandFn<A>>)>,
}

impl Runner<NoFlags> {
    /// A runner for the operator `name` (the binary's name: the Events'
    /// component, the Lease's default name, and, with `-` as `_`, the log
    /// target a bare `--log-level` applies to).
    pub fn new(name: &'static str) -> Self {
        Self::with_flags(name)
    }

    /// [`Runner::new`] for an operator with flags of its own: `B` is a
    /// `clap::Args` struct, parsed beside the standard flags and handed to
    /// the closures as [`Connected::args`].
    ///
    /// ```
    /// use blue_kubernetes::runner::{clap, Runner};
    /// #[derive(clap::Args)]
    /// struct Flags {
    ///     /// The Alertmanager to manage silences on
    ///     #[arg(long, env = "ALERTMANAGER_URL")]
    ///     alertmanager: String,
    /// }
    /// let runner = Runner::with_flags::<Flags>("silence-operator");
    /// let help = runner.command_line().render_long_help().to_string();
    /// assert!(help.contains("--alertmanager"), "{help}");
    /// ```
    pub fn with_flags<B: clap::Args>(name: &'static str) -> Runner<B> {
        Runner {
            name,
            about: None,
            crds: Vec::new(),
            packages: Vec::new(),
            configure: None,
            names: Names::default(),
            workers: None,
            test_hooks: Vec::new(),
            commands: None,
        }
    }
}

impl<A: clap::Args + 'static> Runner<A> {
    /// The text `--help` opens with.
    pub fn about(mut self, text: &'static str) -> Self {
        self.about = Some(text);
        self
    }

    /// Adds a CRD to what `crd` prints (in the order added); its
    /// `options.cel` is what `--no-cel` sets.
    pub fn crd(mut self, schema: ResourceSchema, options: CrdConfig) -> Self {
        self.crds.push((schema, options));
        self
    }

    /// Adds a package built before anything connects.
    pub fn package(self, package: Package) -> Self {
        self.packages(move |_| Ok(vec![package]))
    }

    /// Adds the packages `build` makes once the runner has connected, from
    /// what it connected (the flags, the transport, the test hooks).
    pub fn packages<F>(mut self, build: F) -> Self
    where
        F: FnOnce(&Connected<'_, A>) -> Result<Vec<Package>, BoxError> + 'static,
    {
        self.packages.push(Box::new(build));
        self
    }

    /// The controller's names (finalizer, request annotation,
    /// destroy-protection key): set the operator's own, as its CRDs do.
    pub fn names(mut self, names: Names) -> Self {
        self.names = names;
        self
    }

    /// Concurrent reconciles unless `--workers` says otherwise (without
    /// either, the controller's default).
    pub fn default_workers(mut self, workers: usize) -> Self {
        self.workers = Some(workers);
        self
    }

    /// Accepts the operator's own test hooks `names` in `--test-hooks`
    /// (see [`TestHookSet`]).
    pub fn test_hooks(mut self, names: &[&'static str]) -> Self {
        self.test_hooks.extend_from_slice(names);
        self
    }

    /// Changes the controller's configuration after the flags set it,
    /// before the controller is built.
    pub fn configure<F>(mut self, configure: F) -> Self
    where
        F: FnOnce(Config, &Connected<'_, A>) -> Result<Config, BoxError> + 'static,
    {
        self.configure = Some(Box::new(configure));
        self
    }

    /// Adds the subcommands of `C` (a `clap::Subcommand` enum); `run`
    /// hands the one given to `handle`, with the flags, instead of running
    /// the operator.
    ///
    /// ```
    /// use blue_kubernetes::runner::{clap, Runner};
    /// #[derive(clap::Subcommand)]
    /// enum Tools {
    ///     /// Print the version
    ///     Version,
    /// }
    /// let runner = Runner::new("silence-operator").command(|tool: Tools, _flags, _args| {
    ///     match tool {
    ///         Tools::Version => println!("1.0"),
    ///     }
    ///     Ok(())
    /// });
    /// assert!(runner.command_line().find_subcommand("version").is_some());
    /// ```
    pub fn command<C, F>(mut self, handle: F) -> Self
    where
        C: clap::Subcommand,
        F: FnOnce(C, &Flags, &A) -> Result<(), BoxError> + 'static,
    {
        let run = move |matches: &ArgMatches, flags: &Flags, args: &A| {
            handle(C::from_arg_matches(matches)?, flags, args)
        };
        self.commands = Some((C::augment_subcommands, Box::new(run)));
        self
    }

    /// What `crd` prints (`cel: false` for `crd --no-cel`): a header, then
    /// the CRDs declared with [`Runner::crd`], in order, as YAML documents.
    pub fn crd_yaml(&self, cel: bool) -> Result<String, crate::Error> {
        crd::yaml(self.name, &self.crds, cel, None)
    }

    /// The ValidatingWebhookConfiguration of the kinds declared with
    /// [`Runner::crd`], as YAML: what `crd --webhook-service NS/NAME`
    /// prints after the CRDs (commit it with your deployment; a test can
    /// compare the two).
    pub fn webhook_yaml(&self, options: &crate::admission::WebhookOptions) -> String {
        crd::webhook_yaml(&self.crds, options)
    }

    /// The whole command line (flags and subcommands), as clap sees it:
    /// for tests, shell completions or a manual page.
    pub fn command_line(&self) -> clap::Command {
        let crd = crd::CrdFlags::augment_args(clap::Command::new("crd"))
            .about("Print the CRDs, e.g. for `| kubectl apply -f -`");
        let migrate = clap::Command::new(MIGRATE_STORAGE).about(
            "Migrate the kinds' stored objects to the version the operator stores at, retire the old versions from the CRDs' status.storedVersions, and exit (run it as a Job: `crd --migration-rbac NS/SA --migration-job IMAGE`)",
        );
        let command = clap::Command::new(self.name)
            .subcommand_negates_reqs(true)
            .subcommand(crd)
            .subcommand(migrate)
            .after_help(
                "Stops gracefully on SIGTERM or SIGINT: running reconciles finish first, for at most --drain-timeout.",
            );
        let command = A::augment_args(Flags::augment_args(command));
        let command = match &self.commands {
            Some((augment, _)) => augment(command),
            None => command,
        };
        // Last: the flags structs' doc comments would otherwise be taken
        // for the operator's description.
        hide_env_values(command.about(self.about).long_about(None::<&str>))
    }

    /// Parses the process's arguments and runs the operator (or the
    /// subcommand) until it stops; the exit code says how that went (2 for
    /// a usage error, which is printed with the flag it names).
    pub fn run(self) -> ExitCode {
        self.run_from(std::env::args_os())
    }

    /// [`Runner::run`] with the given arguments, the program's name first.
    pub fn run_from<I, T>(self, args: I) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let invocation = match self.parse_from(args) {
            Ok(invocation) => invocation,
            Err(err) => {
                let _ = err.print();
                return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2));
            }
        };
        let result = match invocation {
            Invocation::Crd {
                cel,
                webhook,
                migration,
            } => crd::yaml(self.name, &self.crds, cel, webhook.as_ref())
                .map(|yaml| {
                    print!("{yaml}");
                    if let Some(options) = &webhook {
                        print!("---\n{}", self.webhook_yaml(options));
                    }
                    if let Some(manifests) = &migration {
                        print!("{}", crd::migration_yaml(manifests));
                    }
                })
                .map_err(BoxError::from),
            Invocation::MigrateStorage(flags) => {
                let kinds = self.crds.iter().map(|(s, _)| s.descriptor().clone());
                return migration::run_once(self.name, *flags, kinds.collect());
            }
            Invocation::Command(matches, flags, args) => match self.commands {
                Some((_, handle)) => handle(&matches, &flags, &args),
                None => Err("no such subcommand".into()),
            },
            Invocation::Run(flags, args, hooks) => {
                let target = self.name.replace('-', "_");
                logging::init(flags.log_format, &flags.log_level, &target);
                return match serve::block_on(self, *flags, args, hooks) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(err) => {
                        tracing::error!("{}", chain(&*err));
                        ExitCode::FAILURE
                    }
                };
            }
        };
        match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("error: {}", chain(&*err));
                ExitCode::FAILURE
            }
        }
    }

    /// What the command line asks for; a usage error as clap reports it.
    fn parse_from<I, T>(&self, args: I) -> Result<Invocation<A>, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let mut command = self.command_line();
        let matches = command
            .try_get_matches_from_mut(args)
            .map_err(|e| unshown(e, &mut command))?;
        if let Some(("crd", crd)) = matches.subcommand() {
            let crd = crd::CrdFlags::from_arg_matches(crd)?;
            let webhook = crd
                .webhook(self.name)
                .map_err(|e| command.error(clap::error::ErrorKind::InvalidValue, e))?;
            let migration = crd.migration(self.name, &self.crds);
            let migration =
                migration.map_err(|e| command.error(clap::error::ErrorKind::InvalidValue, e))?;
            return Ok(Invocation::Crd {
                cel: !crd.no_cel,
                webhook,
                migration,
            });
        }
        let flags = Flags::from_arg_matches(&matches)?;
        if let Some((MIGRATE_STORAGE, _)) = matches.subcommand() {
            return Ok(Invocation::MigrateStorage(Box::new(flags)));
        }
        let args = A::from_arg_matches(&matches).map_err(|e| unshown(e, &mut command))?;
        if matches.subcommand().is_some() {
            return Ok(Invocation::Command(matches, Box::new(flags), args));
        }
        let spec = flags.test_hooks.as_deref().unwrap_or_default();
        let hooks = TestHookSet::parse(spec, &self.test_hooks)
            .map_err(|e| command.error(clap::error::ErrorKind::InvalidValue, e))?;
        Ok(Invocation::Run(Box::new(flags), args, hooks))
    }
}

/// What one command line asks for.
enum Invocation<A> {
    /// `crd [--no-cel] [--webhook-service NS/NAME ...] [--migration-rbac NS/SA ...]`.
    Crd {
        cel: bool,
        webhook: Option<crate::admission::WebhookOptions>,
        migration: Option<crate::migration::MigrationManifests>,
    },
    /// `migrate-storage`, with the standard flags.
    MigrateStorage(Box<Flags>),
    /// One of the operator's own subcommands.
    Command(ArgMatches, Box<Flags>, A),
    /// Run the operator.
    Run(Box<Flags>, A, TestHookSet),
}

/// The one-shot storage migration's subcommand.
const MIGRATE_STORAGE: &str = "migrate-storage";

/// `--help` says which variable sets a flag, never what it holds there:
/// help is pasted into tickets, and a variable may hold a credential.
fn hide_env_values(command: clap::Command) -> clap::Command {
    command
        .mut_args(|arg| arg.hide_env_values(true))
        .mut_subcommands(hide_env_values)
}

/// Words in a flag's name or value name that say its value may be a
/// credential, or a file of them.
const SECRET_WORDS: [&str; 7] = [
    "token",
    "password",
    "secret",
    "credential",
    "key",
    "cert",
    "kubeconfig",
];

/// `err`, unless it shows an invalid value of a flag whose name says it may
/// hold a credential: then an error that names the flag only (clap quotes
/// the value, and usage errors end up in terminals, CI logs and tickets).
fn unshown(err: clap::Error, command: &mut clap::Command) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !matches!(
        err.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
    ) {
        return err;
    }
    let Some(ContextValue::String(arg)) = err.get(ContextKind::InvalidArg) else {
        return err;
    };
    let lowercase = arg.to_ascii_lowercase();
    if !SECRET_WORDS.iter().any(|word| lowercase.contains(word)) {
        return err;
    }
    let message = format!("invalid value for '{arg}' (not shown: it may be a credential)");
    command.error(err.kind(), message)
}

/// `outer: inner: innermost`, as `anyhow`'s `{:#}` prints it.
fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        text = format!("{text}: {inner}");
        source = inner.source();
    }
    text
}
