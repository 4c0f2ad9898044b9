//! Shared test helpers: a recording runner and temporary directories.

#![allow(dead_code)] // each test binary uses a different subset

use blue_kubernetes_client::{Error, Invocation, KubectlConfig, Output, Runner};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// One run as the runner saw it, including the input file's contents read
/// while the run was in progress (the file is gone afterwards).
#[derive(Clone, Debug)]
pub struct Call {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub timeout_ms: u64,
    pub input: Option<String>,
    pub input_mode: Option<u32>,
}

impl Call {
    /// The arguments after `[kubectl, --kubeconfig K?, --context C, --request-timeout=Ns]`.
    pub fn args(&self) -> Vec<&str> {
        let start = self
            .argv
            .iter()
            .position(|a| a.starts_with("--request-timeout="))
            .expect("request timeout flag")
            + 1;
        self.argv[start..].iter().map(String::as_str).collect()
    }
}

pub type Calls = Arc<Mutex<Vec<Call>>>;

/// The path kubectl would read for `-f PATH` / `--filename=PATH`.
pub fn input_path(argv: &[String]) -> Option<&str> {
    argv.iter().enumerate().find_map(|(i, a)| match a.as_str() {
        "-f" | "--filename" => argv.get(i + 1).map(String::as_str),
        _ => a
            .strip_prefix("--filename=")
            .or_else(|| a.strip_prefix("-f=")),
    })
}

/// A runner that records every invocation and answers with `respond`.
pub fn recording<F>(respond: F) -> (impl Runner, Calls)
where
    F: Fn(&Invocation) -> Result<Output, Error> + Send + Sync + 'static,
{
    use std::os::unix::fs::PermissionsExt;
    let calls: Calls = Arc::default();
    let recorded = calls.clone();
    let respond = Arc::new(respond);
    let runner = move |inv: Invocation| {
        let recorded = recorded.clone();
        let respond = respond.clone();
        async move {
            let path = input_path(&inv.argv).map(Path::new);
            let input = path.and_then(|p| std::fs::read_to_string(p).ok());
            let input_mode = path
                .and_then(|p| std::fs::metadata(p).ok())
                .map(|m| m.permissions().mode() & 0o777);
            recorded.lock().unwrap().push(Call {
                argv: inv.argv.clone(),
                env: inv.env.clone(),
                timeout_ms: inv.timeout_ms,
                input,
                input_mode,
            });
            respond(&inv)
        }
    };
    (runner, calls)
}

/// A successful run printing `stdout`.
pub fn ok(stdout: &str) -> Output {
    Output {
        exit_code: 0,
        stdout: stdout.to_owned(),
        stderr: String::new(),
    }
}

/// A failed run printing `stderr`.
pub fn failed(exit_code: i32, stderr: &str) -> Output {
    Output {
        exit_code,
        stdout: String::new(),
        stderr: stderr.to_owned(),
    }
}

/// Options for context `test` with the given runner and temp dir.
pub fn options(runner: impl Runner + 'static, temp_dir: &Path) -> KubectlConfig {
    KubectlConfig::for_context("test")
        .with_runner(runner)
        .with_temp_dir(temp_dir)
}

/// The files left anywhere under `dir` (the client keeps its files in a
/// scratch directory inside it), as paths relative to `dir`.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap();
                files.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    files
}

/// Writes an executable shell script (a fake kubectl) into `dir`.
///
/// The file is written by a short-lived `sh`, not by this process: a file
/// this process had open for writing could be inherited by a concurrent
/// test's fork and make exec fail with "text file busy".
pub fn script(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    let status = std::process::Command::new("sh")
        .args([
            "-c",
            "printf '#!/bin/sh\\n%s\\n' \"$1\" > \"$2\" && chmod 755 \"$2\"",
        ])
        .arg("sh")
        .arg(body)
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    path
}
