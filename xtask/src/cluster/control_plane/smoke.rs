//! `cargo xtask control-plane smoke`: start, exercise, stop, check cleanup.

use std::fs;

use anyhow::{ensure, Result};

use super::ControlPlane;
use crate::support::kube::Kube;
use crate::support::processes::nothing_left;
use crate::support::suite::Suite;

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

/// Runs kubectl and requires success; returns stdout, trimmed.
fn ok(kube: &Kube, args: &[&str], stdin: Option<&str>) -> Result<String> {
    Ok(kube.ok(args, stdin)?.trim().to_string())
}

/// Runs kubectl and requires a 409 Conflict failure.
fn conflict(kube: &Kube, args: &[&str]) -> Result<()> {
    let run = kube.run(args, None)?;
    ensure!(
        !run.ok,
        "kubectl {} succeeded, expected a conflict",
        args.join(" ")
    );
    ensure!(
        run.stderr.contains("(Conflict)"),
        "expected a Conflict error, got: {}",
        run.stderr
    );
    println!("  409 Conflict");
    Ok(())
}

fn status_body(rv: &str, phase: &str) -> String {
    format!(
        r#"{{"apiVersion":"smoke.blue.dev/v1","kind":"Widget","metadata":{{"name":"w1","namespace":"default","resourceVersion":"{rv}"}},"spec":{{"size":1}},"status":{{"phase":"{phase}"}}}}"#
    )
}

/// The checks against a running control plane; the first failure stops them.
fn exercise(cp: &ControlPlane, suite: &mut Suite) -> bool {
    let kube = cp.kube();
    let rv = std::cell::RefCell::new(String::new());
    let get = |path: &str| {
        let jsonpath = format!("jsonpath={{{path}}}");
        let args = ["get", "widgets.smoke.blue.dev", "w1", "-o", &jsonpath];
        ok(&kube, &args, None)
    };
    suite.check("kubectl get ns", || {
        let out = ok(&kube, &["get", "ns", "-o", "name"], None)?;
        ensure!(
            out.contains("namespace/default"),
            "no default namespace in {out:?}"
        );
        println!("  {} namespaces", out.lines().count());
        Ok(())
    }) && suite.check("apply CRD with status subresource", || {
        kube.apply_crd(CRD, "widgets.smoke.blue.dev")
    }) && suite.check("create a Widget", || {
        kube.create(WIDGET)?;
        let got = get(".metadata.resourceVersion")?;
        ensure!(!got.is_empty(), "no resourceVersion");
        println!("  resourceVersion {got}");
        *rv.borrow_mut() = got;
        Ok(())
    }) && suite.check("replace --raw .../status", || {
        let file = cp.dir().join("status.json");
        fs::write(&file, status_body(&rv.borrow(), "Ready"))?;
        let file = file.display().to_string();
        ok(&kube, &["replace", "--raw", STATUS_PATH, "-f", &file], None)?;
        let phase = get(".status.phase")?;
        ensure!(phase == "Ready", "status.phase is {phase:?}");
        Ok(())
    }) && suite.check("stale-resourceVersion merge patch -> 409", || {
        let patch = format!(
            r#"{{"metadata":{{"resourceVersion":"{}"}},"spec":{{"size":2}}}}"#,
            rv.borrow()
        );
        let widget = ["patch", "widgets.smoke.blue.dev", "w1"];
        conflict(
            &kube,
            &[&widget[..], &["--type=merge", "-p", &patch]].concat(),
        )
    }) && suite.check(
        "stale-resourceVersion replace --raw .../status -> 409",
        || {
            let file = cp.dir().join("stale-status.json");
            fs::write(&file, status_body(&rv.borrow(), "Stale"))?;
            let file = file.display().to_string();
            conflict(&kube, &["replace", "--raw", STATUS_PATH, "-f", &file])
        },
    )
}

/// The smoke test; fails when any check fails.
pub fn smoke() -> Result<()> {
    let mut suite = Suite::default();
    let mut started = None;
    suite.check("start control plane", || {
        let cp = ControlPlane::start()?;
        println!(
            "  ready in {:.1}s at {}, context {}, kubeconfig {}",
            cp.startup_time().as_secs_f64(),
            cp.server(),
            cp.context(),
            cp.kubeconfig_path().display()
        );
        started = Some(cp);
        Ok(())
    });
    if let Some(cp) = started {
        exercise(&cp, &mut suite);
        let dir = cp.dir().to_path_buf();
        suite.check("stop", || cp.stop());
        suite.check(
            "no etcd/kube-apiserver process left, temp dir removed",
            || nothing_left(&[dir]),
        );
    }
    suite.finish("smoke", "")
}
