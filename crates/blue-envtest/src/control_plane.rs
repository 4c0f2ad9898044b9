//! etcd and kube-apiserver as plain processes on loopback, in a private
//! temporary directory: the processes themselves, for callers that need
//! more than [`Envtest`](crate::Envtest) (a component's pid, restarting
//! it, its logs).

use std::fs;
use std::net::{Ipv4Addr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::assets::{self, Assets};
use crate::error::{io_error, Error};
use crate::kubectl::{self, Kubectl};
use crate::process::{dying_with_this_process, log_tail, release_group, ManagedProcess, Watchdog};
use crate::wait::{poll, Probe};
use crate::{certs, sweep};

/// The kubeconfig context (and cluster) name written for every control plane.
pub const CONTEXT: &str = "blue-local";

pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(90);
const START_ATTEMPTS: usize = 3;

/// A running etcd + kube-apiserver pair. Stopped by [`ControlPlane::stop`]
/// or on drop. Its processes get SIGKILL when this process dies, however
/// it dies (a parent-death signal, and a watchdog that also removes the
/// directory); a directory left behind anyway is swept by the next start.
#[derive(Debug)]
pub struct ControlPlane {
    dir: PathBuf,
    server: String,
    pub(crate) kubectl: Kubectl,
    kubeconfig: PathBuf,
    pgid: u32,
    apiserver: Option<ManagedProcess>,
    etcd: Option<ManagedProcess>,
    /// How each component was started, so a fault test can start it again.
    commands: Vec<(Component, PathBuf, Vec<String>)>,
    /// Processes started by [`ControlPlane::restart`], stopped with the rest.
    pub(crate) restarted: Mutex<Vec<ManagedProcess>>,
    watchdog: Option<Watchdog>,
    startup: Duration,
}

/// One of the control plane's processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    /// etcd, the store.
    Etcd,
    /// kube-apiserver.
    ApiServer,
}

impl Component {
    /// The process name: `etcd` or `kube-apiserver`.
    pub fn name(self) -> &'static str {
        match self {
            Component::Etcd => "etcd",
            Component::ApiServer => "kube-apiserver",
        }
    }
}

impl ControlPlane {
    /// Starts a fresh control plane from the binaries on this machine
    /// ([`assets::find`]; never provisions) and waits until it serves
    /// requests. Retries with new ports when one was taken between picking
    /// and binding it.
    pub fn start() -> Result<Self, Error> {
        let assets = assets::find()?;
        sweep::sweep(&std::env::temp_dir());
        let mut attempt = 0;
        loop {
            attempt += 1;
            match Self::try_start(&assets) {
                Err(err)
                    if attempt < START_ATTEMPTS
                        && err.to_string().contains("address already in use") =>
                {
                    eprintln!("[envtest] port clash, retrying with new ports");
                }
                started => return started,
            }
        }
    }

