//! The per-call transport: one `kubectl` process per request.
//!
//! [`KubectlClient`] (here) builds the command line and runs one request:
//! `request` turns an input document into a private file for `-f -`,
//! `runner` and `tokio_runner` run the process, `classify` and `operation`
//! keep the only things an error may carry from it. `resources`,
//! `cluster_calls` and `leases` implement [`Client`](crate::Client) as
//! kubectl commands, `raw` implements [`RawApi`](crate::RawApi) as
//! `kubectl --raw` runs. `options`, `in_cluster` and `temp` set it up;
//! `parent_death` makes kubectl die with this process.

mod classify;
mod cluster_calls;
mod in_cluster;
mod leases;
mod operation;
mod options;
mod parent_death;
mod raw;
mod request;
mod resources;
mod runner;
mod temp;
mod tokio_runner;

#[cfg(feature = "testing")]
pub use classify::classify_output;
pub use in_cluster::IN_CLUSTER_CONTEXT;
#[cfg(feature = "testing")]
pub use operation::operation_of;
pub use options::{KubectlConfig, DEFAULT_SERVICE_ACCOUNT_DIR};
pub use request::{RequestParams, Response};
pub use runner::{Invocation, Output, Runner};
pub use tokio_runner::TokioRunner;

use crate::scratch::{self, Scratch};
use crate::Error;
use in_cluster::write_kubeconfig;
use request::substitute_input;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use temp::private_file;
use tempfile::NamedTempFile;

/// Builds a [`KubectlClient`], validating `options`.
///
/// Fails with [`Error::InvalidOption`] naming the field when:
/// - neither a non-blank `context` nor `in_cluster` is given (the user's
///   current context is never used: it may point at another cluster);
/// - `in_cluster` is combined with `context` or `kubeconfig`;
/// - a timeout is zero, or a path is empty or not UTF-8;
/// - in-cluster settings are unusable (no service host, malformed port,
///   service-account files missing).
///
/// ```
/// use blue_kubernetes_client::{kubectl_client, Error, KubectlConfig};
/// let client = kubectl_client(KubectlConfig::for_context("kind-dev")).unwrap();
/// assert_eq!(client.context(), "kind-dev");
///
/// let err = kubectl_client(KubectlConfig::default()).unwrap_err();
/// assert!(matches!(err, Error::InvalidOption { field: "context", .. }));
/// ```
pub fn kubectl_client(options: KubectlConfig) -> Result<KubectlClient, Error> {
    KubectlClient::new(options)
}

/// A [`Client`](crate::Client) that runs kubectl.
///
/// Every run is `[kubectl, --kubeconfig K (if set), --context C,
/// --request-timeout=<N>s] + args`, executed without a shell through the
/// configured [`Runner`]. In-cluster, `K` is a private generated kubeconfig
/// that lives as long as the client and is removed when it drops.
///
/// # Lists and watches
/// [`list_page`](crate::Client::list_page) returns the whole list as one
/// page (kubectl reads it in chunks of 500 itself) without a
/// resourceVersion, because kubectl prints the chunks as one `List` that has
/// none. [`watch`](crate::Client::watch) fails with
/// [`Error::Unsupported`]: a watch would hold a kubectl process (about
/// 47 MiB) open per resource type, so with this transport the caller lists
/// periodically instead. Use [`ProxyClient`](crate::ProxyClient) to watch.
pub struct KubectlClient {
    /// `[kubectl, --kubeconfig K?, --context C, --request-timeout=Ns]`.
    prefix: Vec<String>,
    context: String,
    kubeconfig: Option<PathBuf>,
    env: Vec<(String, String)>,
    timeout_ms: u64,
    temp_dir: Option<PathBuf>,
    runner: Arc<dyn Runner>,
    /// The generated in-cluster kubeconfig; deleted when the client drops.
    /// Declared before `scratch`, which holds it, so it goes first.
    _in_cluster_kubeconfig: Option<NamedTempFile>,
    /// This client's private directory for input files, made on first use.
    scratch: Mutex<Option<Scratch>>,
}

