//! What the people running the operator see: the log, Events, `/metrics`
//! and health, and the startup preflight.

use std::fs;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use serde_json::Value;

use super::{eventually, get, uid, World, DEADLINE, LCM};
use crate::support::in_cluster::{in_cluster_args, request_token_for};
use crate::support::manifests::{in_namespace, RBAC};
use crate::support::Transport;
use blue_e2e::scrape::{http_get, sample};
use blue_envtest::operator::{log_len, log_since};

/// The component the example reports Events as.
const COMPONENT: &str = "local-configmap-operator";

/// After `charlie_failed_then_recovered`: charlie's failed converge is in the log at
/// WARN with the package's own error text, and its history (a Warning
/// ExecutionFailed, then Normal Converged) is in Events and `kubectl describe`.
#[test]
fn failure_explained() -> Result<()> {
    super::check(
        Some("charlie"),
        super::drift::charlie_failed_then_recovered,
        |w| {
            let log = fs::read_to_string(w.operator_log()).context("reading the operator log")?;
            let line = log
                .lines()
                .find(|l| l.contains("callback failed") && l.contains("name=\"charlie\""))
                .context("no `callback failed` line for charlie in the operator log")?;
            for needle in [
                "WARN",
                "callback=\"converge\"",
                "attempt=",
                "next_retry=",
                "owned by another resource",
            ] {
                ensure!(line.contains(needle), "{needle:?} missing from: {line}");
            }

            let charlie = get(w, "charlie")?;
            let selector = format!("involvedObject.uid={}", uid(&charlie)?);
            let events = eventually("charlie's Events", DEADLINE, || {
                let items = w
                    .kube
                    .items(&["get", "events", "--field-selector", &selector])?;
                let has = |kind: &str, reason: &str| {
                    items
                        .iter()
                        .any(|e| e["type"] == kind && e["reason"] == reason)
                };
                ensure!(
                    has("Warning", "ExecutionFailed") && has("Normal", "Converged"),
                    "events so far: {}",
                    summary(&items)
                );
                Ok(items)
            })?;
            for event in &events {
                ensure!(
                    event["source"]["component"] == COMPONENT,
                    "event reported by {}",
                    event["source"]["component"]
                );
                let quiet = !event.to_string().contains("owned by another");
                ensure!(quiet, "an Event carries callback error text");
            }
            let failed = events
                .iter()
                .find(|e| e["reason"] == "ExecutionFailed")
                .context("no ExecutionFailed event")?;
            let message = failed["message"].as_str().unwrap_or("");
            let retry = message.starts_with("converge failed; retry ");
            ensure!(retry, "ExecutionFailed message: {message:?}");
            let described = w.kube.ok(&["describe", LCM, "charlie"], None)?;
            ensure!(
                described.contains("ExecutionFailed")
                    && described.contains("converge failed; retry"),
                "kubectl describe shows no failure history:\n{described}"
            );
            let quiet = !described.contains("owned by another");
            ensure!(quiet, "kubectl describe shows callback error text");
            Ok(())
        },
    )
}

fn summary(events: &[Value]) -> String {
    let list: Vec<String> = events
        .iter()
        .map(|e| format!("{}/{} x{}", e["type"], e["reason"], e["count"]))
        .collect();
    format!("[{}]", list.join(", "))
}

/// Restarts the operator with `--metrics-bind 127.0.0.1:0`, finds the
/// address in its log and scrapes `/metrics`, `/healthz` and `/readyz`.
#[test]
fn metrics_scrape() -> Result<()> {
    super::check(None, super::alpha, |w| {
        let address = start_with_metrics(w, w.admin_args())?;
        eventually("/readyz 200", DEADLINE, || http_get(&address, "/readyz"))?;
        http_get(&address, "/healthz")?;
        let controller = r#"controller="localconfigmaps.examples.blue.dev""#;
        eventually("reconcile metrics", DEADLINE, || {
            let text = http_get(&address, "/metrics")?;
            for needle in [
                format!("controller_runtime_reconcile_total{{{controller},result=\"success\"}}"),
                format!("blue_resources{{{controller},phase=\"Ready\"}}"),
                "workqueue_depth{name=\"blue-kubernetes\"}".to_string(),
                "blue_transport_requests_total{operation=\"list\",result=\"ok\"}".to_string(),
            ] {
                ensure!(text.contains(&needle), "{needle} not in /metrics");
            }
            let ready = sample(
                &text,
                &format!("blue_resources{{{controller},phase=\"Ready\"}}"),
            )?;
            ensure!(ready >= 1.0, "no Ready resource counted");
            ensure!(sample(&text, "blue_polls_total")? >= 1.0, "no list counted");
            if w.transport == Transport::Proxy {
                let starts = sample(&text, "blue_proxy_starts_total")?;
                ensure!(starts >= 1.0, "the proxy's start not counted");
                // alpha's status changes every 2 s: its events arrive by watch.
                let events = sample(&text, "blue_watch_events_total")?;
                ensure!(events >= 1.0, "no watch event counted");
                let fallbacks = sample(&text, "blue_watch_fallbacks_total")?;
                ensure!(fallbacks == 0.0, "{fallbacks} watch fallbacks");
            }
            Ok(())
        })
    })
}

