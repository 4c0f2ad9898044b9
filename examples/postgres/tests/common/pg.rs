//! A private PostgreSQL server for one test: `initdb` in a temporary
//! directory (password authentication, so logins are really checked),
//! `postgres` on a free loopback port, stopped and removed in `Drop` even
//! when the test fails. Runs as the `postgres` user when the tests run as
//! root (PostgreSQL refuses to run as root).

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The admin role and its password on every test server.
pub const ADMIN: &str = "postgres";
pub const ADMIN_PASSWORD: &str = "admin-pw-for-tests";

pub struct Postgres {
    pub port: u16,
    child: Option<Child>,
    dir: tempfile::TempDir,
}

/// Where the server binaries are: `$PG_BIN`, else Debian's PostgreSQL 15.
fn bin_dir() -> PathBuf {
    let dir = std::env::var_os("PG_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/lib/postgresql/15/bin"));
    assert!(
        dir.join("postgres").exists() && dir.join("initdb").exists(),
        "PostgreSQL server binaries not found in {}: install them with \
         `apt-get install -y postgresql` (or point PG_BIN at a bin directory)",
        dir.display()
    );
    dir
}

/// The uid and gid to run the server as: `postgres` when we are root.
fn server_user() -> Option<(u32, u32)> {
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, "postgres"]).output().ok()?;
        String::from_utf8(out.stdout).ok()?.trim().parse().ok()
    };
    let me = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&me.stdout).trim() != "0" {
        return None;
    }
    Some((
        id("-u").expect("a `postgres` user (apt-get install postgresql creates it)"),
        id("-g").expect("the `postgres` group"),
    ))
}

fn command(program: &Path, user: Option<(u32, u32)>) -> Command {
    let mut command = Command::new(program);
    if let Some((uid, gid)) = user {
        command.uid(uid).gid(gid);
    }
    command.env_remove("PGDATA");
    command
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl Postgres {
    /// Starts a fresh server and waits until it accepts connections.
    pub fn start() -> Self {
        let bin = bin_dir();
        let user = server_user();
        let dir = tempfile::tempdir().expect("a temporary directory");
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown");
        }
        let pwfile = dir.path().join("pwfile");
        std::fs::write(&pwfile, ADMIN_PASSWORD).expect("the password file");
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(&pwfile, Some(uid), Some(gid)).expect("chown");
        }
        let data = dir.path().join("data");
        let initdb = command(&bin.join("initdb"), user)
            .arg("-D")
            .arg(&data)
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
            .stderr(Stdio::piped())
            .output()
            .expect("running initdb");
        assert!(
            initdb.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&initdb.stderr)
        );
        let port = free_port();
        let child = command(&bin.join("postgres"), user)
            .arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(dir.path())
            .args(["-p", &port.to_string(), "-h", "127.0.0.1"])
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting postgres");
        let server = Postgres {
            port,
            child: Some(child),
            dir,
        };
        server.wait_ready(&bin);
        server
    }

    fn wait_ready(&self, bin: &Path) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = Command::new(bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return;
            }
            assert!(Instant::now() < deadline, "postgres did not start in 30 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The server's directory (data and socket).
    #[allow(dead_code)]
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // SIGQUIT: immediate shutdown, the postmaster stops its backends
        // too. SIGKILL only if it has not exited after five seconds.
        let _ = Command::new("kill")
            .args(["-QUIT", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
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
