//! Stopping: SIGTERM or SIGINT starts a drain (running reconciles finish,
//! nothing new starts), bounded by `--drain-timeout`; a second signal
//! ends the drain at once.

use crate::Runtime;
use std::future::Future;
use std::time::Duration;
use tokio::signal::unix::{signal, Signal, SignalKind};

/// How a drain ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Drained {
    /// Every running reconcile finished and the runtime stopped.
    Finished,
    /// The timeout passed first: what still ran is cut off when the
    /// process exits.
    TimedOut,
    /// `interrupted` (a second signal) came first.
    Interrupted,
}

/// Stops `runtime` ([`Runtime::stop`]: running reconciles finish, queued
/// work is dropped, leases are released), waiting at most `timeout`, or
/// until `interrupted` completes. Give `timeout` the pod's
/// `terminationGracePeriodSeconds`, less a second or two for the exit:
/// Kubernetes SIGKILLs the process when the period ends, and a drain that
/// ends first logs what it cut off and exits on its own. A callback still
/// running when the process ends is cut off as by a crash: its durable
/// steps resume in the next process, at the step it was in.
///
/// ```no_run
/// # async fn demo(runtime: blue_kubernetes::Runtime) {
/// use blue_kubernetes::runner::{drain, Drained};
/// use std::time::Duration;
/// let never = std::future::pending::<()>();
/// if drain(runtime, Duration::from_secs(25), never).await == Drained::TimedOut {
///     eprintln!("exiting with reconciles still running");
/// }
/// # }
/// ```
pub async fn drain(
    runtime: Runtime,
    timeout: Duration,
    interrupted: impl Future<Output = ()>,
) -> Drained {
    bounded(runtime.stop(), timeout, interrupted).await
}

/// [`drain`] of any stop.
pub(crate) async fn bounded(
    stop: impl Future<Output = ()>,
    timeout: Duration,
    interrupted: impl Future<Output = ()>,
) -> Drained {
    tokio::select! {
        stopped = tokio::time::timeout(timeout, stop) => match stopped {
            Ok(()) => Drained::Finished,
            Err(_) => Drained::TimedOut,
        },
        () = interrupted => Drained::Interrupted,
    }
}

/// SIGTERM and SIGINT, installed before anything else starts, so that a
/// signal during startup still stops gracefully.
pub(crate) struct Signals {
    terminate: Signal,
    interrupt: Signal,
}

impl Signals {
    pub(crate) fn install() -> std::io::Result<Self> {
        Ok(Self {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
        })
    }

    /// The next signal's name.
    pub(crate) async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.interrupt.recv() => "SIGINT",
        }
    }
}

/// Logs how the drain ended.
pub(crate) fn report(drained: Drained, timeout: Duration) {
    match drained {
        Drained::Finished => tracing::info!("stopped"),
        Drained::TimedOut => tracing::warn!(
            "--drain-timeout {} passed with reconciles still running: exiting; their durable steps resume in the next process",
            humantime::format_duration(timeout)
        ),
        Drained::Interrupted => {
            tracing::warn!("second signal: exiting without waiting for running reconciles")
        }
    }
}