/// With the default heartbeat, periodic checks of a healthy resource write
/// nothing: bravo (2 s interval) is checked at least three times, counted
/// by the operator's observe callbacks, and its resourceVersion stays.
#[test]
fn quiet_checks_write_nothing() -> Result<()> {
    super::check(Some("bravo"), super::bravo, |w| {
        let mut args = w.admin_args();
        super::watch::set_flag(&mut args, "--status-heartbeat-ms", "3600000")?;
        start_with_metrics(w, args).and_then(|address| {
            let observes = || -> Result<f64> { sample(&http_get(&address, "/metrics")?, OBSERVES) };
            // The restarted operator's first check of bravo may still write
            // (the schedule it had in memory is gone); judge the ones after it.
            let first = eventually("a first round of checks", DEADLINE, || {
                let n = observes()?;
                ensure!(n >= 3.0, "{n} observes");
                Ok(n)
            })?;
            let before = get(w, "bravo")?;
            let started = std::time::Instant::now();
            eventually("three more intervals of bravo", DEADLINE, || {
                let n = observes()?;
                ensure!(n >= first + 3.0, "{} observes since", n - first);
                let late = started.elapsed() >= Duration::from_millis(6_600);
                ensure!(late, "too soon");
                Ok(())
            })?;
            let after = get(w, "bravo")?;
            let version = |r: &Value| r["metadata"]["resourceVersion"].clone();
            ensure!(
                version(&after) == version(&before),
                "a healthy resource's periodic check wrote status: {} -> {}",
                before["status"],
                after["status"]
            );
            Ok(())
        })
    })
}

/// The observe callbacks the example has run, as `/metrics` counts them.
const OBSERVES: &str = r#"blue_callback_duration_seconds_count{controller="localconfigmaps.examples.blue.dev",callback="observe"}"#;

/// Starts the operator with `args` and a metrics listener; its address.
fn start_with_metrics(w: &mut World, mut args: Vec<String>) -> Result<String> {
    let offset = log_len(&w.operator_log());
    args.extend(["--metrics-bind".into(), "127.0.0.1:0".into()]);
    w.start_operator(&args)?;
    eventually("the operator's listener address", DEADLINE, || {
        let log = log_since(&w.operator_log(), offset);
        let line = log
            .lines()
            .find(|l| l.contains("serving /metrics"))
            .context("not logged yet")?;
        let address = line
            .rsplit("http://")
            .next()
            .context("no address in the line")?;
        Ok(address.trim().to_string())
    })
}

#[test]
fn preflight_unknown_context() -> Result<()> {
    crate::support::run(World::new("lcm")?, None, |w| {
        let mut args = w.admin_args();
        super::watch::set_flag(&mut args, "--context", "no-such-context")?;
        refused(
            w,
            &args,
            "context no-such-context does not exist in the kubeconfig",
        )
    })
}

#[test]
fn preflight_missing_crd() -> Result<()> {
    crate::support::run(World::new("lcm")?, None, |w| {
        let mut args = w.admin_args();
        crate::support::add_test_hooks(&mut args, "api-group=missing.blue.dev");
        refused(w, &args, "missing.blue.dev/v1alpha1 is not served")
    })
}

#[test]
fn preflight_wrong_version() -> Result<()> {
    crate::support::run(World::new("lcm")?, None, |w| {
        let mut args = w.admin_args();
        crate::support::add_test_hooks(&mut args, "api-version=v1");
        refused(w, &args, "examples.blue.dev/v1 is not served")
    })
}

/// The operator, with a ServiceAccount token whose Role lacks `update` on
/// `localconfigmaps/status`, refuses to start and names the verb and resource.
#[test]
fn preflight_missing_status_rbac() -> Result<()> {
    crate::support::run(World::new("lcm")?, None, |w| {
        const ACCOUNT: &str = "lcm-no-status-update";
        let rbac = in_namespace(RBAC, w.kube.namespace())
            .replace(
                "name: local-configmap-operator",
                &format!("name: {ACCOUNT}"),
            )
            .replace("verbs: [get, update]", "verbs: [get]");
        let found = rbac.contains("verbs: [get]\n");
        ensure!(found, "the Role's status rule was not found");
        w.kube.apply(&rbac)?;
        let token = eventually("a token for the restricted account", DEADLINE, || {
            request_token_for(w, ACCOUNT)
        })?;
        let args = in_cluster_args(w, &w.scratch("no-status-serviceaccount"), &token)?;
        let expected = format!(
            "RBAC does not allow update localconfigmaps/status.examples.blue.dev in namespace {}",
            w.kube.namespace()
        );
        refused(w, &args, &expected)
    })
}

/// Starts the operator with `args`, expects it to exit non-zero within the
/// deadline having logged `expected`.
fn refused(w: &mut World, args: &[String], expected: &str) -> Result<()> {
    let offset = log_len(&w.operator_log());
    w.start_operator(args)?;
    eventually("the operator to exit", DEADLINE, || {
        ensure!(!w.operator()?.is_running(), "still running");
        Ok(())
    })?;
    let status = w.stop_operator()?;
    let log = log_since(&w.operator_log(), offset);
    ensure!(!status.success(), "the operator started anyway ({status})");
    let problems: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("preflight") && l.contains("ERROR"))
        .collect();
    ensure!(
        problems.iter().any(|l| l.contains(expected)),
        "no preflight line containing {expected:?}; preflight lines: {problems:#?}"
    );
    Ok(())
}
