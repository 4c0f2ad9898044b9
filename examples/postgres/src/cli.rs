//! The binary: blue-kubernetes' runner (the standard flags, log, signals,
//! preflight and `crd`) with both packages, their CRDs and this
//! operator's [`test_hooks`].

use crate::postgres_server::{self, Servers};
use crate::{package, test_hooks};
use blue_kubernetes::admission::{ClientConfig, WebhookOptions};
use blue_kubernetes::runner::Runner;
use blue_kubernetes::ResourceSchema;

/// Concurrent reconciles unless `--workers` says otherwise: each pass
/// waits on the database server, so a few at once keep a burst moving
/// without opening many admin connections.
pub const DEFAULT_WORKERS: usize = 4;

/// `postgres-operator`.
pub fn runner() -> Runner {
    Runner::new("postgres-operator")
        .about(
            "Reconciles PostgresServer and PostgresDatabase resources (postgres.blue.example): \
             each database owns a role and a database on its server, and a connection Secret.",
        )
        .names(package::names())
        .default_workers(DEFAULT_WORKERS)
        .crd(
            ResourceSchema::of::<Servers>(),
            postgres_server::crd_options(true),
        )
        .crd(
            ResourceSchema::of::<package::Databases>(),
            package::crd_options(true),
        )
        .test_hooks(&[test_hooks::AUDIT_STEPS, test_hooks::FAIL_STEP])
        // Servers and databases in one controller: a database's reference
        // resolves only against a kind the same controller manages.
        .packages(|run| Ok(package::packages(test_hooks::features(run.test_hooks))?))
}

/// The admission webhook's configuration this example ships
/// (`manifests/webhook-configuration.yaml`, printed by `crd
/// --webhook-service default/postgres-operator-webhook --webhook-certificate
/// default/postgres-operator-webhook`): reached through the Service in
/// `manifests/webhook.yaml`, its CA injected by cert-manager from the
/// Certificate of the same name, `Fail` while it does not answer.
pub fn webhook_options() -> WebhookOptions {
    let client = ClientConfig::Service {
        namespace: "default".into(),
        name: "postgres-operator-webhook".into(),
        port: 443,
        certificate: Some("default/postgres-operator-webhook".into()),
        ca_bundle: None,
    };
    WebhookOptions::new("postgres-operator", client)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_webhook_configuration_is_the_generated_one() {
        let printed = super::runner().webhook_yaml(&super::webhook_options());
        assert!(
            printed == include_str!("../manifests/webhook-configuration.yaml"),
            "manifests/webhook-configuration.yaml is stale; regenerate it with\n  \
             cargo run -p postgres-operator -- crd --webhook-service default/postgres-operator-webhook --webhook-certificate default/postgres-operator-webhook\n\
             (its last document)"
        );
    }

    #[test]
    fn crd_prints_the_committed_manifest() {
        let printed = super::runner().crd_yaml(true).unwrap();
        assert!(
            printed == include_str!("../manifests/crd.yaml"),
            "{printed}"
        );
    }
}
