//! How kubectl processes are run: an injectable runner.

use crate::Error;
use std::future::Future;

/// One process to run: argv (`argv[0]` is the binary), extra environment and a
/// deadline in milliseconds.
#[derive(Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The full command line; no shell is involved.
    pub argv: Vec<String>,
    /// Extra environment variables, on top of the inherited environment.
    pub env: Vec<(String, String)>,
    /// Process deadline; on expiry the runner kills the process and its children.
    pub timeout_ms: u64,
}

// Arguments can carry secrets (e.g. a patch body), so Debug shows shape only.
impl std::fmt::Debug for Invocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invocation")
            .field("operation", &self.argv.get(1).map(|_| "<redacted>"))
            .field("args", &self.argv.len())
            .field("env", &self.env.len())
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

/// What a finished process produced.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Output {
    /// Exit code; a process killed by a signal reports `-1`.
    pub exit_code: i32,
    /// Captured standard output.
    pub stdout: String,
    /// Captured standard error.
    pub stderr: String,
}

// Output may hold secrets; Debug never prints it.
impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Output")
            .field("exit_code", &self.exit_code)
            .field("stdout_bytes", &self.stdout.len())
            .field("stderr_bytes", &self.stderr.len())
            .finish()
    }
}

/// Runs one process. Inject your own to record or fake kubectl.
///
/// Any `Fn(Invocation) -> impl Future<Output = Result<Output, Error>>` is a
/// runner:
///
/// ```
/// use blue_kubernetes_client::{Invocation, Output, Runner};
/// let runner = |inv: Invocation| async move {
///     Ok(Output { exit_code: 0, stdout: format!("{} args", inv.argv.len()), stderr: String::new() })
/// };
/// fn takes_runner(_: impl Runner) {}
/// takes_runner(runner);
/// ```
#[async_trait::async_trait]
pub trait Runner: Send + Sync {
    /// Runs `invocation` to completion or until its deadline.
    ///
    /// A deadline that passes returns [`Error::Timeout`] after the process and
    /// anything it spawned were killed.
    async fn run(&self, invocation: Invocation) -> Result<Output, Error>;
}

#[async_trait::async_trait]
impl<F, Fut> Runner for F
where
    F: Fn(Invocation) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Output, Error>> + Send,
{
    async fn run(&self, invocation: Invocation) -> Result<Output, Error> {
        (self)(invocation).await
    }
}
