//! In self-signed mode, the CRDs of the kinds serving older versions are
//! pointed at this process's webhook server, with its development CA, as
//! the admission configuration is: the same client config, at
//! [`Conversion::PATH`](crate::versions::Conversion::PATH).

use crate::admission::client::ClientConfig;
use crate::package::{erased::Package, schema::ResourceSchema};
use crate::runner::BoxError;
use crate::Controller;
use blue_kubernetes_client::{AccessCheck, ApiPath, ApiRequest, Method, PatchType, Transport};
use serde_json::json;
use std::sync::Arc;

const GROUP: &str = "apiextensions.k8s.io";
const RESOURCE: &str = "customresourcedefinitions";

/// The kinds whose CRD converts.
fn converting(packages: &[Package]) -> impl Iterator<Item = &ResourceSchema> {
    packages
        .iter()
        .map(AsRef::as_ref)
        .filter(|schema: &&ResourceSchema| !schema.versions.is_empty())
}

/// Sets each converting kind's installed CRD's `spec.conversion` to
/// `client` (a JSON patch replacing the whole stanza: a URL and a
/// Service cannot both stay).
pub(crate) async fn point(
    transport: &Arc<dyn Transport>,
    controller: &Controller,
    client: &ClientConfig,
) -> Result<(), BoxError> {
    let conversion = crate::crd::versions::conversion(client);
    for schema in converting(&controller.config.packages) {
        let name = schema.descriptor.qualified_plural();
        let path = ApiPath::cluster(GROUP, "v1", RESOURCE, Some(&name), None)?;
        let patch = json!([{"op": "add", "path": "/spec/conversion", "value": conversion}]);
        let request = ApiRequest::new(Method::Patch(PatchType::Json), path).with_body(patch);
        transport
            .send(request)
            .await
            .map_err(|e| format!("pointing the conversion of CRD {name} at the webhook: {e}"))?;
        tracing::info!("CRD {name} converts through this webhook, with the development CA");
    }
    Ok(())
}

/// RBAC that pointing needs: patch on CRDs, when some kind converts.
pub(crate) fn access_checks(packages: &[Package]) -> Vec<AccessCheck> {
    match converting(packages).next() {
        Some(_) => vec![AccessCheck::new("", "patch", GROUP, RESOURCE)],
        None => Vec::new(),
    }
}
