//! The binary: blue-kubernetes' runner (the standard flags, log, signals,
//! preflight and `crd`) with the `LocalConfigMap` package, its CRD and
//! this operator's [`test_hooks`].

use crate::desired::{ConfigMapSpec, LocalConfigMapConfig};
use crate::package::{self, ConfigMaps};
use crate::test_hooks::{self, TestHooks};
use crate::v1beta1::LocalConfigMapConfigV1beta1;
use blue_kubernetes::admission::{ClientConfig, WebhookOptions};
use blue_kubernetes::runner::Runner;
use blue_kubernetes::ResourceSchema;

/// Concurrent reconciles unless `--workers` says otherwise. Above the
/// library's default of 2: this package's callbacks are a few API requests
/// each, so passes mostly wait on the network, and 16 of them at once keep
/// a burst of new resources (or due checks) moving without queueing.
pub const DEFAULT_WORKERS: usize = 16;

/// `local-configmap-operator`.
pub fn runner() -> Runner {
    runner_of::<LocalConfigMapConfig>()
}

/// `local-configmap-operator`'s next release: `LocalConfigMap` stored at
/// `v1beta1`, `v1alpha1` served through the conversion its webhook server
/// answers (run it with `--webhook-bind`). The same name, so the same
/// Lease, webhook configuration and finalizer as [`runner`]'s: a rolling
/// update from one to the other hands over.
pub fn v1beta1_runner() -> Runner {
    runner_of::<LocalConfigMapConfigV1beta1>()
}

fn runner_of<C: ConfigMapSpec>() -> Runner {
    Runner::new("local-configmap-operator")
        .about(
            "Reconciles LocalConfigMap resources (localconfigmaps.examples.blue.dev): \
             each one owns a ConfigMap holding spec.config.data.",
        )
        .names(package::names())
        .default_workers(DEFAULT_WORKERS)
        .crd(
            ResourceSchema::of::<ConfigMaps<C>>(),
            package::crd_options_of::<C>(),
        )
        .test_hooks(&test_hooks::NAMES)
        .packages(|run| {
            let hooks = TestHooks::from_runner(run)?;
            Ok(vec![ConfigMaps::<C>::with_test_hooks(hooks)?])
        })
}

/// The admission webhook's configuration this example ships
/// (`manifests/webhook-configuration.yaml`, printed by `crd
/// --webhook-service default/local-configmap-operator-webhook --webhook-certificate
/// default/local-configmap-operator-webhook`): reached through the Service in
/// `manifests/webhook.yaml`, its CA injected by cert-manager from the
/// Certificate of the same name, `Fail` while it does not answer.
pub fn webhook_options() -> WebhookOptions {
    let client = ClientConfig::Service {
        namespace: "default".into(),
        name: "local-configmap-operator-webhook".into(),
        port: 443,
        certificate: Some("default/local-configmap-operator-webhook".into()),
        ca_bundle: None,
    };
    WebhookOptions::new("local-configmap-operator", client)
}

#[cfg(test)]
mod tests {
    use super::{runner, webhook_options};

    #[test]
    fn the_committed_webhook_configuration_is_the_generated_one() {
        let printed = runner().webhook_yaml(&webhook_options());
        assert!(
            printed == include_str!("../manifests/webhook-configuration.yaml"),
            "manifests/webhook-configuration.yaml is stale; regenerate it with\n  \
             cargo run -p local-configmap-operator -- crd --webhook-service default/local-configmap-operator-webhook --webhook-certificate default/local-configmap-operator-webhook\n\
             (its last document)"
        );
    }

    #[test]
    fn crd_prints_the_committed_manifest() {
        let printed = runner().crd_yaml(true).unwrap();
        assert!(
            printed == include_str!("../manifests/crd.yaml"),
            "manifests/crd.yaml is stale; regenerate it with\n  \
             cargo run -p local-configmap-operator -- crd > examples/local-configmap/manifests/crd.yaml"
        );
    }

    /// `args` as the command line parses them: the error clap would print.
    fn refused(args: &[&str]) -> String {
        let line = std::iter::once("local-configmap-operator").chain(args.iter().copied());
        let err = runner()
            .command_line()
            .try_get_matches_from(line)
            .unwrap_err();
        err.to_string()
    }

    #[test]
    fn help_works_for_the_operator_and_crd_and_a_mistyped_flag_is_named() {
        let help = refused(&["--help"]);
        assert!(help.starts_with("Reconciles LocalConfigMap"), "{help}");
        for flag in ["--context", "--transport", "--shards", "crd"] {
            assert!(help.contains(flag), "{flag}: {help}");
        }
        assert!(
            help.contains("kube"),
            "the kube transport is built in: {help}"
        );
        let crd = refused(&["crd", "--help"]);
        assert!(crd.contains("--no-cel"), "{crd}");
        let typo = refused(&["--context", "dev", "--worker", "3"]);
        assert!(
            typo.contains("'--worker'") && typo.contains("--workers"),
            "{typo}"
        );
    }
}
