//! kubectl for tests: bound to one kubeconfig and context, one namespace
//! and a private discovery cache (so `~/.kube/cache` does not grow one
//! directory per random port), with a request deadline so a hung server
//! fails a step instead of hanging the test.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::error::{io_error, Error};

/// `$KUBECTL`, else `kubectl` from `PATH`.
pub fn find() -> Result<PathBuf, Error> {
    if let Some(path) = std::env::var_os("KUBECTL").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("kubectl"))
        .find(|p| crate::assets::is_executable(p))
        .ok_or_else(|| {
            io_error("finding kubectl in PATH (or set KUBECTL)")(
                std::io::ErrorKind::NotFound.into(),
            )
        })
}

/// How to run kubectl against one cluster, in one namespace. Cheap to
/// clone; [`Kubectl::in_namespace`] gives the same connection elsewhere.
///
/// ```no_run
/// # fn main() -> Result<(), blue_envtest::Error> {
/// let env = blue_envtest::Envtest::shared()?;
/// let ns = env.namespace("docs")?;
/// let kubectl = env.kubectl_in(&ns);
/// kubectl.apply(r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}"#)?;
/// assert!(kubectl.get("configmap", "c")?.is_some());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Kubectl {
    program: PathBuf,
    kubeconfig: Option<PathBuf>,
    context: String,
    cache_dir: PathBuf,
    namespace: String,
    request_timeout: String,
}

/// What one kubectl run printed, and whether it succeeded.
#[derive(Debug)]
pub struct Output {
    /// Exit status 0.
    pub ok: bool,
    /// Standard output.
    pub stdout: String,
    /// Standard error, trimmed.
    pub stderr: String,
}

impl Kubectl {
    /// kubectl `program` bound to `context` (in `kubeconfig` when given,
    /// else kubectl's default lookup), discovery cache `cache_dir`,
    /// `namespace`, and a 20 s request deadline.
    pub fn new(
        program: PathBuf,
        kubeconfig: Option<PathBuf>,
        context: &str,
        cache_dir: &Path,
        namespace: &str,
    ) -> Self {
        Self {
            program,
            kubeconfig,
            context: context.to_string(),
            cache_dir: cache_dir.to_path_buf(),
            namespace: namespace.to_string(),
            request_timeout: "20s".into(),
        }
    }

    /// The same, with kubectl's `--request-timeout` set to `timeout`
    /// (e.g. `10s`; `0` waits forever).
    pub fn with_request_timeout(mut self, timeout: &str) -> Self {
        self.request_timeout = timeout.to_string();
        self
    }

    /// The same connection, bound to `namespace`.
    pub fn in_namespace(&self, namespace: &str) -> Kubectl {
        Kubectl {
            namespace: namespace.to_string(),
            ..self.clone()
        }
    }

    /// The kubectl binary.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The kubeconfig, if one is set explicitly.
    pub fn kubeconfig(&self) -> Option<&Path> {
        self.kubeconfig.as_deref()
    }

    /// The kubeconfig context.
    pub fn context(&self) -> &str {
        &self.context
    }

    /// The discovery cache directory.
    pub fn cache_dir(&self) -> &Path {
        &self.cache_dir
    }

    /// The namespace every namespaced call uses.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// A kubectl command with the connection flags, the namespace and the
    /// request deadline, for what the helpers below do not cover.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        if let Some(k) = &self.kubeconfig {
            cmd.arg("--kubeconfig").arg(k);
        }
        cmd.arg("--context")
            .arg(&self.context)
            .arg("--cache-dir")
            .arg(&self.cache_dir)
            .arg(format!("--request-timeout={}", self.request_timeout))
            .arg("-n")
            .arg(&self.namespace);
        cmd
    }

    /// A shell-pasteable prefix for humans (`kubectl --kubeconfig K --context C -n NS`).
    pub fn display_prefix(&self) -> String {
        let kubeconfig =
            (self.kubeconfig.as_ref()).map(|k| format!(" --kubeconfig {}", k.display()));
        let (context, namespace) = (&self.context, &self.namespace);
        format!(
            "kubectl{} --context {context} -n {namespace}",
            kubeconfig.unwrap_or_default()
        )
    }

    /// Runs kubectl with `args` (and `stdin`), whatever the outcome.
    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> Result<Output, Error> {
        let mut cmd = self.command();
        let piped = stdin.map_or_else(Stdio::null, |_| Stdio::piped());
        cmd.args(args)
            .stdin(piped)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let running = format!("running {}", self.program.display());
        let mut child = cmd.spawn().map_err(io_error(running))?;
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            let written = pipe.write_all(text.as_bytes());
            written.map_err(io_error("writing kubectl's stdin"))?;
        }
        let out = child.wait_with_output();
        let out = out.map_err(io_error("waiting for kubectl"))?;
        Ok(Output {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }

    /// Runs kubectl and requires success: its standard output, or
    /// [`Error::Command`] with its error output.
    pub fn ok(&self, args: &[&str], stdin: Option<&str>) -> Result<String, Error> {
        let run = self.run(args, stdin)?;
        if !run.ok {
            return Err(Error::Command {
                command: format!("kubectl {}", args.join(" ")),
                detail: run.stderr,
            });
        }
        Ok(run.stdout)
    }

    /// Runs kubectl and parses its JSON output (`Null` when it printed nothing).
    pub fn json(&self, args: &[&str]) -> Result<Value, Error> {
        let out = self.ok(args, None)?;
        if out.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&out).map_err(|_| Error::Command {
            command: format!("kubectl {}", args.join(" ")),
            detail: "printed no JSON".into(),
        })
    }

    /// The `items` of the list `kubectl args -o json` prints.
    pub fn items(&self, args: &[&str]) -> Result<Vec<Value>, Error> {
        let list = self.json(&[args, &["-o", "json"]].concat())?;
        Ok(list["items"].as_array().cloned().unwrap_or_default())
    }

    /// One object, `None` when it does not exist.
    pub fn get(&self, kind: &str, name: &str) -> Result<Option<Value>, Error> {
        let v = self.json(&["get", kind, name, "--ignore-not-found", "-o", "json"])?;
        Ok(Some(v).filter(|v| !v.is_null()))
    }

    /// Creates objects from a JSON or YAML document.
    pub fn create(&self, doc: &str) -> Result<(), Error> {
        self.ok(&["create", "-f", "-"], Some(doc)).map(drop)
    }

    /// Applies a JSON or YAML document.
    pub fn apply(&self, doc: &str) -> Result<(), Error> {
        self.ok(&["apply", "-f", "-"], Some(doc)).map(drop)
    }

    /// Applies a CRD and waits until the API server serves it.
    pub fn apply_crd(&self, doc: &str, name: &str) -> Result<(), Error> {
        self.apply(doc)?;
        self.wait_established(name)
    }

    /// Waits (up to 60 s) until the API server serves CRD `name`.
    pub fn wait_established(&self, name: &str) -> Result<(), Error> {
        let crd = format!("crd/{name}");
        let args = ["wait", "--for=condition=Established", &crd, "--timeout=60s"];
        self.ok(&args, None).map(drop)
    }

    /// Deletes an object without waiting for its finalizers.
    pub fn delete(&self, kind: &str, name: &str) -> Result<(), Error> {
        self.ok(&["delete", kind, name, "--wait=false"], None)
            .map(drop)
    }

    /// A JSON merge patch.
    pub fn merge_patch(&self, kind: &str, name: &str, patch: &Value) -> Result<(), Error> {
        let patch = patch.to_string();
        self.ok(&["patch", kind, name, "--type=merge", "-p", &patch], None)
            .map(drop)
    }
}
