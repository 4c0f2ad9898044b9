//! A private PostgreSQL server guarded by a watchdog like the control
//! plane's: if the process running the checks dies, the server is stopped
//! and its directory removed all the same.

use anyhow::{Context, Result};
use blue_envtest::process::Watchdog;
use postgres_operator::test_server::TestServer;

/// A [`TestServer`] and the watchdog armed for it while it runs.
pub struct GuardedServer {
    server: TestServer,
    watchdog: Option<Watchdog>,
}

impl GuardedServer {
    /// Arms a watchdog for the running `server`.
    pub fn new(server: TestServer) -> Result<Self> {
        let mut guarded = GuardedServer {
            server,
            watchdog: None,
        };
        guarded.arm_watchdog()?;
        Ok(guarded)
    }

    fn arm_watchdog(&mut self) -> Result<()> {
        let pid = self.server.pid().context("PostgreSQL is not running")?;
        self.watchdog = Some(Watchdog::arm(pid, self.server.dir())?);
        Ok(())
    }

    /// The server (port, directory, log).
    pub fn server(&self) -> &TestServer {
        &self.server
    }

    /// Stops the server (a fast shutdown), keeping its data; the watchdog
    /// is disarmed first.
    pub fn stop(&mut self) {
        if let Some(w) = self.watchdog.take() {
            w.disarm();
        }
        self.server.stop();
    }

    /// Starts the stopped server again, on the same port, guarded again.
    pub fn restart(&mut self) -> Result<()> {
        self.server.restart()?;
        self.arm_watchdog()
    }
}
