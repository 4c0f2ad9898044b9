//! The webhook in the runner: started before the controller's first
//! write and its watches (which read through conversion until storage is
//! migrated), its configuration applied and the converting CRDs pointed
//! at it in self-signed mode, stopped last.

use super::flags::service_names;
use super::{WebhookFlags, WebhookServer, WebhookTls};
use crate::admission::{webhook_configuration, Admission, ClientConfig, WebhookOptions};
use crate::package::erased::Package;
use crate::runner::BoxError;
use crate::Controller;
use blue_kubernetes_client::{AccessCheck, ApiPath, ApiRequest, Method, PatchType, Transport};
use std::sync::Arc;

/// The ValidatingWebhookConfigurations resource.
const GROUP: &str = "admissionregistration.k8s.io";
const RESOURCE: &str = "validatingwebhookconfigurations";

/// Starts the webhook `flags` ask for (none without `--webhook-bind`),
/// and in self-signed mode applies the configuration `name` with its CA.
pub(crate) async fn start(
    flags: &WebhookFlags,
    name: &str,
    controller: &Controller,
    transport: &Arc<dyn Transport>,
) -> Result<Option<WebhookServer>, BoxError> {
    let Some(bind) = flags.webhook_bind else {
        return Ok(None);
    };
    let service = flags.service()?;
    let tls = match &flags.webhook_cert_dir {
        Some(dir) => WebhookTls::directory(dir),
        None if flags.webhook_self_signed => {
            let names = match &service {
                Some((namespace, name, _)) => service_names(namespace, name),
                None => Vec::new(),
            };
            WebhookTls::self_signed(&names)?
        }
        None => {
            return Err("--webhook-bind needs --webhook-cert-dir or --webhook-self-signed".into())
        }
    };
    let server = WebhookServer::serve(bind, Admission::new(controller), &tls).await?;
    tracing::info!(
        "serving the admission and conversion webhook on https://{}",
        server.address()
    );
    if let WebhookTls::SelfSigned(made) = &tls {
        let client = match service {
            Some((namespace, name, port)) => ClientConfig::Service {
                namespace,
                name,
                port,
                certificate: None,
                ca_bundle: Some(made.ca_pem().to_string()),
            },
            None => {
                let base = flags
                    .webhook_url
                    .clone()
                    .unwrap_or_else(|| format!("https://127.0.0.1:{}", server.address().port()));
                ClientConfig::Url {
                    base,
                    ca_bundle: made.ca_pem().to_string(),
                }
            }
        };
        if let Err(e) = super::crd_conversion::point(transport, controller, &client).await {
            server.stop().await;
            return Err(e);
        }
        let mut options = WebhookOptions::new(name, client);
        options.failure_policy = flags.failure_policy();
        options.namespaces = controller.config.namespace.clone();
        let configuration = webhook_configuration(&controller.config.packages, &options);
        if let Err(e) = apply(transport, name, configuration).await {
            server.stop().await;
            return Err(e);
        }
        tracing::info!("applied ValidatingWebhookConfiguration {name} with the development CA");
    }
    Ok(Some(server))
}

/// Server-side apply of the configuration, owned by the operator.
async fn apply(
    transport: &Arc<dyn Transport>,
    name: &str,
    configuration: serde_json::Value,
) -> Result<(), BoxError> {
    let path = ApiPath::cluster(GROUP, "v1", RESOURCE, Some(name), None)?
        .with_query("fieldManager", name)
        .with_query("force", "true");
    let request = ApiRequest::new(Method::Patch(PatchType::Apply), path).with_body(configuration);
    transport
        .send(request)
        .await
        .map_err(|e| format!("applying ValidatingWebhookConfiguration {name}: {e}"))?;
    Ok(())
}

/// What self-signed mode needs RBAC for: the preflight's extra checks.
pub(crate) fn access_checks(flags: &WebhookFlags, packages: &[Package]) -> Vec<AccessCheck> {
    match flags.webhook_bind.is_some() && flags.webhook_self_signed {
        false => Vec::new(),
        true => ["create", "patch"]
            .into_iter()
            .map(|verb| AccessCheck::new("", verb, GROUP, RESOURCE))
            .chain(super::crd_conversion::access_checks(packages))
            .collect(),
    }
}
