//! kubectl as the checks use it: bound to one kubeconfig/context, one
//! namespace and a private discovery cache, with a request deadline so a
//! hung server fails a check instead of hanging the run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// How to reach the cluster under test.
#[derive(Clone, Debug)]
pub struct Kube {
    kubectl: PathBuf,
    kubeconfig: Option<PathBuf>,
    context: String,
    cache_dir: PathBuf,
    namespace: String,
}

#[derive(Debug)]
pub struct Run {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Kube {
    /// kubectl bound to `context` (and `kubeconfig` when given).
    pub fn new(
        kubectl: PathBuf,
        kubeconfig: Option<PathBuf>,
        context: &str,
        cache_dir: &Path,
        namespace: &str,
    ) -> Self {
        Self {
            kubectl,
            kubeconfig,
            context: context.to_string(),
            cache_dir: cache_dir.to_path_buf(),
            namespace: namespace.to_string(),
        }
    }

    /// The kubeconfig, if one is set explicitly.
    pub fn kubeconfig(&self) -> Option<&Path> {
        self.kubeconfig.as_deref()
    }

    pub fn context(&self) -> &str {
        &self.context
    }

    /// The same connection, bound to `namespace`.
    pub fn in_namespace(&self, namespace: &str) -> Kube {
        Kube {
            namespace: namespace.to_string(),
            ..self.clone()
        }
    }

    /// The namespace every namespaced call uses.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// A kubectl command with the connection flags, the namespace and a
    /// 20 s request deadline.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.kubectl);
        if let Some(k) = &self.kubeconfig {
            cmd.arg("--kubeconfig").arg(k);
        }
        cmd.arg("--context")
            .arg(&self.context)
            .arg("--cache-dir")
            .arg(&self.cache_dir)
            .arg("--request-timeout=20s")
            .arg("-n")
            .arg(&self.namespace);
        cmd
    }

    /// Runs kubectl with `args` (and `stdin`), whatever the outcome.
    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> Result<Run> {
        let mut cmd = self.command();
        let piped = stdin.map_or_else(Stdio::null, |_| Stdio::piped());
        cmd.args(args)
            .stdin(piped)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().context("running kubectl")?;
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(text.as_bytes())
                .context("writing kubectl's stdin")?;
        }
        let out = child.wait_with_output().context("waiting for kubectl")?;
        Ok(Run {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }

    /// Runs kubectl and requires success; returns stdout.
    pub fn ok(&self, args: &[&str], stdin: Option<&str>) -> Result<String> {
        let run = self.run(args, stdin)?;
        if !run.ok {
            bail!("kubectl {} failed: {}", args.join(" "), run.stderr);
        }
        Ok(run.stdout)
    }

    /// Runs kubectl and parses its JSON output (`Null` when it printed nothing).
    pub fn json(&self, args: &[&str]) -> Result<Value> {
        let out = self.ok(args, None)?;
        if out.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&out).with_context(|| format!("parsing kubectl {}", args.join(" ")))
    }

    /// The `items` of the list `kubectl args -o json` prints.
    pub fn items(&self, args: &[&str]) -> Result<Vec<Value>> {
        let list = self.json(&[args, &["-o", "json"]].concat())?;
        Ok(list["items"].as_array().cloned().unwrap_or_default())
    }

    /// One object, `None` when it does not exist.
    pub fn get(&self, kind: &str, name: &str) -> Result<Option<Value>> {
        let v = self.json(&["get", kind, name, "--ignore-not-found", "-o", "json"])?;
        Ok(Some(v).filter(|v| !v.is_null()))
    }

    /// Creates objects from a JSON or YAML document.
    pub fn create(&self, doc: &str) -> Result<()> {
        self.ok(&["create", "-f", "-"], Some(doc)).map(drop)
    }

    /// Applies a JSON or YAML document.
    pub fn apply(&self, doc: &str) -> Result<()> {
        self.ok(&["apply", "-f", "-"], Some(doc)).map(drop)
    }

    /// Deletes an object without waiting for its finalizers.
    pub fn delete(&self, kind: &str, name: &str) -> Result<()> {
        self.ok(&["delete", kind, name, "--wait=false"], None)
            .map(drop)
    }

    /// A JSON merge patch.
    pub fn merge_patch(&self, kind: &str, name: &str, patch: &Value) -> Result<()> {
        let patch = patch.to_string();
        self.ok(&["patch", kind, name, "--type=merge", "-p", &patch], None)
            .map(drop)
    }
}
