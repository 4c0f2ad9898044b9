//! Typed config: a package's `spec.config` deserialized into the author's
//! type, handed to every callback; and the closure form's typed builder.

use crate::callback::{Callback, Closures};
use crate::infrastructure::{Decode, Erased};
use crate::package::{CallbackResult, PackageBuilder, WorkflowOutcome};
use crate::{Error, Names, Observation, Options, Package, ResourceSchema, ValidationErrors};
use blue_kubernetes_client::ResourceDescriptor;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

/// How a typed package's config is checked and described.
#[derive(Clone)]
pub(crate) struct ConfigType {
    /// Whether `spec.config` (reserved keys removed) decodes.
    pub(crate) check: fn(Value) -> Result<(), serde_json::Error>,
    /// The config's OpenAPI v3 schema, as schemars generates it.
    pub(crate) schema: fn() -> Value,
}

impl ConfigType {
    pub(crate) fn of<C: DeserializeOwned + JsonSchema + Send + Sync + 'static>() -> Self {
        Self {
            check: |v| serde_json::from_value::<C>(v).map(|_| ()),
            schema: openapi_schema::<C>,
        }
    }
}

/// `T`'s OpenAPI v3 schema, inlined, as a CRD embeds it.
pub(crate) fn openapi_schema<T: JsonSchema>() -> Value {
    let settings = schemars::generate::SchemaSettings::openapi3().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The keys the controller owns inside `spec.config`: the package's type
/// never sees them (they stay in [`Options`]).
fn reserved(key: &str, names: &Names) -> bool {
    key == "profile" || key == names.destroy_protection_key
}

/// `spec.config` of `resource` without the reserved keys.
fn config_of(resource: &Value, names: &Names) -> Value {
    let mut map = resource
        .pointer("/spec/config")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    map.retain(|k, _| !reserved(k, names));
    Value::Object(map)
}

/// The typed config of the resource the options are for.
pub(crate) fn decode_config<C: DeserializeOwned>(
    options: &Options,
) -> Result<C, serde_json::Error> {
    serde_json::from_value(config_of(options.resource(), &options.names()))
}

/// The callback options for `resource`, with the controller's clock and
/// names; and, for a package with a typed config that does not decode,
/// why (redacted).
pub(crate) fn options_for(
    package: &Package,
    resource: &Value,
    config: &crate::Config,
) -> (Options, Option<String>) {
    let names = &config.names;
    let options = Options::from_resource(resource).with_env(config.now.clone(), names.clone());
    let Some(config) = &package.schema().config else {
        return (options, None);
    };
    match (config.check)(config_of(resource, names)) {
        Ok(()) => (options, None),
        Err(e) => (
            options,
            Some(redact(&crate::telemetry::log::error_chain(&e))),
        ),
    }
}

/// A serde message with the offending *values* removed: serde quotes what it
/// got (`invalid type: string "hunter2"`, ``unknown field `token` ``) before
/// `expected ...`, which names only the type's own fields and types.
pub(crate) fn redact(message: &str) -> String {
    if message.starts_with("missing field") {
        return message.to_string();
    }
    let mut out = String::with_capacity(message.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in message.char_indices() {
        match quote {
            // serde quotes strings with Debug escapes: `\"` does not close.
            Some(_) if escaped => escaped = false,
            Some('"') if c == '\\' => escaped = true,
            Some(q) if c == q => {
                out.push_str("...");
                out.push(c);
                quote = None;
            }
            Some(_) => {}
            None if message[i..].starts_with(", expected") => {
                out.push_str(&message[i..]);
                break;
            }
            None => {
                out.push(c);
                if c == '"' || c == '`' {
                    quote = Some(c);
                }
            }
        }
    }
    out
}

/// Builds a [`Package`] of closures that receive the decoded config `C`
/// beside the [`Options`]. Start with [`PackageBuilder::config`].
///
/// Superseded by the package trait, [`Infrastructure`](crate::Infrastructure),
/// whose methods receive a typed [`Context`](crate::Context); kept so
/// packages can move at their own pace, and to be removed in a later
/// release.
///
/// `C` is deserialized from `spec.config` without the reserved keys
/// (`profile` and the destroy-protection key, which stay in [`Options`]). A
/// config that does not deserialize makes the resource `Invalid`
/// (`InvalidConfiguration`) before any callback runs; the serde message,
/// with the offending values removed, is logged at INFO, never written to
/// status.
///
/// ```
/// use blue_kubernetes::{Observation, Package, WorkflowOutcome};
/// use blue_kubernetes_client::ResourceDescriptor;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct WidgetConfig {
///     /// Number of widgets.
///     size: u32,
/// }
///
/// let package = Package::builder(ResourceDescriptor::new("example.com", "v1", "widgets", "Widget"))
///     .config::<WidgetConfig>()
///     .validate(|config, _opts| {
///         Ok(if config.size <= 64 { vec![] } else { vec!["size must be at most 64".into()] })
///     })
///     .identity(|_config, opts| Ok(vec![Some("widgets".into()), Some(opts.profile().into())]))
///     .observe(|_config, _opts| Ok(Observation::ABSENT))
///     .converge_async(|config, _opts| async move {
///         let _size = config.size;
///         Ok(WorkflowOutcome::new())
///     })
///     .delete(|_config, _opts| Ok(WorkflowOutcome::new()))
///     .build()
///     .unwrap();
/// assert_eq!(package.descriptor().kind, "Widget");
/// ```
pub struct TypedPackageBuilder<C> {
    schema: ResourceSchema,
    validate: Option<Callback<C, ValidationErrors>>,
    identity: Option<Callback<C, Vec<Option<String>>>>,
    observe: Option<Callback<C, Observation>>,
    converge: Option<Callback<C, WorkflowOutcome>>,
    delete: Option<Callback<C, WorkflowOutcome>>,
}

macro_rules! typed_setters {
    ($field:ident, $async_name:ident, $t:ty, $doc:literal) => {
        typed_setters!($field, $async_name, $t, $doc, sync, "");
    };
    ($field:ident, $async_name:ident, $t:ty, $doc:literal, $make:ident, $how:literal) => {
        #[doc = concat!("Sets `", stringify!($field), "` to a synchronous callback: ", $doc, $how)]
        pub fn $field<F>(mut self, f: F) -> Self
        where
            F: Fn(&C, &Options) -> CallbackResult<$t> + Send + Sync + 'static,
        {
            self.$field = Some(Callback::$make(f));
            self
        }

        #[doc = concat!("Sets `", stringify!($field), "` to an asynchronous callback: ", $doc)]
        pub fn $async_name<F, Fut>(mut self, f: F) -> Self
        where
            F: Fn(Arc<C>, Options) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = CallbackResult<$t>> + Send + 'static,
        {
            self.$field = Some(Callback::asynchronous(f));
            self
        }
    };
}

impl<C: DeserializeOwned + JsonSchema + Send + Sync + 'static> TypedPackageBuilder<C> {
    /// Carries over what the untyped builder had: its declaration and any
    /// callbacks already set (which keep reading only the options).
    pub(crate) fn new(inner: PackageBuilder) -> Self {
        Self {
            schema: inner.schema,
            validate: inner.validate.map(Callback::ignoring_config),
            identity: inner.identity.map(Callback::ignoring_config),
            observe: inner.observe.map(Callback::ignoring_config),
            converge: inner.converge.map(Callback::ignoring_config),
            delete: inner.delete.map(Callback::ignoring_config),
        }
    }

    /// Sets `validate` to a synchronous callback: the errors in the config,
    /// empty when valid. Return a `Vec<String>` (every message for the
    /// operator's log only) or [`ValidationErrors`], which can mark messages
    /// as safe for the resource's users. Runs inline on the controller's
    /// threads: keep it quick and pure (see
    /// [`PackageBuilder::validate`](crate::PackageBuilder::validate)).
    pub fn validate<F, V>(mut self, f: F) -> Self
    where
        F: Fn(&C, &Options) -> CallbackResult<V> + Send + Sync + 'static,
        V: Into<ValidationErrors>,
    {
        self.validate = Some(Callback::pure(move |c: &C, o: &Options| {
            f(c, o).map(V::into)
        }));
        self
    }

    /// Sets `validate` to an asynchronous callback: the errors in the
    /// config, empty when valid; see [`validate`](Self::validate).
    pub fn validate_async<F, Fut, V>(mut self, f: F) -> Self
    where
        F: Fn(Arc<C>, Options) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CallbackResult<V>> + Send + 'static,
        V: Into<ValidationErrors>,
    {
        self.validate = Some(Callback::asynchronous(move |c, o| {
            let found = f(c, o);
            async move { found.await.map(V::into) }
        }));
        self
    }
    typed_setters!(
        identity,
        identity_async,
        Vec<Option<String>>,
        "the backend boundary and profile; equal identities share one lock.",
        pure,
        " Runs inline on the controller's threads: keep it quick and pure \
         (see [`PackageBuilder::identity`](crate::PackageBuilder::identity))."
    );
    typed_setters!(
        observe,
        observe_async,
        Observation,
        "reports the infrastructure; must be read-only."
    );
    typed_setters!(
        converge,
        converge_async,
        WorkflowOutcome,
        "makes the infrastructure match the config."
    );
    typed_setters!(
        delete,
        delete_async,
        WorkflowOutcome,
        "destroys the infrastructure."
    );

    /// Declares connection details; see [`PackageBuilder::connection_secret`].
    pub fn connection_secret(mut self) -> Self {
        self.schema = self.schema.connection_secret();
        self
    }

    /// Declares a reference field; see [`PackageBuilder::reference`]. Give
    /// the field the type [`Reference`](crate::Reference) (or an `Option` of it).
    pub fn reference(mut self, field: impl Into<String>, kind: ResourceDescriptor) -> Self {
        self.schema = self.schema.reference(field, kind);
        self
    }

    /// Declares a related kind; see [`PackageBuilder::related`].
    pub fn related(mut self, related: crate::Related) -> Self {
        self.schema = self.schema.related(related);
        self
    }

    /// Declares durable steps; see [`PackageBuilder::steps`].
    pub fn steps(mut self) -> Self {
        self.schema = self.schema.steps();
        self
    }

    /// Declares the outputs type; see [`PackageBuilder::outputs`].
    pub fn outputs<O>(mut self) -> Self
    where
        O: DeserializeOwned + JsonSchema + 'static,
    {
        self.schema = self.schema.outputs::<O>();
        self
    }

    /// Finishes the package, naming the first missing required callback,
    /// or the field of the config or outputs type that no CRD can describe
    /// ([`Error::NotStructural`]).
    pub fn build(self) -> Result<Package, Error> {
        crate::crd::check(&self.schema)?;
        let closures = Closures {
            validate: self.validate,
            identity: self.identity.ok_or(Error::MissingCallback("identity"))?,
            observe: self.observe.ok_or(Error::MissingCallback("observe"))?,
            converge: self.converge.ok_or(Error::MissingCallback("converge"))?,
            delete: self.delete.ok_or(Error::MissingCallback("delete"))?,
        };
        let decode: Decode<C> = decode_config::<C>;
        let erased = Erased {
            infrastructure: closures,
            decode,
        };
        Ok(Package::assemble(self.schema, erased))
    }
}

impl<C> AsRef<ResourceSchema> for TypedPackageBuilder<C> {
    fn as_ref(&self) -> &ResourceSchema {
        &self.schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_error<C: DeserializeOwned>(v: Value) -> String {
        serde_json::from_value::<C>(v).err().unwrap().to_string()
    }

    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Sized {
        size: u32,
    }

    #[test]
    fn decode_messages_lose_the_values_but_keep_the_expectation() {
        let secret = "hunter2";
        for tricky in ["a\"hunter2\"b", "x, expected hunter2"] {
            let message = decode_error::<Sized>(serde_json::json!({ "size": tricky }));
            assert!(!redact(&message).contains(secret), "{}", redact(&message));
        }
        let wrong_type = decode_error::<Sized>(serde_json::json!({"size": secret}));
        let unknown = decode_error::<Sized>(serde_json::json!({"size": 1, secret: 1}));
        for message in [&wrong_type, &unknown] {
            assert!(message.contains(secret), "{message}");
            let redacted = redact(message);
            assert!(!redacted.contains(secret), "{redacted}");
            assert!(redacted.contains("expected"), "{redacted}");
        }
        assert!(redact(&unknown).contains("`size`"));
        let missing = decode_error::<Sized>(serde_json::json!({}));
        assert_eq!(redact(&missing), "missing field `size`");
    }
}