impl KubectlClient {
    fn new(options: KubectlConfig) -> Result<Self, Error> {
        if options.request_timeout_seconds == 0 {
            return Err(invalid(
                "request_timeout_seconds",
                "must be greater than zero",
            ));
        }
        if options.timeout_ms == 0 {
            return Err(invalid("timeout_ms", "must be greater than zero"));
        }
        let kubectl = path_arg(&options.kubectl, "kubectl")?;
        if options
            .env
            .iter()
            .any(|(name, _)| name.is_empty() || name.contains(['=', '\0']))
        {
            return Err(invalid(
                "env",
                "variable names must be non-empty without `=`",
            ));
        }
        // Startup: what a killed predecessor left behind goes first.
        scratch::sweep(options.temp_dir.as_deref());
        let mut scratch = None;
        let context = options
            .context
            .as_deref()
            .filter(|c| !c.trim().is_empty())
            .map(str::to_owned);

        let (context, kubeconfig, generated) = if options.in_cluster {
            if context.is_some() {
                return Err(invalid(
                    "context",
                    "cannot be combined with in_cluster, which uses its own context",
                ));
            }
            if options.kubeconfig.is_some() {
                return Err(invalid(
                    "kubeconfig",
                    "cannot be combined with in_cluster, which generates its own kubeconfig",
                ));
            }
            let dir = Scratch::create(options.temp_dir.as_deref())?;
            let file = write_kubeconfig(&options, dir.path())?;
            scratch = Some(dir);
            let path = file.path().to_path_buf();
            (IN_CLUSTER_CONTEXT.to_owned(), Some(path), Some(file))
        } else {
            let Some(context) = context else {
                return Err(invalid(
                    "context",
                    "a non-blank context is required unless in_cluster is set; the current context is never used",
                ));
            };
            (context, options.kubeconfig.clone(), None)
        };

        let mut prefix = vec![kubectl];
        if let Some(path) = &kubeconfig {
            prefix.push("--kubeconfig".to_owned());
            prefix.push(path_arg(path, "kubeconfig")?);
        }
        prefix.push("--context".to_owned());
        prefix.push(context.clone());
        prefix.push(format!(
            "--request-timeout={}s",
            options.request_timeout_seconds
        ));

        Ok(Self {
            prefix,
            context,
            kubeconfig,
            env: options.env,
            timeout_ms: options.timeout_ms,
            temp_dir: options.temp_dir,
            runner: options
                .runner
                .unwrap_or_else(|| Arc::new(TokioRunner::new())),
            _in_cluster_kubeconfig: generated,
            scratch: Mutex::new(scratch),
        })
    }

    /// The scratch directory, created on first use (or again if something
    /// removed it, e.g. a temp cleaner).
    fn scratch_dir(&self) -> Result<PathBuf, Error> {
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        match scratch.as_ref() {
            Some(dir) if dir.path().is_dir() => Ok(dir.path().to_path_buf()),
            _ => {
                let dir = Scratch::create(self.temp_dir.as_deref())?;
                let path = dir.path().to_path_buf();
                *scratch = Some(dir);
                Ok(path)
            }
        }
    }

    /// The context every run uses (the generated one in-cluster).
    pub fn context(&self) -> &str {
        &self.context
    }

    /// The kubeconfig every run uses, if any: the configured one, or the
    /// generated in-cluster one.
    pub fn kubeconfig(&self) -> Option<&Path> {
        self.kubeconfig.as_deref()
    }

    /// The command line before the request's arguments:
    /// `[kubectl, --kubeconfig K?, --context C, --request-timeout=Ns]`.
    ///
    /// ```
    /// use blue_kubernetes_client::{kubectl_client, KubectlConfig};
    /// let client = kubectl_client(KubectlConfig::for_context("dev")).unwrap();
    /// assert_eq!(client.base_argv(), ["kubectl", "--context", "dev", "--request-timeout=30s"]);
    /// ```
    pub fn base_argv(&self) -> &[String] {
        &self.prefix
    }

