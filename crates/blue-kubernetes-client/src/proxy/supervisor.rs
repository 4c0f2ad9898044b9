//! Keeps one proxy running: starts it on demand, notices when it exited or
//! stopped answering, and restarts it with backoff.

use super::pool::Pool;
use super::process::{ProxyProcess, Spawner};
use super::socket_dir::SocketDir;
use super::ProxyConfig;
use crate::{Error, ErrorKind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::time::Instant;

/// What the supervisor has done so far; see [`ProxyClient::stats`](crate::ProxyClient::stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProxyStats {
    /// Proxies that started and opened their socket.
    pub starts: u64,
    /// Of those, starts that replaced an earlier proxy.
    pub restarts: u64,
    /// Starts that failed (exited early, no socket in time, spawn error).
    pub failed_starts: u64,
    /// Running proxies found exited.
    pub exits: u64,
    /// Running proxies replaced because they stopped answering.
    pub hangs: u64,
    /// HTTP keep-alive connections opened to the current proxy.
    pub connections: u64,
    /// Watches opened (each on a connection of its own, not counted in
    /// `connections`).
    pub watches: u64,
}

/// One started proxy: its process, its connections, its unanswered count.
pub(crate) struct Generation {
    pub(crate) pool: Pool,
    process: Mutex<ProxyProcess>,
    unanswered: AtomicU32,
}

impl Generation {
    fn process(&self) -> std::sync::MutexGuard<'_, ProxyProcess> {
        self.process.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_alive(&self) -> bool {
        self.process().is_alive()
    }

    fn kill(&self) {
        self.process().kill();
    }
}

struct State {
    current: Option<Arc<Generation>>,
    retry_at: Option<Instant>,
    started_before: bool,
    closed: bool,
}

pub(crate) struct Supervisor {
    // Field order is drop order: processes die before the spawning thread
    // ends (which would otherwise deliver their parent-death signal).
    state: tokio::sync::Mutex<State>,
    argv: Vec<String>,
    env: Vec<(String, String)>,
    temp_dir: Option<PathBuf>,
    startup_timeout: Duration,
    backoff: (Duration, Duration),
    unanswered_limit: u32,
    /// Failures since the last successful request.
    strikes: AtomicU32,
    stats: Mutex<ProxyStats>,
    spawner: Spawner,
}

impl Supervisor {
    /// `argv`: `[kubectl, --kubeconfig K?, --context C, proxy, ...]` minus
    /// the socket flag, which is added per start.
    pub(crate) fn new(argv: Vec<String>, options: &ProxyConfig) -> Result<Self, Error> {
        let spawner = Spawner::new(options.parent_death_signal).map_err(|e| Error::Spawn {
            operation: "proxy".into(),
            source_kind: e.kind(),
        })?;
        Ok(Self {
            state: tokio::sync::Mutex::new(State {
                current: None,
                retry_at: None,
                started_before: false,
                closed: false,
            }),
            argv,
            env: options.proxy_env(std::env::var_os("GOGC").as_deref()),
            temp_dir: options.kubectl.temp_dir.clone(),
            startup_timeout: Duration::from_millis(options.startup_timeout_ms),
            backoff: (
                Duration::from_millis(options.restart_backoff_ms),
                Duration::from_millis(options.max_restart_backoff_ms),
            ),
            unanswered_limit: options.unanswered_limit.max(1),
            strikes: AtomicU32::new(0),
            stats: Mutex::new(ProxyStats::default()),
            spawner,
        })
    }

    pub(crate) fn has_parent_death_signal(&self) -> bool {
        self.spawner.has_parent_death_signal()
    }

