//! The admission webhook on a real API server: `kubectl apply` of bad
//! input refused with the package's message and field, immutable fields
//! held, metadata-only and status updates untouched, the failure
//! policies with the webhook down, certificates replaced while it runs.
//! A webhook configuration is cluster-wide, so each check that registers
//! one runs on a control plane of its own.

use anyhow::{ensure, Context, Result};
use blue_kubernetes::admission::{
    webhook_configuration, ClientConfig, FailurePolicy, WebhookOptions,
};
use blue_kubernetes::runner::webhook::SelfSigned;
use serde_json::{json, Value};

use super::{get, manifest, wait_phase, wait_ready, World, LCM};
use crate::support::wait::{eventually, DEADLINE};

/// The example's webhook configuration (the runner's name).
pub(super) const CONFIGURATION: &str = "local-configmap-operator";
/// A value that must never reach a denial.
pub(super) const PLANTED: &str = "pl4nted-s3cret-value";

pub(super) fn webhook_args(w: &World, policy: &str) -> Vec<String> {
    let mut args = w.admin_args();
    args.extend(
        [
            "--webhook-bind",
            "127.0.0.1:0",
            "--webhook-self-signed",
            "--webhook-failure-policy",
            policy,
        ]
        .map(String::from),
    );
    args
}

/// Starts the operator with its self-signed webhook and waits until the
/// configuration it applies is there.
pub(super) fn start_with_webhook(w: &mut World, policy: &str) -> Result<()> {
    let args = webhook_args(w, policy);
    w.start_operator(&args)?;
    eventually("the webhook configuration", DEADLINE, || {
        let found = w
            .kube
            .get("validatingwebhookconfiguration", CONFIGURATION)?;
        found.context("not applied yet").map(drop)
    })
}

/// `kubectl apply` of `name` with `spec`: Ok(stderr) when refused.
pub(super) fn refused(w: &World, name: &str, spec: Value) -> Result<String> {
    let run = w
        .kube
        .run(&["apply", "-f", "-"], Some(&manifest(name, spec)))?;
    ensure!(!run.ok, "{name} was admitted");
    Ok(run.stderr)
}

pub(super) fn bad_keys() -> Value {
    json!({"config": {"data": {"bad key": PLANTED}}})
}

#[test]
fn admission_refuses_bad_input_at_kubectl_apply_and_admits_the_controllers_writes() -> Result<()> {
    crate::support::run(World::on_own_control_plane("adm")?, Some("alpha"), |w| {
        start_with_webhook(w, "Fail")?;
        let stderr = refused(w, "bad", bad_keys())?;
        ensure!(
            stderr.contains("The LocalConfigMap \"bad\" is invalid"),
            "{stderr}"
        );
        ensure!(
            stderr.contains("spec.config: config.data keys must be"),
            "{stderr}"
        );
        ensure!(
            !stderr.contains(PLANTED),
            "the value reached the denial: {stderr}"
        );
        ensure!(w.kube.get(LCM, "bad")?.is_none(), "bad was stored");
        // A valid one converges: the controller's finalizer and status
        // writes pass the webhook.
        let alpha = json!({"config": {"configMapName": "alpha-cm", "data": {"k": "v"}}});
        w.kube.apply(&manifest("alpha", alpha))?;
        wait_ready(w, "alpha")?;
        let edit = json!({"config": {"configMapName": "other-cm", "data": {"k": "v"}}});
        let stderr = refused(w, "alpha", edit)?;
        ensure!(stderr.contains("spec.config.configMapName"), "{stderr}");
        let labelled = w.kube.run(&["label", LCM, "alpha", "team=a"], None)?;
        ensure!(labelled.ok, "a label was refused: {}", labelled.stderr);
        w.kube
            .run(&["delete", LCM, "alpha", "--wait=false"], None)?;
        eventually("alpha gone", DEADLINE, || {
            ensure!(w.kube.get(LCM, "alpha")?.is_none(), "still there");
            Ok(())
        })
    })
}

#[test]
fn admission_with_fail_and_the_webhook_down_refuses_updates_but_accepts_deletes() -> Result<()> {
    crate::support::run(World::on_own_control_plane("adm")?, Some("alpha"), |w| {
        start_with_webhook(w, "Fail")?;
        w.kube
            .apply(&manifest("alpha", json!({"config": {"data": {"k": "v"}}})))?;
        wait_ready(w, "alpha")?;
        // The drain stops the webhook last; the configuration stays.
        w.stop_operator_cleanly()?;
        let labelled = w.kube.run(&["label", LCM, "alpha", "team=a"], None)?;
        ensure!(!labelled.ok, "a label was admitted with no webhook");
        ensure!(
            labelled.stderr.contains("failed calling webhook"),
            "the refusal does not say why: {}",
            labelled.stderr
        );
        let deleted = w
            .kube
            .run(&["delete", LCM, "alpha", "--wait=false"], None)?;
        ensure!(deleted.ok, "the delete was refused: {}", deleted.stderr);
        let held = get(w, "alpha")?;
        ensure!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
        // Back: the finalizer comes off, the resource goes.
        start_with_webhook(w, "Fail")?;
        eventually("alpha gone", DEADLINE, || {
            ensure!(w.kube.get(LCM, "alpha")?.is_none(), "still there");
            Ok(())
        })
    })
}

#[test]
fn admission_with_ignore_and_the_webhook_down_leaves_bad_input_to_the_pass() -> Result<()> {
    crate::support::run(World::on_own_control_plane("adm")?, Some("bad"), |w| {
        start_with_webhook(w, "Ignore")?;
        ensure!(refused(w, "bad", bad_keys()).is_ok());
        // The configuration stays, nothing answers it.
        let args = w.admin_args();
        w.start_operator(&args)?;
        w.kube.apply(&manifest("bad", bad_keys()))?;
        wait_phase(w, "bad", "Invalid", "InvalidConfiguration").map(drop)
    })
}

