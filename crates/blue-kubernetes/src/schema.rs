//! A package's resource schema: its type and the types that shape it
//! (config, outputs, connection Secret), without any callback. The CRD is
//! generated from it alone, and every [`Package`](crate::Package) is built
//! around one, so the two cannot describe different resources.

use crate::outputs::OutputsType;
use crate::typed::ConfigType;
use blue_kubernetes_client::ResourceDescriptor;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

/// What [`crd`](crate::crd) needs of a package, and nothing that runs: the
/// resource type, the config type, the outputs type and whether resources
/// have a connection Secret.
///
/// Declare it on its own, or take it from a [`PackageBuilder`](crate::PackageBuilder)
/// before (or without) its callbacks: both implement `AsRef<ResourceSchema>`,
/// as does [`Package`](crate::Package). Printing a CRD then needs no client
/// and none of the callbacks' dependencies.
///
/// ```
/// use blue_kubernetes::{crd, CrdOptions, ResourceSchema};
/// use blue_kubernetes_client::ResourceDescriptor;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct WidgetConfig { size: u32 }
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct WidgetOutputs { serial: String }
///
/// let schema = ResourceSchema::new(ResourceDescriptor::new("example.com", "v1", "widgets", "Widget"))
///     .config::<WidgetConfig>()
///     .outputs::<WidgetOutputs>()
///     .connection_secret();
/// let crd = crd(&schema, &CrdOptions::default()).unwrap();
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
    pub(crate) related: Vec<crate::Related>,
}

impl ResourceSchema {
    /// The schema of an untyped package for `descriptor`: any config, any
    /// outputs, no connection Secret.
    pub fn new(descriptor: ResourceDescriptor) -> Self {
        Self {
            descriptor,
            config: None,
            outputs: None,
            connection: false,
            steps: false,
            references: Vec::new(),
            related: Vec::new(),
        }
    }

    /// The schema of the [`Infrastructure`](crate::Infrastructure) `T`:
    /// its declaration ([`Infrastructure::schema`](crate::Infrastructure::schema))
    /// with the config and outputs its associated types name. What
    /// [`Package::new`](crate::Package::new) builds around, and enough to
    /// print its CRD without making a `T`.
    pub fn of<T: crate::Infrastructure>() -> Self {
        let schema = T::schema().config::<T::Config>();
        let no_outputs =
            std::any::TypeId::of::<T::Outputs>() == std::any::TypeId::of::<crate::NoOutputs>();
        match no_outputs {
            true => schema,
            false => schema.outputs::<T::Outputs>(),
        }
    }

    /// Declares a related kind: a change to one of its objects asks for an
    /// early check of the resources it maps to; see
    /// [`PackageBuilder::related`](crate::PackageBuilder::related).
    pub fn related(mut self, related: crate::Related) -> Self {
        self.related.push(related);
        self
    }

    /// Describes `spec.config` with `C`'s schema; see
    /// [`PackageBuilder::config`](crate::PackageBuilder::config).
    pub fn config<C>(mut self) -> Self
    where
        C: DeserializeOwned + JsonSchema + Send + Sync + 'static,
    {
        self.config = Some(ConfigType::of::<C>());
        self
    }

    /// Describes `status.outputs` with `O`'s schema; see
    /// [`PackageBuilder::outputs`](crate::PackageBuilder::outputs).
    pub fn outputs<O>(mut self) -> Self
    where
        O: DeserializeOwned + JsonSchema + 'static,
    {
        self.outputs = Some(OutputsType::of::<O>());
        self
    }

    /// Declares a connection Secret per resource (`spec.writeConnectionSecretToRef`);
    /// see [`PackageBuilder::connection_secret`](crate::PackageBuilder::connection_secret).
    pub fn connection_secret(mut self) -> Self {
        self.connection = true;
        self
    }

    /// Declares durable steps (`status.workflow`); see
    /// [`PackageBuilder::steps`](crate::PackageBuilder::steps).
    pub fn steps(mut self) -> Self {
        self.steps = true;
        self
    }

    /// Declares `spec.config.<field>` a reference to a resource of `kind`
    /// in the same namespace; see
    /// [`PackageBuilder::reference`](crate::PackageBuilder::reference).
    pub fn reference(mut self, field: impl Into<String>, kind: ResourceDescriptor) -> Self {
        self.references.push(crate::references::ReferenceField {
            field: field.into(),
            kind,
        });
        self
    }

    /// The resource type.
    pub fn descriptor(&self) -> &ResourceDescriptor {
        &self.descriptor
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
            .finish()
    }
}
