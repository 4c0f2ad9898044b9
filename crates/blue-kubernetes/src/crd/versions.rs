//! The versions of a generated CRD: the stored one and the older served
//! ones a package declares (each deprecated, with its own config schema
//! and the same common fields and status), the conversion stanza that
//! sends conversions to the operator's webhook, and the check of an
//! installed CRD that would keep unknown fields.

use super::config::CrdConfig;
use super::config_schema_of;
use crate::admission::client::ClientConfig;
use crate::versions::old::{is_version_name, OldVersion};
use crate::versions::Conversion;
use crate::{package::schema::ResourceSchema, Error};
use serde_json::{json, Value};

/// The entry of the older version `old` in `spec.versions`: the stored
/// version's entry with its own config schema, served, not stored, and
/// deprecated with a warning naming the stored version.
pub(super) fn old_entry(
    resource: &ResourceSchema,
    old: &OldVersion,
    stored: &Value,
    options: &CrdConfig,
) -> Result<Value, Error> {
    let d = resource.descriptor();
    let own = (old.schema)();
    let properties = own.get("properties").and_then(Value::as_object);
    // Immutability is declared on the stored version; an older version
    // carries the rule for the declared fields it has under the same name.
    let immutable: Vec<&String> = resource
        .immutable
        .iter()
        .filter(|f| properties.is_some_and(|p| p.contains_key(f.as_str())))
        .collect();
    // A reference field is described as one where the old version has it.
    let references: Vec<_> = resource
        .references
        .iter()
        .filter(|r| properties.is_some_and(|p| p.contains_key(&r.field)))
        .collect();
    let config = config_schema_of(Some(old.schema), options, &references, &immutable)?;
    let mut entry = stored.clone();
    entry["name"] = json!(old.name);
    entry["storage"] = json!(false);
    entry["deprecated"] = json!(true);
    entry["deprecationWarning"] = json!(format!(
        "{group}/{old} {kind} is deprecated; use {stored}",
        group = d.group,
        old = old.name,
        kind = d.kind,
        stored = d.api_version(),
    ));
    entry["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["config"] = config;
    Ok(entry)
}

/// `spec.conversion`: the operator's webhook converts, with v1 reviews,
/// at [`Conversion::PATH`] of the client config the options name (the
/// admission webhook's, said once: see [`ClientConfig`]); its CA injected
/// by cert-manager when the client config names a Certificate.
pub(super) fn add_conversion(crd: &mut Value, options: &CrdConfig) {
    // Until the runner fills in its own, a placeholder Service that
    // applies (and converts nothing) rather than a CRD that cannot.
    let placeholder = ClientConfig::Service {
        namespace: "default".into(),
        name: "conversion-webhook".into(),
        port: 443,
        certificate: None,
        ca_bundle: None,
    };
    let client = options.conversion_client.as_ref().unwrap_or(&placeholder);
    if let Some(certificate) = client.certificate() {
        crd["metadata"]["annotations"] = json!({"cert-manager.io/inject-ca-from": certificate});
    }
    crd["spec"]["preserveUnknownFields"] = json!(false);
    crd["spec"]["conversion"] = conversion(client);
}

/// `spec.conversion` sending v1 reviews to the webhook `client` reaches.
pub(crate) fn conversion(client: &ClientConfig) -> Value {
    json!({
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": client.to_json(Conversion::PATH),
        },
    })
}

/// Refuses older versions the API server would refuse: a name that is
/// no version name, the stored version's, or declared twice.
pub(super) fn check_names(resource: &ResourceSchema) -> Result<(), Error> {
    let refuse = |reason| {
        Err(Error::InvalidConfig {
            field: "versions",
            reason,
        })
    };
    let served = resource.served_versions();
    for (i, name) in served.iter().enumerate().skip(1) {
        if !is_version_name(name) {
            return refuse("must be DNS labels starting with a letter, like v1beta1");
        }
        if served[..i].contains(name) {
            return refuse("must be declared once each, none the stored version");
        }
    }
    Ok(())
}

/// Refuses an installed CRD (`installed`, as read from the API server)
/// that cannot hold the declared versions: one with
/// `spec.preserveUnknownFields: true` keeps fields no schema declares, so
/// an old version's object would keep the new version's fields unpruned
/// and no webhook conversion is allowed; apply the generated CRD
/// (`preserveUnknownFields: false`) first. A package serving one version
/// is not concerned.
///
/// ```
/// use blue_kubernetes::{crd, ResourceSchema};
/// use blue_kubernetes_client::ResourceDescriptor;
/// let schema = ResourceSchema::new(ResourceDescriptor::new("example.com", "v1", "widgets", "Widget"));
/// let installed = serde_json::json!({"spec": {"preserveUnknownFields": true}});
/// assert!(crd::check_installed(&schema, &installed).is_ok()); // one version
/// ```
pub fn check_installed(resource: &ResourceSchema, installed: &Value) -> Result<(), Error> {
    let keeps_unknown = installed.pointer("/spec/preserveUnknownFields") == Some(&json!(true));
    if keeps_unknown && !resource.versions.is_empty() {
        return Err(Error::PreservesUnknownFields(
            resource.descriptor().qualified_plural(),
        ));
    }
    Ok(())
}
