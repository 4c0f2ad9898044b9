//! The name of a resource's connection Secret, and whether the one its
//! spec names is valid.

use serde_json::Value;

/// `spec.writeConnectionSecretToRef.name`, or `<name>-connection`.
pub(crate) fn secret_name(resource: &Value) -> String {
    match resource.pointer("/spec/writeConnectionSecretToRef/name") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        _ => format!(
            "{}-connection",
            resource["metadata"]["name"].as_str().unwrap_or_default()
        ),
    }
}

/// `spec.writeConnectionSecretToRef` is absent or names a valid Secret.
pub(crate) fn secret_ref_valid(resource: &Value) -> bool {
    match resource.pointer("/spec/writeConnectionSecretToRef") {
        None | Some(Value::Null) => true,
        Some(Value::Object(r)) => match r.get("name") {
            None | Some(Value::Null) => true,
            Some(Value::String(name)) => is_dns_subdomain(name),
            Some(_) => false,
        },
        Some(_) => false,
    }
}

fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}
