//! A private PostgreSQL server for tests (feature `test-server`), used by
//! this crate's tests and by `cargo xtask e2e`/`chaos`: `initdb` in a
//! fresh temporary directory (SCRAM authentication, so logins are really
//! checked), `postgres` on a free loopback port with its Unix socket in
//! that directory, as the `postgres` user when run as root (PostgreSQL
//! refuses to run as root). Stopped, and the directory removed, on drop,
//! also when the test fails.
//!
//! ```no_run
//! use postgres_operator::test_server::TestServer;
//! let server = TestServer::start().expect("a private server");
//! println!("connect to 127.0.0.1:{}", server.port());
//! ```

use std::io;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The admin role on every test server.
pub const ADMIN: &str = "postgres";
/// The admin role's password on every test server.
pub const ADMIN_PASSWORD: &str = "admin-pw-for-tests";
/// Debian's PostgreSQL 15 server binaries (`apt-get install postgresql`).
pub const DEBIAN_BIN_DIR: &str = "/usr/lib/postgresql/15/bin";

/// How long a server may take to accept connections, and to stop.
const PATIENCE: Duration = Duration::from_secs(30);

/// Why a test server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum TestServerError {
    /// The binaries are missing.
    #[error(
        "PostgreSQL server binaries not found in {0}: install them with \
         `apt-get install -y postgresql` (or point PG_BIN at a bin directory)"
    )]
    NoBinaries(PathBuf),
    /// A file operation or starting a program failed.
    #[error("{0}: {1}")]
    Io(&'static str, #[source] io::Error),
    /// `initdb` failed; its output.
    #[error("initdb failed: {0}")]
    Initdb(String),
    /// The server exited, or did not accept connections within 30 s.
    #[error("postgres did not start; its log: {0}")]
    NotReady(PathBuf),
}

fn io_error(what: &'static str) -> impl FnOnce(io::Error) -> TestServerError {
    move |e| TestServerError::Io(what, e)
}

/// A running (or stopped, see [`TestServer::stop`]) private server.
#[derive(Debug)]
pub struct TestServer {
    port: u16,
    bin: PathBuf,
    user: Option<(u32, u32)>,
    child: Option<Child>,
    dir: tempfile::TempDir,
}

/// Where the server binaries are: `$PG_BIN`, else [`DEBIAN_BIN_DIR`].
pub fn bin_dir() -> PathBuf {
    std::env::var_os("PG_BIN").map_or_else(|| PathBuf::from(DEBIAN_BIN_DIR), PathBuf::from)
}

/// The uid and gid to run the server as: `postgres` when we are root.
fn server_user() -> Option<(u32, u32)> {
    let id = |args: &[&str]| -> Option<u32> {
        let out = Command::new("id").args(args).output().ok()?;
        String::from_utf8(out.stdout).ok()?.trim().parse().ok()
    };
    match id(&["-u"]) {
        Some(0) => Some((id(&["-u", "postgres"])?, id(&["-g", "postgres"])?)),
        _ => None,
    }
}

impl TestServer {
    /// Creates a fresh server and waits until it accepts connections.
    pub fn start() -> Result<Self, TestServerError> {
        let bin = bin_dir();
        if !bin.join("postgres").exists() || !bin.join("initdb").exists() {
            return Err(TestServerError::NoBinaries(bin));
        }
        let user = server_user();
        let dir = tempfile::Builder::new()
            .prefix("blue-pg-")
            .tempdir()
            .map_err(io_error("creating the server's directory"))?;
        let pwfile = dir.path().join("pwfile");
        std::fs::write(&pwfile, ADMIN_PASSWORD).map_err(io_error("writing the password file"))?;
        if let Some((uid, gid)) = user {
            for path in [dir.path(), &pwfile] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid))
                    .map_err(io_error("handing the directory to the postgres user"))?;
            }
        }
        let mut server = TestServer {
            port: 0,
            bin,
            user,
            child: None,
            dir,
        };
        let initdb = server
            .command("initdb")
            .arg("-D")
            .arg(server.data())
            .args([
                "-U",
                ADMIN,
                "--auth=scram-sha-256",
                "--no-sync",
                "-E",
                "UTF8",
            ])
            .arg(format!("--pwfile={}", pwfile.display()))
            .stdout(Stdio::null())
            .output()
            .map_err(io_error("running initdb"))?;
        if !initdb.status.success() {
            let text = String::from_utf8_lossy(&initdb.stderr).into_owned();
            return Err(TestServerError::Initdb(text));
        }
        server.port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(io_error("finding a free loopback port"))?
            .port();
        server.restart()?;
        Ok(server)
    }

    /// The loopback port it listens on (kept across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its directory: the data directory `data`, the socket, the log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's log.
    pub fn log(&self) -> PathBuf {
        self.dir().join("postgres.log")
    }

    /// The postmaster's process id while it runs; it leads its own
    /// process group.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    fn data(&self) -> PathBuf {
        self.dir().join("data")
    }

    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bin.join(program));
        if let Some((uid, gid)) = self.user {
            command.uid(uid).gid(gid);
        }
        command.env_remove("PGDATA");
        command
    }

    /// Starts the (stopped) server again on its data and port, and waits
    /// until it accepts connections.
    pub fn restart(&mut self) -> Result<(), TestServerError> {
        self.stop();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log())
            .map_err(io_error("opening the server's log"))?;
        let err = log.try_clone().map_err(io_error("opening the log"))?;
        let child = self
            .command("postgres")
            .arg("-D")
            .arg(self.data())
            .arg("-k")
            .arg(self.dir())
            .args(["-p", &self.port.to_string(), "-h", "127.0.0.1"])
            .args(["-c", "fsync=off", "-c", "full_page_writes=off"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(io_error("starting postgres"))?;
        self.child = Some(child);
        self.wait_ready()
    }

    fn wait_ready(&mut self) -> Result<(), TestServerError> {
        let deadline = Instant::now() + PATIENCE;
        let port = self.port.to_string();
        while Instant::now() < deadline {
            let exited = self.child.as_mut().map(|c| c.try_wait());
            if !matches!(exited, Some(Ok(None))) {
                break;
            }
            let mut probe = Command::new(self.bin.join("pg_isready"));
            let probe = probe.args(["-q", "-h", "127.0.0.1", "-p", &port]);
            if probe.status().is_ok_and(|s| s.success()) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(TestServerError::NotReady(self.log()))
    }

    /// Stops the server (a fast shutdown: SIGINT ends the sessions; SIGKILL
    /// if it has not exited in 30 s), keeping its data for
    /// [`TestServer::restart`]. Does nothing when it is not running.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}
