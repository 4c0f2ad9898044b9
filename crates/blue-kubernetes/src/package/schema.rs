//! A package's resource schema: its type and the types and features that
//! shape it (config, outputs, connection Secret, steps, references, related
//! kinds), without any callback. The CRD is generated from it alone, and
//! every [`Package`](crate::Package) is built around one, so the two
//! cannot describe different resources.

use blue_kubernetes_client::ResourceDescriptor;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A package's declaration: the resource type and the features it uses.
/// An [`Infrastructure`](crate::Infrastructure) returns one from
/// [`schema`](crate::Infrastructure::schema); [`ResourceSchema::of`] adds
/// the config and outputs types its associated types name, and is what
/// [`crd::generate`](crate::crd::generate) reads: the descriptor and the types, never a
/// callback, so printing a CRD needs no client.
///
/// ```
/// use blue_kubernetes::*;
/// use blue_kubernetes::crd::CrdConfig;
/// use blue_kubernetes_client::ResourceDescriptor;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct WidgetConfig { size: u32 }
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct WidgetOutputs { serial: String }
///
/// struct Widgets;
///
/// #[async_trait]
/// impl Infrastructure for Widgets {
///     type Config = WidgetConfig;
///     type Outputs = WidgetOutputs;
///     fn schema() -> ResourceSchema {
///         ResourceSchema::new(ResourceDescriptor::new("example.com", "v1", "widgets", "Widget"))
///             .connection_secret()
///     }
/// #   async fn observe(&self, _: &Context<WidgetConfig>) -> CallbackResult<Observation<WidgetOutputs>> { Ok(Observation::ABSENT) }
/// #   async fn converge(&self, _: &Context<WidgetConfig>) -> CallbackResult<Outcome<WidgetOutputs>> { Ok(Outcome::done()) }
/// #   async fn delete(&self, _: &Context<WidgetConfig>) -> CallbackResult<Outcome<WidgetOutputs>> { Ok(Outcome::done()) }
/// }
///
/// // `my-operator crd`: the declaration and the types, no client.
/// let crd = crd::generate(&ResourceSchema::of::<Widgets>(), &CrdConfig::default()).unwrap();
/// let root = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
/// assert_eq!(root["spec"]["properties"]["config"]["properties"]["size"]["type"], "integer");
/// assert_eq!(root["status"]["properties"]["outputs"]["properties"]["serial"]["type"], "string");
/// assert!(root["spec"]["properties"]["writeConnectionSecretToRef"].is_object());
/// ```
#[derive(Clone)]
pub struct ResourceSchema {
    pub(crate) descriptor: ResourceDescriptor,
    pub(crate) config: Option<ConfigType>,
    pub(crate) outputs: Option<OutputsType>,
    pub(crate) connection: bool,
    /// `converge` and `delete` run durable steps (`status.workflow`).
    pub(crate) steps: bool,
    /// Config fields naming other managed resources.
    pub(crate) references: Vec<crate::references::ReferenceField>,
    /// Kinds whose changes ask for early checks of this package's resources.
    pub(crate) related: Vec<crate::related::Related>,
    /// Top-level `spec.config` fields that may not change once accepted.
    pub(crate) immutable: Vec<String>,
    /// Older served versions (a trait package's
    /// [`Infrastructure::versions`](crate::Infrastructure::versions)).
    pub(crate) versions: Vec<crate::versions::old::OldVersion>,
}

impl ResourceSchema {
    /// The declaration of a package of resources of type `descriptor`,
    /// using none of the optional features yet.
    pub fn new(descriptor: ResourceDescriptor) -> Self {
        Self {
            descriptor,
            config: None,
            outputs: None,
            connection: false,
            steps: false,
            references: Vec::new(),
            related: Vec::new(),
            immutable: Vec::new(),
            versions: Vec::new(),
        }
    }

    /// Declares a related kind: a change to one of its objects asks for an
    /// early check of the resources it maps to (see [`Related`](crate::related::Related)).
    /// Declare as many as needed; each kind is listed and watched once per
    /// namespace scope, however many packages declare it. A package with a
    /// connection Secret has it related already.
    pub fn related(mut self, related: crate::related::Related) -> Self {
        self.related.push(related);
        self
    }

    /// Describes `spec.config` with `C`'s schema: the package's `Config`.
    pub(crate) fn config<C>(mut self) -> Self
    where
        C: DeserializeOwned + JsonSchema + Send + Sync + 'static,
    {
        self.config = Some(ConfigType::of::<C>());
        self
    }

    /// Declares the outputs type `O` of a closure-form package: the CRD
    /// describes `status.outputs` with its schema, and outputs a callback
    /// returns must deserialize into it (undeclared, they are recorded as
    /// they come). A trait package's is its `Outputs` type.
    pub fn outputs<O>(mut self) -> Self
    where
        O: DeserializeOwned + JsonSchema + 'static,
    {
        self.outputs = Some(OutputsType::of::<O>());
        self
    }

    /// Declares connection details: the controller keeps one Secret per
    /// resource (see [`Connection`](crate::connection::Connection)), the generated CRD
    /// gains `spec.writeConnectionSecretToRef.name`, and callbacks reach
    /// the Secret through [`Context::connection`](crate::Context::connection).
    pub fn connection_secret(mut self) -> Self {
        self.connection = true;
        self
    }

