//! `cargo xtask control-plane smoke`: start, exercise, stop, check cleanup.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use anyhow::{bail, ensure, Context, Result};

use super::ControlPlane;

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.smoke.blue.dev
spec:
  group: smoke.blue.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
          status:
            type: object
            properties:
              phase: {type: string}
"#;

const WIDGET: &str = r#"apiVersion: smoke.blue.dev/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {size: 1}
"#;

const STATUS_PATH: &str = "/apis/smoke.blue.dev/v1/namespaces/default/widgets/w1/status";

struct Report {
    passed: usize,
    failed: usize,
}

impl Report {
    /// Runs one check; returns whether it passed.
    fn check(&mut self, name: &str, f: impl FnOnce() -> Result<String>) -> bool {
        match f() {
            Ok(detail) => {
                self.passed += 1;
                println!("PASS {name}{}", opt(&detail));
                true
            }
            Err(err) => {
                self.failed += 1;
                println!("FAIL {name}: {err:#}");
                false
            }
        }
    }
}

fn opt(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(" ({detail})")
    }
}

fn run(mut cmd: Command, stdin: Option<&str>) -> Result<Output> {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running kubectl")?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes())?;
    }
    Ok(child.wait_with_output()?)
}

/// Runs kubectl and requires success; returns stdout.
fn ok(cp: &ControlPlane, args: &[&str], stdin: Option<&str>) -> Result<String> {
    let mut cmd = cp.kubectl();
    cmd.args(args);
    let out = run(cmd, stdin)?;
    ensure!(
        out.status.success(),
        "kubectl {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs kubectl and requires a 409 Conflict failure.
fn conflict(cp: &ControlPlane, args: &[&str]) -> Result<String> {
    let mut cmd = cp.kubectl();
    cmd.args(args);
    let out = run(cmd, None)?;
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    ensure!(
        !out.status.success(),
        "kubectl {} succeeded, expected a conflict",
        args.join(" ")
    );
    ensure!(
        stderr.contains("(Conflict)"),
        "expected a Conflict error, got: {stderr}"
    );
    Ok("409 Conflict".to_string())
}

fn status_body(rv: &str, phase: &str) -> String {
    format!(
        r#"{{"apiVersion":"smoke.blue.dev/v1","kind":"Widget","metadata":{{"name":"w1","namespace":"default","resourceVersion":"{rv}"}},"spec":{{"size":1}},"status":{{"phase":"{phase}"}}}}"#
    )
}

fn exercise(cp: &ControlPlane, report: &mut Report) -> bool {
    let rv = std::cell::RefCell::new(String::new());
    report.check("kubectl get ns", || {
        let out = ok(cp, &["get", "ns", "-o", "name"], None)?;
        ensure!(
            out.contains("namespace/default"),
            "no default namespace in {out:?}"
        );
        Ok(out.lines().count().to_string() + " namespaces")
    }) && report.check("apply CRD with status subresource", || {
        ok(cp, &["apply", "-f", "-"], Some(CRD))?;
        ok(
            cp,
            &[
                "wait",
                "--for=condition=Established",
                "--timeout=60s",
                "crd/widgets.smoke.blue.dev",
            ],
            None,
        )?;
        Ok("established".to_string())
    }) && report.check("create a Widget", || {
        ok(cp, &["create", "-f", "-"], Some(WIDGET))?;
        let got = ok(
            cp,
            &[
                "get",
                "widgets.smoke.blue.dev",
                "w1",
                "-o",
                "jsonpath={.metadata.resourceVersion}",
            ],
            None,
        )?;
        ensure!(!got.is_empty(), "no resourceVersion");
        *rv.borrow_mut() = got.clone();
        Ok(format!("resourceVersion {got}"))
    }) && report.check("replace --raw .../status", || {
        let file = cp.dir().join("status.json");
        fs::write(&file, status_body(&rv.borrow(), "Ready"))?;
        let file = file.display().to_string();
        ok(cp, &["replace", "--raw", STATUS_PATH, "-f", &file], None)?;
        let phase = ok(
            cp,
            &[
                "get",
                "widgets.smoke.blue.dev",
                "w1",
                "-o",
                "jsonpath={.status.phase}",
            ],
            None,
        )?;
        ensure!(phase == "Ready", "status.phase is {phase:?}");
        Ok("status.phase=Ready".to_string())
    }) && report.check("stale-resourceVersion merge patch -> 409", || {
        let patch = format!(
            r#"{{"metadata":{{"resourceVersion":"{}"}},"spec":{{"size":2}}}}"#,
            rv.borrow()
        );
        conflict(
            cp,
            &[
                "patch",
                "widgets.smoke.blue.dev",
                "w1",
                "--type=merge",
                "-p",
                &patch,
            ],
        )
    }) && report.check(
        "stale-resourceVersion replace --raw .../status -> 409",
        || {
            let file = cp.dir().join("stale-status.json");
            fs::write(&file, status_body(&rv.borrow(), "Stale"))?;
            let file = file.display().to_string();
            conflict(cp, &["replace", "--raw", STATUS_PATH, "-f", &file])
        },
    )
}

/// Processes whose command line mentions `dir` (our etcd and apiserver do).
fn processes_mentioning(dir: &Path) -> Result<Vec<String>> {
    let needle = dir.display().to_string();
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc")? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(raw) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmdline.contains(&needle) {
            found.push(format!("{pid}: {}", cmdline.trim()));
        }
    }
    Ok(found)
}

/// The smoke test; fails when any check fails.
pub fn smoke() -> Result<()> {
    let mut report = Report {
        passed: 0,
        failed: 0,
    };
    let mut started = None;
    report.check("start control plane", || {
        let cp = ControlPlane::start()?;
        let detail = format!(
            "ready in {:.1}s at {}, context {}, kubeconfig {}",
            cp.startup_time().as_secs_f64(),
            cp.server(),
            cp.context(),
            cp.kubeconfig_path().display()
        );
        started = Some(cp);
        Ok(detail)
    });
    if let Some(cp) = started {
        exercise(&cp, &mut report);
        let dir = cp.dir().to_path_buf();
        report.check("stop", || {
            let t = std::time::Instant::now();
            cp.stop()?;
            Ok(format!("{:.1}s", t.elapsed().as_secs_f64()))
        });
        report.check("no etcd/kube-apiserver process left", || {
            let left = processes_mentioning(&dir)?;
            ensure!(left.is_empty(), "still running: {left:?}");
            Ok(String::new())
        });
        report.check("temp dir removed", || {
            ensure!(!dir.exists(), "{} still exists", dir.display());
            Ok(dir.display().to_string())
        });
    }
    println!("smoke: {} passed, {} failed", report.passed, report.failed);
    if report.failed > 0 {
        bail!("smoke test failed");
    }
    Ok(())
}
