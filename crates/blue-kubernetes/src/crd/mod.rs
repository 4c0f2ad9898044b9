//! CRD generation: the `apiextensions.k8s.io/v1` CustomResourceDefinition
//! of a package ([`generate`], rendered with [`to_yaml`]): common spec
//! fields, the config schema, the full status the controller writes,
//! printer columns and (optionally) CEL immutability rules, as configured
//! by a [`CrdConfig`].

mod config;
mod defaults;
mod schemas;
mod structural;
mod unions;
pub(crate) mod versions;
mod yaml;

pub use config::{CrdConfig, PrinterColumn};
pub use versions::check_installed;
pub use yaml::to_yaml;

use crate::package::observation as outputs;
use crate::references::ReferenceField;

use crate::{package::schema::ResourceSchema, Error};

use config::printer_columns;
use serde_json::{json, Value};

/// The complete CRD of a resource type, as a JSON document ready for
/// `kubectl apply` (render it with [`to_yaml`]).
///
/// `resource` is anything that holds a [`ResourceSchema`]: a package's
/// ([`ResourceSchema::of`] an [`Infrastructure`](crate::Infrastructure)),
/// a closure form's [`PackageBuilder`](crate::package::PackageBuilder) with or
/// without its callbacks, or a built [`Package`](crate::Package). Only the
/// descriptor, the declared features and the types are read, so printing
/// a CRD needs no client and no callback, and a package's CRD is the one
/// of the schema it was built with.
///
/// `spec.config` is the config type's schema plus the reserved `profile`
/// and destroy-protection keys; a closure-form package's config keeps
/// unknown fields. Fails with [`Error::NotStructural`], naming the field,
/// when the config or outputs type cannot be described structurally
/// ([`Package::new`](crate::Package::new) fails the same way): an enum
/// with data, an untagged enum other than an integer or a string, a
/// recursive type.
///
/// The schema is one kube-apiserver 1.20 accepts, and where 1.20 is
/// stricter than later releases it follows 1.20:
/// - every string that is not an enum is `nullable`: 1.20 built with a
///   recent Go reads `""` as null and refuses it (in an object, or as the
///   `default` of a `#[serde(default)] String`) where a string is not
///   nullable. A `null` given for such a field is therefore stored, not
///   pruned, and the controller reports the config Invalid unless the
///   field is an `Option`;
/// - an enum is never `nullable`, so a `null` is pruned (read as absent)
///   rather than refused;
/// - a default holds only the fields its node declares and no nulls (a
///   `skip_deserializing` field, a `None`), and a `null` default is left
///   out; `uniqueItems` is left out (sets deduplicate anyway);
/// - a `#[serde(flatten)]` map beside declared fields keeps its extra keys
///   unchecked (`x-kubernetes-preserve-unknown-fields`): the server takes
///   no map schema beside `properties`; serde checks them when the
///   controller decodes the config;
/// - an untagged enum of an integer and a string is
///   `x-kubernetes-int-or-string` (which takes no `""` on 1.20).
///
/// ```
/// use blue_kubernetes::*;
/// use blue_kubernetes::{crd::CrdConfig, package::NoOutputs};
/// use blue_kubernetes_client::ResourceDescriptor;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct WidgetConfig {
///     size: u32,
/// }
///
/// struct Widgets;
///
/// #[async_trait]
/// impl Infrastructure for Widgets {
///     type Config = WidgetConfig;
///     type Outputs = NoOutputs;
///     fn schema() -> ResourceSchema {
///         ResourceSchema::new(ResourceDescriptor::new("example.com", "v1", "widgets", "Widget"))
///     }
/// #   async fn observe(&self, _: &Context<WidgetConfig>) -> CallbackResult<Observation<NoOutputs>> { Ok(Observation::ABSENT) }
/// #   async fn converge(&self, _: &Context<WidgetConfig>) -> CallbackResult<Outcome<NoOutputs>> { Ok(Outcome::done()) }
/// #   async fn delete(&self, _: &Context<WidgetConfig>) -> CallbackResult<Outcome<NoOutputs>> { Ok(Outcome::done()) }
/// }
///
/// let config = CrdConfig::default().with_short_names(vec!["wdg".into()]);
/// let crd = crd::generate(&ResourceSchema::of::<Widgets>(), &config).unwrap();
/// assert_eq!(crd["metadata"]["name"], "widgets.example.com");
/// let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
/// let config = &schema["properties"]["spec"]["properties"]["config"];
/// assert_eq!(config["properties"]["size"]["type"], "integer");
/// assert_eq!(config["required"][0], "size");
/// assert_eq!(schema["properties"]["status"]["properties"]["phase"]["type"], "string");
/// ```
pub fn generate(
    resource: &impl AsRef<ResourceSchema>,
    options: &CrdConfig,
) -> Result<Value, Error> {
    let resource = resource.as_ref();
    let d = resource.descriptor();
    let config = config_schema(resource, options)?;
    let outputs = outputs_schema(resource)?;
    let singular = d.kind.to_lowercase();
    let mut names = json!({
        "plural": d.plural,
        "singular": singular,
        "kind": d.kind,
        "listKind": format!("{}List", d.kind),
    });
    if !options.short_names.is_empty() {
        names["shortNames"] = json!(options.short_names);
    }
    if !options.categories.is_empty() {
        names["categories"] = json!(options.categories);
    }
    let schema = json!({
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": schemas::spec(config, resource.connection),
            "status": schemas::status(outputs),
        },
    });
    let mut schema = schema;
    if resource.steps {
        schema["properties"]["status"]["properties"]["workflow"] = crate::steps::status_schema();
    }
    let stored = json!({
        "name": d.version,
        "served": true,
        "storage": true,
        "subresources": {"status": {}},
        "additionalPrinterColumns": printer_columns(options),
        "schema": {"openAPIV3Schema": schema},
    });
    let mut versions = vec![];
    for old in &resource.versions {
        versions.push(versions::old_entry(resource, old, &stored, options)?);
    }
    versions.insert(0, stored);
    let mut crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": d.qualified_plural()},
        "spec": {
            "group": d.group,
            "scope": if d.namespaced { "Namespaced" } else { "Cluster" },
            "names": names,
            "versions": versions,
        },
    });
    if !resource.versions.is_empty() {
        versions::add_conversion(&mut crd, options);
    }
    Ok(crd)
}