    /// Runs kubectl with `args` appended to [`base_argv`](Self::base_argv).
    ///
    /// - `options.input` is written to a private (0600) temporary file whose
    ///   path replaces the single `-f -` (`--filename -`, `-f=-`,
    ///   `--filename=-`) in `args`; an input without such an argument, or
    ///   such an argument without an input, is an [`Error::InvalidOption`].
    ///   The file is removed however the request ends (success, failure,
    ///   timeout, cancellation, panic).
    /// - The process deadline is `options.timeout_ms` or the client's.
    /// - A non-zero exit is [`Error::Kubectl`] with the exit code, the
    ///   operation and a classification of kubectl's output; the output itself
    ///   is dropped.
    /// - Success returns [`Response::Text`] when `options.raw`, otherwise
    ///   [`Response::Json`] (`None` for empty output, [`Error::Decode`] for
    ///   anything that is not JSON).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use blue_kubernetes_client::{kubectl_client, Invocation, KubectlConfig, Output, RequestParams};
    /// let fake = |_inv: Invocation| async {
    ///     Ok(Output { exit_code: 0, stdout: r#"{"kind":"ConfigMap"}"#.into(), stderr: String::new() })
    /// };
    /// let client = kubectl_client(KubectlConfig::for_context("dev").with_runner(fake)).unwrap();
    /// let response = client
    ///     .request(&["get", "configmap", "cm", "-o", "json"], RequestParams::default())
    ///     .await
    ///     .unwrap();
    /// assert_eq!(response.as_json().unwrap()["kind"], "ConfigMap");
    /// # });
    /// ```
    pub async fn request<S: AsRef<str>>(
        &self,
        args: &[S],
        options: RequestParams,
    ) -> Result<Response, Error> {
        let mut args: Vec<String> = args.iter().map(|a| a.as_ref().to_owned()).collect();
        if args.is_empty() {
            return Err(invalid("args", "must name a kubectl operation"));
        }
        let operation = operation::operation_of(&args);
        let timeout_ms = options.timeout_ms.unwrap_or(self.timeout_ms);
        if timeout_ms == 0 {
            return Err(invalid("timeout_ms", "must be greater than zero"));
        }

        // The guard lives until after the run, across the await, so the file
        // is deleted on every exit path including unwinding and cancellation.
        let input_file = options
            .input
            .as_deref()
            .map(|doc| {
                private_file(
                    Some(&self.scratch_dir()?),
                    "blue-input-",
                    "",
                    doc.as_bytes(),
                )
            })
            .transpose()?;
        let input_path = input_file
            .as_ref()
            .map(|file| path_arg(file.path(), "temp_dir"))
            .transpose()?;
        substitute_input(&mut args, input_path.as_deref())?;

        let mut argv = self.prefix.clone();
        argv.extend(args);
        let invocation = Invocation {
            argv,
            env: self.env.clone(),
            timeout_ms,
        };
        let result = self.runner.run(invocation).await;
        drop(input_file);

        let output = result.map_err(|e| with_operation(e, &operation))?;
        if output.exit_code != 0 {
            return Err(Error::Kubectl {
                kind: classify::classify_output(&output.stdout, &output.stderr),
                operation,
                exit_code: output.exit_code,
            });
        }
        if options.raw {
            return Ok(Response::Text(output.stdout));
        }
        if output.stdout.trim().is_empty() {
            return Ok(Response::Json(None));
        }
        serde_json::from_str(&output.stdout)
            .map(|value| Response::Json(Some(value)))
            .map_err(|_| Error::Decode { operation })
    }
}

impl std::fmt::Debug for KubectlClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubectlClient")
            .field("context", &self.context)
            .field("kubeconfig", &self.kubeconfig)
            .field("in_cluster", &self._in_cluster_kubeconfig.is_some())
            .field("timeout_ms", &self.timeout_ms)
            .field("env", &self.env.len())
            .finish_non_exhaustive()
    }
}

/// A runner cannot tell which argument is the operation; the client can.
fn with_operation(error: Error, operation: &str) -> Error {
    match error {
        Error::Timeout { timeout_ms, .. } => Error::Timeout {
            operation: operation.to_owned(),
            timeout_ms,
        },
        Error::Spawn { source_kind, .. } => Error::Spawn {
            operation: operation.to_owned(),
            source_kind,
        },
        other => other,
    }
}

fn invalid(field: &'static str, reason: &'static str) -> Error {
    Error::InvalidOption { field, reason }
}

/// argv is `Vec<String>`, so paths must be non-empty UTF-8.
fn path_arg(path: &Path, field: &'static str) -> Result<String, Error> {
    match path.to_str() {
        Some("") => Err(invalid(field, "must not be empty")),
        Some(s) => Ok(s.to_owned()),
        None => Err(invalid(field, "must be valid utf-8")),
    }
}