/// A free loopback port for the operator's webhook.
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

fn write_pair(dir: &std::path::Path, made: &SelfSigned) -> Result<()> {
    for (name, pem) in [("tls.crt", made.cert_pem()), ("tls.key", made.key_pem())] {
        let staged = dir.join(format!(".{name}.new"));
        std::fs::write(&staged, pem)?;
        std::fs::rename(&staged, dir.join(name))?;
    }
    Ok(())
}

/// Registers the webhook at `port` trusting `ca` only.
fn register(w: &World, port: u16, ca: &str) -> Result<()> {
    let client = ClientConfig::Url {
        base: format!("https://127.0.0.1:{port}"),
        ca_bundle: ca.to_string(),
    };
    let schema =
        blue_kubernetes::ResourceSchema::of::<local_configmap_operator::package::LocalConfigMaps>();
    let configuration =
        webhook_configuration([&schema], &WebhookOptions::new(CONFIGURATION, client));
    Ok(w.kube.apply(&configuration.to_string())?)
}

/// Refused by the package (the webhook answered over TLS), not for want
/// of an answer.
fn refused_by_the_package(w: &World) -> Result<()> {
    let stderr = refused(w, "bad", bad_keys())?;
    ensure!(stderr.contains("config.data keys must be"), "{stderr}");
    Ok(())
}

#[test]
fn admission_certificates_replaced_while_running_are_picked_up() -> Result<()> {
    crate::support::run(World::on_own_control_plane("adm")?, None, |w| {
        let certs = w.work().join("certs");
        std::fs::create_dir_all(&certs)?;
        let (first, second) = (SelfSigned::new(&[])?, SelfSigned::new(&[])?);
        write_pair(&certs, &first)?;
        let port = free_port()?;
        let mut args = w.admin_args();
        let bind = format!("127.0.0.1:{port}");
        let dir = certs.display().to_string();
        args.extend([
            "--webhook-bind".into(),
            bind,
            "--webhook-cert-dir".into(),
            dir,
        ]);
        w.start_operator(&args)?;
        register(w, port, first.ca_pem())?;
        eventually("refused with the first certificate", DEADLINE, || {
            refused_by_the_package(w)
        })?;
        write_pair(&certs, &second)?;
        register(w, port, second.ca_pem())?;
        eventually("refused with the second certificate", DEADLINE, || {
            refused_by_the_package(w)
        })
    })
}

#[test]
fn admission_the_shipped_service_configurations_are_accepted_by_the_server() -> Result<()> {
    crate::support::run(World::new("adm")?, None, |w| {
        for yaml in [
            include_str!(
                "../../../../../examples/local-configmap/manifests/webhook-configuration.yaml"
            ),
            include_str!("../../../../../examples/postgres/manifests/webhook-configuration.yaml"),
        ] {
            let run = w
                .kube
                .run(&["apply", "--dry-run=server", "-f", "-"], Some(yaml))?;
            ensure!(run.ok, "refused: {}", run.stderr);
        }
        Ok(())
    })
}

/// The requests the webhook answered, summed over codes and kinds.
fn answered(metrics: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("controller_runtime_webhook_requests_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[test]
fn admission_metadata_only_updates_pass_a_validator_that_refuses_every_spec_and_status_never_reaches_it(
) -> Result<()> {
    crate::support::run(World::on_own_control_plane("adm")?, Some("alpha"), |w| {
        use blue_kubernetes::package::{UserFacingMessage, ValidationErrors, WorkflowOutcome};
        use blue_kubernetes::{controller, Config, Observation, Package};
        let runtime = tokio::runtime::Runtime::new()?;
        let _inside = runtime.enter();
        w.kube
            .apply(&manifest("alpha", json!({"config": {"data": {"k": "v"}}})))?;
        let descriptor = local_configmap_operator::package::descriptor();
        let refuse_all = Package::builder(descriptor)
            .validate(|_| {
                Ok(ValidationErrors::from(UserFacingMessage::new(
                    "every spec is refused",
                )))
            })
            .identity(|opts| Ok(vec![Some(opts.profile().to_string())]))
            .observe(|_| Ok(Observation::ABSENT))
            .converge(|_| Ok(WorkflowOutcome::new()))
            .delete(|_| Ok(WorkflowOutcome::new()))
            .build()?;
        let mut config = Config::new(w.envtest().client()?, vec![refuse_all]);
        config.namespace = w.kube.namespace().into();
        let controller = controller(config)?;
        let webhook = w
            .envtest()
            .serve_webhook(&controller, "refuse-all", FailurePolicy::Fail)?;
        let labelled = w.kube.run(&["label", LCM, "alpha", "team=a"], None)?;
        ensure!(labelled.ok, "a label was refused: {}", labelled.stderr);
        let stderr = refused(w, "alpha", json!({"config": {"data": {"k": "w"}}}))?;
        ensure!(stderr.contains("every spec is refused"), "{stderr}");
        let before = answered(&controller.metrics().encode());
        let status = json!({"status": {"phase": "Failed"}});
        let patched = w.kube.run(
            &[
                "patch",
                LCM,
                "alpha",
                "--subresource=status",
                "--type=merge",
                "-p",
                &status.to_string(),
            ],
            None,
        )?;
        ensure!(
            patched.ok,
            "the status write was refused: {}",
            patched.stderr
        );
        let after = answered(&controller.metrics().encode());
        ensure!(
            before == after && before >= 2,
            "{before} requests, then {after}"
        );
        webhook.uninstall()?;
        Ok(())
    })
}