    fn try_start(assets: &Assets) -> Result<Self, Error> {
        let started = Instant::now();
        let program = kubectl::find()?;
        let dir = tempfile::Builder::new()
            .prefix(&sweep::owned_prefix())
            .permissions(fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(io_error("creating the control plane's directory"))?;
        // Removed by `shutdown`, after the processes using it have stopped.
        let dir = dir.keep();
        // From here on, `cp`'s Drop cleans up whatever was started.
        let mut cp = ControlPlane {
            kubectl: Kubectl::new(
                program,
                Some(dir.join("kubeconfig")),
                CONTEXT,
                &dir.join("kube-cache"),
                "default",
            )
            .with_request_timeout("10s"),
            kubeconfig: dir.join("kubeconfig"),
            dir,
            server: String::new(),
            pgid: 0,
            apiserver: None,
            etcd: None,
            commands: Vec::new(),
            restarted: Mutex::new(Vec::new()),
            watchdog: None,
            startup: Duration::ZERO,
        };
        let token = certs::generate(&cp.dir)?;

        let etcd_client = crate::process::free_port()?;
        let etcd_peer = crate::process::free_port()?;
        let secure_port = crate::process::free_port()?;
        cp.server = format!("https://127.0.0.1:{secure_port}");

        let client_url = format!("http://127.0.0.1:{etcd_client}");
        let peer_url = format!("http://127.0.0.1:{etcd_peer}");
        let etcd_args = vec![
            "--name=blue".to_string(),
            format!("--data-dir={}", cp.dir.join("etcd").display()),
            format!("--listen-client-urls={client_url}"),
            format!("--advertise-client-urls={client_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=blue={peer_url}"),
            "--logger=zap".to_string(),
            "--log-outputs=stderr".to_string(),
        ];
        cp.commands
            .push((Component::Etcd, assets.etcd.clone(), etcd_args));
        let etcd = cp.spawn(Component::Etcd, None)?;
        cp.pgid = etcd.pid();
        cp.etcd = Some(etcd);
        cp.watchdog = Some(Watchdog::arm(cp.pgid, &cp.dir)?);
        cp.wait_for_port(etcd_client, "etcd")?;

        // What `certs::generate` wrote.
        let file = |name: &str| cp.dir.join(name).display().to_string();
        let apiserver_args = vec![
            format!("--etcd-servers={client_url}"),
            format!("--secure-port={secure_port}"),
            "--bind-address=127.0.0.1".to_string(),
            "--advertise-address=127.0.0.1".to_string(),
            format!("--cert-dir={}", cp.dir.join("apiserver").display()),
            format!("--tls-cert-file={}", file("serving.crt")),
            format!("--tls-private-key-file={}", file("serving.key")),
            format!("--client-ca-file={}", file("ca.crt")),
            format!("--token-auth-file={}", file("tokens.csv")),
            "--authorization-mode=RBAC".to_string(),
            "--service-cluster-ip-range=10.0.0.0/24".to_string(),
            format!("--service-account-issuer={}", cp.server),
            format!("--service-account-key-file={}", file("sa.pub")),
            format!("--service-account-signing-key-file={}", file("sa.key")),
            "--disable-admission-plugins=ServiceAccount".to_string(),
            "--profiling=false".to_string(),
        ];
        cp.commands.push((
            Component::ApiServer,
            assets.kube_apiserver.clone(),
            apiserver_args,
        ));
        cp.apiserver = Some(cp.spawn(Component::ApiServer, Some(cp.pgid))?);
        cp.write_kubeconfig(&token)?;
        cp.wait_for_port(secure_port, "kube-apiserver")?;
        cp.wait_until_ready()?;
        cp.startup = started.elapsed();
        Ok(cp)
    }

    fn spawn(&self, component: Component, group: Option<u32>) -> Result<ManagedProcess, Error> {
        let (_, program, args) = self
            .commands
            .iter()
            .find(|(c, _, _)| *c == component)
            .ok_or_else(|| Error::Stop(format!("{} was never started", component.name())))?;
        let mut cmd = dying_with_this_process(program);
        cmd.args(args);
        let log = self.dir.join(format!("{}.log", component.name()));
        ManagedProcess::spawn(component.name(), cmd, log, group)
    }

    /// The pid of `component` as first started (fault tests signal it).
    pub fn pid(&self, component: Component) -> Option<u32> {
        match component {
            Component::Etcd => self.etcd.as_ref(),
            Component::ApiServer => self.apiserver.as_ref(),
        }
        .map(ManagedProcess::pid)
    }

    /// Starts `component` again with its original command line (same ports,
    /// same etcd data), in the control plane's process group so the
    /// watchdog and [`ControlPlane::stop`] also cover it. For fault tests
    /// after killing the original; the caller owns (and stops) the process.
    pub fn respawn(&self, component: Component) -> Result<ManagedProcess, Error> {
        self.spawn(component, Some(self.pgid))
    }

    /// Path of the kubeconfig (server, CA, admin token, context [`CONTEXT`]).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The kubeconfig context to use (always [`CONTEXT`]).
    pub fn context(&self) -> &str {
        CONTEXT
    }

    /// The API server URL, `https://127.0.0.1:<port>`.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The private directory with certificates, logs (`etcd.log`,
    /// `kube-apiserver.log`), etcd's data and kubectl's discovery cache
    /// (`kube-cache`); removed on stop.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The kubectl binary used (`$KUBECTL`, else `kubectl` from `PATH`).
    pub fn kubectl(&self) -> &Path {
        self.kubectl.program()
    }

    /// kubectl's discovery cache for this server (pass it as `--cache-dir`
    /// or `KUBECACHEDIR` when running kubectl yourself).
    pub fn kube_cache_dir(&self) -> &Path {
        self.kubectl.cache_dir()
    }

    /// Wall time `start` took, from creating the directory to ready.
    pub fn startup_time(&self) -> Duration {
        self.startup
    }

    /// Stops both processes (SIGTERM, then SIGKILL after a grace period),
    /// reaps them and removes the directory.
    pub fn stop(mut self) -> Result<(), Error> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), Error> {
        let mut errors = Vec::new();
        // Restarted API servers first (they need etcd to drain), then etcds.
        let mut restarted =
            std::mem::take(self.restarted.get_mut().unwrap_or_else(|e| e.into_inner()));
        restarted.sort_by_key(|p| p.name() != Component::ApiServer.name());
        let originals = [(self.apiserver.take(), 10), (self.etcd.take(), 5)];
        for (p, grace) in restarted
            .into_iter()
            .map(|p| (Some(p), 10))
            .chain(originals)
        {
            if let Err(err) = p.map_or(Ok(()), |mut p| p.stop(Duration::from_secs(grace))) {
                errors.push(err.to_string());
            }
        }
        release_group(&mut self.pgid, &mut self.watchdog);
        if self.dir.exists() {
            if let Err(err) = fs::remove_dir_all(&self.dir) {
                errors.push(format!("removing {}: {err}", self.dir.display()));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Error::Stop(errors.join("; ")))
        }
    }