/// Fails like [`crd`] when the config or outputs type has no structural
/// schema: a package is refused when it is built, not when its CRD is
/// printed.
pub(crate) fn check(resource: &ResourceSchema) -> Result<(), Error> {
    versions::check_names(resource)?;
    generate(resource, &CrdConfig::default()).map(drop)
}

fn outputs_schema(resource: &ResourceSchema) -> Result<Value, Error> {
    let mut outputs = outputs::status_schema(resource.outputs.as_ref());
    if resource.outputs.is_some() {
        // The same rewrite as the config's: a nested `deny_unknown_fields`
        // struct's `additionalProperties: false` beside its `properties`
        // is refused by the API server.
        structural::rewrite(&mut outputs, "status.outputs")?;
    }
    Ok(outputs)
}

fn config_schema(resource: &ResourceSchema, options: &CrdConfig) -> Result<Value, Error> {
    #[allow(deprecated)]
    let listed = options.immutable_config.iter();
    let immutable: Vec<&String> = resource.immutable.iter().chain(listed).collect();
    let typed = resource.config.as_ref().map(|typed| typed.schema);
    let references: Vec<&ReferenceField> = resource.references.iter().collect();
    config_schema_of(typed, options, &references, &immutable)
}

/// `spec.config`'s schema from the config type's (`typed`; none: open),
/// with the reserved keys, the `references` and CEL rules making `profile`
/// and `immutable` fields immutable.
fn config_schema_of(
    typed: Option<fn() -> Value>,
    options: &CrdConfig,
    references: &[&ReferenceField],
    immutable: &[&String],
) -> Result<Value, Error> {
    let mut config = match typed {
        Some(typed) => {
            let mut schema = typed();
            structural::rewrite(&mut schema, "spec.config")?;
            if schema["type"] != "object" {
                return Err(Error::NotStructural {
                    path: "spec.config".into(),
                    why: "the config type must be a struct or a map",
                });
            }
            schema
        }
        None => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    };
    let Some(node) = config.as_object_mut() else {
        unreachable!("checked to be an object above");
    };
    // The type's own doc comment is written for Rust readers.
    node.insert(
        "description".into(),
        json!("The package's configuration; profile and the destroy-protection key are the controller's."),
    );
    let properties = node
        .entry("properties")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    if let Some(properties) = properties {
        properties.entry("profile").or_insert_with(|| {
            json!({
                "type": "string",
                "minLength": 1,
                "maxLength": 253,
                "description": "Immutable. The infrastructure's profile; defaults to <namespace>--<name>.",
            })
        });
        properties
            .entry(options.names.destroy_protection_key.clone())
            .or_insert_with(|| {
                json!({
                    "type": "boolean",
                    "description": "While true, deleting a resource with deletionPolicy Destroy is blocked (phase Blocked).",
                })
            });
        // A reference is `{name}` whatever the config type says of it
        // (an untyped config, or a field typed otherwise).
        for reference in references {
            let mut schema = reference.schema();
            let own = properties
                .get(&reference.field)
                .and_then(|p| p.get("description"));
            if let Some(own) = own {
                schema["description"] = own.clone();
            }
            properties.insert(reference.field.clone(), schema);
        }
    }
    if options.cel {
        let mut fields = vec!["profile"];
        for field in immutable {
            if !fields.contains(&field.as_str()) {
                fields.push(field);
            }
        }
        let rules: Vec<Value> = fields.into_iter().map(immutable_rule).collect();
        node.insert("x-kubernetes-validations".into(), Value::Array(rules));
    }
    Ok(config)
}

/// A CEL transition rule: `field` may be neither added, removed nor
/// changed (the definition the controller's check shares,
/// `domain::immutable`).
fn immutable_rule(field: &str) -> Value {
    let f = cel_name(field);
    json!({
        "rule": format!(
            "has(self.{f}) == has(oldSelf.{f}) && (!has(self.{f}) || self.{f} == oldSelf.{f})"
        ),
        "message": format!("{field} is immutable"),
    })
}

/// A property name as CEL sees it (the API server's escaping).
fn cel_name(field: &str) -> String {
    field
        .replace("__", "__underscores__")
        .replace('.', "__dot__")
        .replace('-', "__dash__")
        .replace('/', "__slash__")
}

#[cfg(test)]
mod tests;