    fn count(&self, f: impl FnOnce(&mut ProxyStats)) {
        f(&mut self.stats.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// The counters without the connection count, which needs the state lock.
    pub(crate) fn lifecycle_stats(&self) -> ProxyStats {
        *self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) async fn stats(&self) -> ProxyStats {
        let connections = self
            .state
            .lock()
            .await
            .current
            .as_ref()
            .map_or(0, |g| g.pool.opened());
        ProxyStats {
            connections,
            ..*self.stats.lock().unwrap_or_else(PoisonError::into_inner)
        }
    }

    /// (pid, directory) of the running proxy, if any.
    pub(crate) async fn running(&self) -> Option<(u32, PathBuf)> {
        let state = self.state.lock().await;
        let generation = state.current.as_ref()?;
        let process = generation.process();
        Some((process.pid(), process.dir().to_path_buf()))
    }

    /// The proxy to send to, started if there is none. A proxy found dead
    /// fails this request at once; the next one restarts it (after the
    /// backoff, when failures repeat).
    pub(crate) async fn current(&self) -> Result<Arc<Generation>, Error> {
        let mut state = self.state.lock().await;
        if state.closed {
            return Err(unavailable("client was shut down"));
        }
        if let Some(generation) = &state.current {
            if generation.is_alive() {
                return Ok(generation.clone());
            }
            self.retire(&mut state);
            self.count(|s| s.exits += 1);
            return Err(unavailable("exited; it is restarted by the next request"));
        }
        if state.retry_at.is_some_and(|at| Instant::now() < at) {
            return Err(unavailable("keeps failing; restart is backing off"));
        }
        match self.start().await {
            Ok(generation) => {
                let generation = Arc::new(generation);
                let restart = state.started_before;
                state.started_before = true;
                state.retry_at = None;
                state.current = Some(generation.clone());
                self.count(|s| {
                    s.starts += 1;
                    s.restarts += u64::from(restart);
                });
                Ok(generation)
            }
            Err(e) => {
                self.strike(&mut state);
                self.count(|s| s.failed_starts += 1);
                Err(e)
            }
        }
    }

    /// A watch got its response headers.
    pub(crate) fn watch_opened(&self) {
        self.count(|s| s.watches += 1);
    }

    /// A request through `generation` was answered.
    pub(crate) fn answered(&self, generation: &Generation) {
        generation.unanswered.store(0, Ordering::Relaxed);
        self.strikes.store(0, Ordering::Relaxed);
    }

    /// A request through `generation` passed its deadline; enough of them in
    /// a row and the proxy is replaced.
    pub(crate) async fn unanswered(&self, generation: &Arc<Generation>) {
        let count = generation.unanswered.fetch_add(1, Ordering::Relaxed) + 1;
        if count < self.unanswered_limit {
            return;
        }
        let mut state = self.state.lock().await;
        if state
            .current
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, generation))
        {
            self.retire(&mut state);
            self.count(|s| s.hangs += 1);
        }
    }

    /// The connection to `generation` failed: say whether the proxy exited
    /// (and retire it) or only the connection broke.
    pub(crate) async fn broken(&self, generation: &Arc<Generation>) -> Error {
        if generation.is_alive() {
            return unavailable("connection failed");
        }
        let mut state = self.state.lock().await;
        if state
            .current
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, generation))
        {
            self.retire(&mut state);
            self.count(|s| s.exits += 1);
        }
        unavailable("exited; it is restarted by the next request")
    }

    /// Stops the proxy for good: later requests fail.
    pub(crate) async fn shutdown(&self) {
        let mut state = self.state.lock().await;
        state.closed = true;
        if let Some(generation) = state.current.take() {
            generation.kill();
        }
    }

    /// Kills the current proxy (requests still holding it fail) and
    /// schedules the next start.
    fn retire(&self, state: &mut State) {
        if let Some(generation) = state.current.take() {
            generation.kill();
        }
        self.strike(state);
    }

    fn strike(&self, state: &mut State) {
        let strikes = self.strikes.fetch_add(1, Ordering::Relaxed) + 1;
        state.retry_at = Some(Instant::now() + backoff(strikes, self.backoff));
    }

    async fn start(&self) -> Result<Generation, Error> {
        let dir = SocketDir::create(self.temp_dir.as_deref())?;
        let socket = dir.socket().to_path_buf();
        let mut argv = self.argv.clone();
        let flag = socket.to_str().map(|s| format!("--unix-socket={s}"));
        argv.push(flag.ok_or(Error::InvalidOption {
            field: "temp_dir",
            reason: "must be valid utf-8",
        })?);
        let child = self
            .spawner
            .spawn(&argv, &self.env)
            .await
            .map_err(|e| Error::Spawn {
                operation: "proxy".into(),
                source_kind: e.kind(),
            })?;
        let mut process = ProxyProcess::new(child, dir);
        let deadline = Instant::now() + self.startup_timeout;
        loop {
            if !process.is_alive() {
                return Err(unavailable("exited before opening its socket"));
            }
            if tokio::net::UnixStream::connect(process.socket())
                .await
                .is_ok()
            {
                break;
            }
            if Instant::now() >= deadline {
                return Err(Error::Proxy {
                    problem: "did not open its socket in time",
                    kind: ErrorKind::Timeout,
                });
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(Generation {
            pool: Pool::new(socket),
            process: Mutex::new(process),
            unanswered: AtomicU32::new(0),
        })
    }
}

/// No wait for the first failure after a proxy that worked, then `initial`
/// doubling up to `max`.
fn backoff(strikes: u32, (initial, max): (Duration, Duration)) -> Duration {
    match strikes {
        0 | 1 => Duration::ZERO,
        n => initial.saturating_mul(1u32 << (n - 2).min(20)).min(max),
    }
}

fn unavailable(problem: &'static str) -> Error {
    Error::Proxy {
        problem,
        kind: ErrorKind::Unavailable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_immediate_once_then_doubles_to_the_cap() {
        let limits = (Duration::from_millis(200), Duration::from_secs(10));
        let waits: Vec<u128> = (1..=9).map(|n| backoff(n, limits).as_millis()).collect();
        assert_eq!(
            waits,
            [0, 200, 400, 800, 1_600, 3_200, 6_400, 10_000, 10_000]
        );
        assert_eq!(backoff(u32::MAX, limits), Duration::from_secs(10));
    }
}