    /// Declares durable steps: `converge` and `delete` run their work as
    /// named steps through [`Context::steps`](crate::Context::steps),
    /// recorded in `status.workflow` (described by the generated CRD), so
    /// a later pass of the same run resumes where the last one stopped
    /// (see [`Steps`](crate::steps::Steps)). With steps declared, `Reconciling`
    /// (or `Deleting`) is published with the first step's record, not
    /// before the callback: every effect belongs inside a step.
    pub fn steps(mut self) -> Self {
        self.steps = true;
        self
    }

    /// Declares `spec.config.<field>` a reference to a resource of `kind`,
    /// another package's in this controller, in the same namespace: `{name:
    /// ...}` in the config (a [`Reference`](crate::related::Reference) field of the
    /// config type), described so in the generated CRD.
    ///
    /// Before any callback runs, the controller reads what it names: not
    /// found, not Ready for its current generation, being deleted, or
    /// Ready without this controller's own marks (its finalizer and a
    /// recorded profile and state identity: a status anyone with `/status`
    /// access wrote proves nothing), and the resource is `Waiting` /
    /// `DependencyNotReady` (no callback runs; checked again as soon as the
    /// referenced resource changes, and at its interval); Ready, and the
    /// callbacks get its `status.outputs`
    /// ([`Context::referenced`](crate::Context::referenced)). A field that
    /// is not a reference, a name that is no object name (a DNS-1123
    /// subdomain; such a name is never sent to the API server), or a chain
    /// of references that leads back to the resource, is `Invalid`. A
    /// resource being deleted does not wait: its callbacks get the outputs
    /// of what is Ready and nothing for the rest.
    pub fn reference(mut self, field: impl Into<String>, kind: ResourceDescriptor) -> Self {
        self.references.push(crate::references::ReferenceField {
            field: field.into(),
            kind,
        });
        self
    }

    /// Declares the top-level `spec.config.<field>` immutable: once a
    /// resource's config is accepted (recorded when an effect is about to
    /// run, or the resource is Ready), the field may be neither added,
    /// removed nor changed. `profile` always is, without a declaration.
    ///
    /// One declaration for every enforcer. The controller always enforces
    /// it: status records a digest of the accepted values
    /// (`status.immutableDigest`, never the values), and an edit that
    /// changes one makes the resource `Invalid` / `ImmutableField` (the
    /// field's name in a Warning Event only), with no callback run until
    /// the edit is reverted; a resource being destroyed waits for that
    /// revert too, while `deletionPolicy: Retain` releases it as usual.
    /// The generated CRD also carries the rule as CEL
    /// ([`CrdConfig::cel`](crate::crd::CrdConfig::cel)), so an API server
    /// with CEL (1.25 and later) refuses the edit at `kubectl apply`.
    ///
    /// ```
    /// use blue_kubernetes::{crd::{self, CrdConfig}, ResourceSchema};
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// let schema = ResourceSchema::new(ResourceDescriptor::new("dns.example.com", "v1", "records", "Record"))
    ///     .immutable("zone")
    ///     .immutable("kind");
    /// let crd = crd::generate(&schema, &CrdConfig::default()).unwrap();
    /// let config = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["config"];
    /// assert_eq!(config["x-kubernetes-validations"][2]["message"], "kind is immutable");
    /// ```
    pub fn immutable(mut self, field: impl Into<String>) -> Self {
        let field = field.into();
        if !self.immutable.contains(&field) {
            self.immutable.push(field);
        }
        self
    }

    /// The resource type.
    pub fn descriptor(&self) -> &ResourceDescriptor {
        &self.descriptor
    }

    /// The versions served: the stored one (the descriptor's) first, then
    /// the older ones a trait package declares
    /// ([`Infrastructure::versions`](crate::Infrastructure::versions)).
    pub fn served_versions(&self) -> Vec<&str> {
        let old = self.versions.iter().map(|v| v.name.as_str());
        std::iter::once(self.descriptor.version.as_str())
            .chain(old)
            .collect()
    }
}

impl From<ResourceDescriptor> for ResourceSchema {
    fn from(descriptor: ResourceDescriptor) -> Self {
        Self::new(descriptor)
    }
}

impl AsRef<ResourceSchema> for ResourceSchema {
    fn as_ref(&self) -> &ResourceSchema {
        self
    }
}

impl std::fmt::Debug for ResourceSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceSchema")
            .field("descriptor", &self.descriptor)
            .field("typed_config", &self.config.is_some())
            .field("typed_outputs", &self.outputs.is_some())
            .field("connection_secret", &self.connection)
            .field("steps", &self.steps)
            .field("references", &self.references)
            .field("related", &self.related.len())
            .field("immutable", &self.immutable)
            .field("versions", &self.versions)
            .finish()
    }
}

/// How a typed package's config is described.
#[derive(Clone)]
pub(crate) struct ConfigType {
    /// The config's OpenAPI v3 schema, as schemars generates it.
    pub(crate) schema: fn() -> Value,
}

impl ConfigType {
    pub(crate) fn of<C: JsonSchema>() -> Self {
        Self {
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

/// How a package's declared outputs type checks and describes outputs.
#[derive(Clone)]
pub(crate) struct OutputsType {
    pub(crate) fits: fn(&Value) -> bool,
    pub(crate) schema: fn() -> Value,
}

impl OutputsType {
    pub(crate) fn of<O: DeserializeOwned + JsonSchema + 'static>() -> Self {
        Self {
            fits: |v| serde_json::from_value::<O>(v.clone()).is_ok(),
            schema: openapi_schema::<O>,
        }
    }
}
