//! The `crd` subcommand: the CustomResourceDefinitions of the operator's
//! packages, as YAML, ready for `kubectl apply -f -`.

use crate::admission::{webhook_configuration, ClientConfig, FailurePolicy, WebhookOptions};
use crate::migration::MigrationManifests;
use crate::{crd::CrdConfig, package::schema::ResourceSchema, Error};

/// `crd`'s own flags.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct CrdFlags {
    /// Leave out the CEL validation rules, for Kubernetes before 1.25 (the controller still enforces the immutability of profile and of the fields the schema declares immutable, by making an edited resource Invalid; the server no longer refuses the edit)
    #[arg(long)]
    pub(crate) no_cel: bool,
    /// Also print the ValidatingWebhookConfiguration of the admission webhook, reached through this Service: NAMESPACE/NAME[:PORT] (port 443 by default); a CRD serving older versions sends its conversions there too
    #[arg(long, value_name = "NS/NAME[:PORT]")]
    pub(crate) webhook_service: Option<String>,
    /// The cert-manager Certificate (NAMESPACE/NAME) whose CA cert-manager injects into the configuration
    #[arg(long, value_name = "NS/NAME", requires = "webhook_service")]
    pub(crate) webhook_certificate: Option<String>,
    /// The configuration's failure policy (see the crate README, "Admission", for the trade-off)
    #[arg(long, value_name = "POLICY", value_parser = ["Fail", "Ignore"], default_value = "Fail", requires = "webhook_service")]
    pub(crate) webhook_failure_policy: String,
    /// Namespaces carry the kubernetes.io/metadata.name label (Kubernetes 1.21 and later): select the managed ones (comma-separated) in the configuration
    #[arg(
        long,
        value_name = "NS",
        value_delimiter = ',',
        requires = "webhook_service"
    )]
    pub(crate) webhook_namespaces: Vec<String>,
    /// Also print the storage migration's ClusterRole (the kinds' CRDs and objects in every namespace) and Role (its Lease), bound to this ServiceAccount: NAMESPACE/NAME (the operator's own with --migrate-storage, or the Job's)
    #[arg(long, value_name = "NS/NAME")]
    pub(crate) migration_rbac: Option<String>,
    /// With --migration-rbac: also the ServiceAccount and a Job running IMAGE as `--in-cluster migrate-storage`
    #[arg(long, value_name = "IMAGE", requires = "migration_rbac")]
    pub(crate) migration_job: Option<String>,
}

impl CrdFlags {
    /// The webhook configuration's options for operator `name`, if asked.
    pub(crate) fn webhook(&self, name: &str) -> Result<Option<WebhookOptions>, String> {
        let Some(service) = &self.webhook_service else {
            return Ok(None);
        };
        let (namespace, service, port) = parse_service(service)?;
        let client = ClientConfig::Service {
            namespace,
            name: service,
            port,
            certificate: self.webhook_certificate.clone(),
            ca_bundle: None,
        };
        let mut options = WebhookOptions::new(name, client);
        if self.webhook_failure_policy == "Ignore" {
            options.failure_policy = FailurePolicy::Ignore;
        }
        if !self.webhook_namespaces.is_empty() {
            options.namespaces = crate::config::Namespaces::Only(self.webhook_namespaces.clone());
            options.namespace_name_label = true;
        }
        Ok(Some(options))
    }
}

impl CrdFlags {
    /// The storage migration's manifests for operator `name`, if asked.
    pub(crate) fn migration(
        &self,
        name: &str,
        crds: &[(ResourceSchema, CrdConfig)],
    ) -> Result<Option<MigrationManifests>, String> {
        let Some(account) = &self.migration_rbac else {
            return Ok(None);
        };
        let wrong = || format!("--migration-rbac wants NAMESPACE/NAME, got {account}");
        let (namespace, service_account) = account.split_once('/').ok_or_else(wrong)?;
        if [namespace, service_account]
            .iter()
            .any(|n| !crate::domain::names::is_object_name(n))
        {
            return Err(wrong());
        }
        let kinds = crds.iter().map(|(s, _)| s.descriptor().clone()).collect();
        let manifests = MigrationManifests::new(name, namespace, service_account, kinds);
        Ok(Some(match &self.migration_job {
            Some(image) => manifests.with_job(image),
            None => manifests,
        }))
    }
}

/// The storage migration's manifests, each document after a `---`.
pub(crate) fn migration_yaml(manifests: &MigrationManifests) -> String {
    crate::migration::migration_manifests(manifests)
        .iter()
        .map(|document| format!("---\n{}", crate::crd::to_yaml(document)))
        .collect()
}

/// `NAMESPACE/NAME[:PORT]`.
pub(crate) fn parse_service(service: &str) -> Result<(String, String, u16), String> {
    let wrong = || format!("--webhook-service wants NAMESPACE/NAME[:PORT], got {service}");
    let (namespace, rest) = service.split_once('/').ok_or_else(wrong)?;
    let (name, port) = match rest.split_once(':') {
        Some((name, port)) => (name, port.parse::<u16>().map_err(|_| wrong())?),
        None => (rest, 443),
    };
    if [namespace, name]
        .iter()
        .any(|n| !crate::domain::names::is_object_name(n))
    {
        return Err(wrong());
    }
    Ok((namespace.to_string(), name.to_string(), port))
}

/// The ValidatingWebhookConfiguration of `crds`' kinds, as YAML.
pub(crate) fn webhook_yaml(
    crds: &[(ResourceSchema, CrdConfig)],
    options: &WebhookOptions,
) -> String {
    let schemas = crds.iter().map(|(schema, _)| schema);
    crate::crd::to_yaml(&webhook_configuration(schemas, options))
}

/// `name crd`'s output: a header naming the command, then each CRD in
/// the order given, separated by `---`. With `webhook`, a CRD that
/// converts and names no client config of its own sends its conversions
/// where the admission configuration sends its reviews.
pub(crate) fn yaml(
    name: &str,
    crds: &[(ResourceSchema, CrdConfig)],
    cel: bool,
    webhook: Option<&WebhookOptions>,
) -> Result<String, Error> {
    let mut out = format!(
        "# Generated by `{name} crd`: do not edit.\n\
         # `crd --no-cel` leaves out the CEL rules (Kubernetes < 1.25);\n\
         # `crd --webhook-service NS/NAME` adds the admission webhook's configuration.\n"
    );
    for (i, (schema, options)) in crds.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        let mut options = options.clone().with_cel(cel);
        if let (None, Some(webhook)) = (&options.conversion_client, webhook) {
            options.conversion_client = Some(webhook.client.clone());
        }
        out.push_str(&crate::crd::to_yaml(&crate::crd::generate(
            schema, &options,
        )?));
    }
    Ok(out)
}