    fn write_kubeconfig(&self, token: &str) -> Result<(), Error> {
        let text = format!(
            "apiVersion: v1
kind: Config
clusters:
- name: {CONTEXT}
  cluster:
    server: {server}
    certificate-authority: {ca}
users:
- name: {CONTEXT}-admin
  user:
    token: {token}
contexts:
- name: {CONTEXT}
  context:
    cluster: {CONTEXT}
    user: {CONTEXT}-admin
    namespace: default
current-context: {CONTEXT}
",
            server = self.server,
            ca = self.dir.join("ca.crt").display(),
        );
        fs::write(self.kubeconfig_path(), text).map_err(io_error("writing the kubeconfig"))
    }

    /// [`Error::Exited`] (with both log tails) if a process has exited.
    fn check_alive(&mut self) -> Result<(), Error> {
        let exited = [self.etcd.as_mut(), self.apiserver.as_mut()]
            .into_iter()
            .flatten()
            .find_map(|p| p.exit_status().map(|status| (p.name(), status)));
        match exited {
            Some((process, status)) => Err(Error::Exited {
                process,
                status: status.to_string(),
                logs: self.logs(process),
            }),
            None => Ok(()),
        }
    }

    /// The last lines of both logs for error messages, more of `focus`'s.
    pub(crate) fn logs(&self, focus: &str) -> String {
        let mut out = String::new();
        for p in [self.etcd.as_ref(), self.apiserver.as_ref()]
            .into_iter()
            .flatten()
        {
            out.push_str(&format!(
                "\n--- last lines of {} ---\n{}",
                p.log().display(),
                log_tail(p.log(), if p.name() == focus { 30 } else { 6 })
            ));
        }
        out
    }

    fn wait_for_port(&mut self, port: u16, what: &str) -> Result<(), Error> {
        let address = (Ipv4Addr::LOCALHOST, port).into();
        let listening = poll(what, READY_TIMEOUT, Duration::from_millis(50), || {
            self.check_alive().map_err(Probe::GiveUp)?;
            TcpStream::connect_timeout(&address, Duration::from_millis(200))
                .map_err(|_| Probe::NotYet(format!("{what} does not listen on port {port}")))
        });
        listening.map(drop).map_err(|e| self.with_logs(e, what))
    }

    /// A timeout's reason extended with the log tails.
    fn with_logs(&self, err: Error, focus: &str) -> Error {
        match err {
            Error::Timeout {
                what,
                timeout_secs,
                last,
            } => Error::Timeout {
                what,
                timeout_secs,
                last: format!("{last}{}", self.logs(focus)),
            },
            other => other,
        }
    }

    /// The API server answers `GET path` (within 10 s).
    pub fn serves(&self, path: &str) -> Result<(), Error> {
        self.kubectl.ok(&["get", "--raw", path], None).map(drop)
    }

    /// Polls `/healthz` until `ok`, then waits for the `default` namespace
    /// (created by the apiserver shortly after it turns healthy).
    fn wait_until_ready(&mut self) -> Result<(), Error> {
        let deadline = Instant::now() + READY_TIMEOUT;
        for path in ["/healthz", "/api/v1/namespaces/default"] {
            let left = deadline.saturating_duration_since(Instant::now());
            let what = format!("kube-apiserver serves {path}");
            let ready = poll(&what, left, Duration::from_millis(200), || {
                self.check_alive().map_err(Probe::GiveUp)?;
                self.serves(path).map_err(|e| Probe::NotYet(e.to_string()))
            });
            ready.map_err(|e| self.with_logs(e, "kube-apiserver"))?;
        }
        Ok(())
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        if let Err(err) = self.shutdown() {
            eprintln!("[envtest] {err}");
        }
    }
}
