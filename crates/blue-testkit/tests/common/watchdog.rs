//! A wall-clock limit for tests on paused tokio time.
//!
//! Paused time only moves when every task is idle: a runtime that spins
//! (say, re-queues a refused resource in a tight loop) keeps it still, so
//! no paused-time deadline (`eventually`, `tokio::time::timeout`) ever
//! fires and the test would hang. Here the body runs on its own
//! current-thread runtime in a thread of its own while the test thread
//! waits on the wall clock; past the limit the body is abandoned (its
//! runtime is dropped at its next yield, so the spinning stops with it)
//! and the test fails saying so.

use std::future::Future;
use std::sync::mpsc;
use std::time::Duration;

/// The wall time a paused-time test gets by default: the tests using it
/// take well under a second when the runtime behaves.
pub const WALL_LIMIT: Duration = Duration::from_secs(60);

/// How long an abandoned body gets to notice before it is left behind.
const GRACE: Duration = Duration::from_secs(5);

/// The body did not finish within its wall-time limit.
#[derive(Debug)]
pub struct Hung {
    pub limit: Duration,
    /// Whether it stopped once abandoned (false: a task that never yields
    /// still holds its thread).
    pub stopped: bool,
}

impl std::fmt::Display for Hung {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "did not finish within {} s of wall time: the runtime spins, so paused time \
             cannot advance{}",
            self.limit.as_secs(),
            if self.stopped {
                ""
            } else {
                " (and a task never yields: its thread is left running)"
            }
        )
    }
}

/// Runs `body` on a fresh current-thread runtime (time paused from the
/// start when `paused`) in its own thread, for at most `limit` of wall
/// time. A panic in the body is the caller's panic, message and all.
pub fn within<T, Fut>(
    limit: Duration,
    paused: bool,
    body: impl FnOnce() -> Fut + Send + 'static,
) -> Result<T, Hung>
where
    T: Send + 'static,
    Fut: Future<Output = T>,
{
    let (abandon, abandoned) = tokio::sync::oneshot::channel::<()>();
    let (done, finished) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("paused-test".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .start_paused(paused)
                .build()
                .expect("a runtime");
            let outcome = runtime.block_on(async move {
                tokio::select! {
                    biased;
                    _ = abandoned => None,
                    value = body() => Some(value),
                }
            });
            drop(runtime);
            let _ = done.send(outcome);
        })
        .expect("a thread");
    let outcome = match finished.recv_timeout(limit) {
        Ok(outcome) => outcome,
        Err(mpsc::RecvTimeoutError::Disconnected) => None,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            let _ = abandon.send(());
            let stopped = finished.recv_timeout(GRACE).is_ok();
            if stopped {
                let _ = thread.join();
            }
            return Err(Hung { limit, stopped });
        }
    };
    match (outcome, thread.join()) {
        (_, Err(panic)) => std::panic::resume_unwind(panic),
        (Some(value), Ok(())) => Ok(value),
        (None, Ok(())) => unreachable!("abandoned only after the limit"),
    }
}

/// A test body on paused time that fails, instead of hanging, when it has
/// not finished within [`WALL_LIMIT`].
pub fn paused_test<Fut>(body: impl FnOnce() -> Fut + Send + 'static)
where
    Fut: Future<Output = ()>,
{
    if let Err(hung) = within(WALL_LIMIT, true, body) {
        panic!("the test {hung}");
    }
}
