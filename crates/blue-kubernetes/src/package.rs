//! Writing a package, beyond the root's [`Infrastructure`],
//! [`Context`](crate::Context), [`Observation`](crate::Observation),
//! [`Outcome`](crate::Outcome) and [`CallbackResult`]: no outputs
//! ([`NoOutputs`]), what `validate` returns ([`ValidationErrors`],
//! [`UserFacingMessage`]), a failure that is the user's to fix
//! ([`Rejected`]), blocking code ([`blocking`]), the fenced
//! Kubernetes [`Api`] handle, the size limits, and the closure form
//! ([`Package::builder`], whose callbacks get a [`CallbackInput`] and
//! return a [`WorkflowOutcome`]).

pub use crate::closures::PackageBuilder;
pub use crate::context::Api;
pub use crate::domain::options::{CallbackInput, EVENT_KEY, RESOURCE_KEY};
pub use crate::infrastructure::{blocking, NoOutputs, EXTERNAL_NAME_KEY};
pub use crate::outputs::MAX_OUTPUTS_BYTES;
pub use crate::rejected::Rejected;
pub use crate::validation::{UserFacingMessage, ValidationErrors, MAX_USER_FACING_BYTES};

use crate::binding::{Bind, Callbacks, Decode, Refused, Unbound};
use crate::{Error, Infrastructure, ResourceSchema};
use blue_kubernetes_client::ResourceDescriptor;
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::Arc;

/// The error a callback returns. Its text is never copied into status,
/// Events, errors or `Debug` output; it reaches only the operator's log (one
/// WARN line per failure, carrying the error and its `source()` chain
/// joined as `outer: middle: inner`), unless [`Config::log_callback_errors`](crate::Config::log_callback_errors)
/// is false. The one exception is a [`Rejected`] in the chain: its
/// [`UserFacingMessage`] becomes a Warning Event on the resource.
pub type CallbackError = Box<dyn std::error::Error + Send + Sync>;

/// What a callback returns.
pub type CallbackResult<T> = Result<T, CallbackError>;

/// A workflow outcome map returned by `converge` and `delete`. A non-zero
/// integer under `blue/exit` marks failure; absent means 0.
pub type WorkflowOutcome = Map<String, Value>;

/// The key of a [`WorkflowOutcome`] under which `converge` hands over
/// outputs; see [`outcome_with_outputs`].
pub const OUTPUTS_KEY: &str = "blue/outputs";

/// A successful [`WorkflowOutcome`] carrying `outputs` (under
/// [`OUTPUTS_KEY`]), for a `converge` that knows what it made.
///
/// ```
/// use blue_kubernetes::package::{outcome_with_outputs, OUTPUTS_KEY};
/// let outcome = outcome_with_outputs(&serde_json::json!({"oid": 16384})).unwrap();
/// assert_eq!(outcome[OUTPUTS_KEY]["oid"], 16384);
/// ```
pub fn outcome_with_outputs(outputs: &impl Serialize) -> CallbackResult<WorkflowOutcome> {
    let mut outcome = WorkflowOutcome::new();
    outcome.insert(OUTPUTS_KEY.into(), serde_json::to_value(outputs)?);
    Ok(outcome)
}

/// One resource kind and its callbacks, as the controller runs it. Cheap
/// to clone.
///
/// Made from an [`Infrastructure`] with [`Package::new`], or from closures
/// receiving the [`CallbackInput`] map with [`Package::builder`] (the closure
/// form, called by the pass exactly as a trait package is). A panicking callback counts as a
/// failed attempt.
#[derive(Clone)]
pub struct Package {
    inner: Arc<PackageInner>,
}

struct PackageInner {
    schema: ResourceSchema,
    /// The package's callbacks, before a resource's config is decoded.
    unbound: Box<dyn Bind>,
}

impl Package {
    /// The package of an [`Infrastructure`]: its declared schema, with the
    /// config and outputs types its associated types name. Fails with
    /// [`Error::NotStructural`] naming the field of either type that no
    /// CRD can describe.
    pub fn new<T: Infrastructure>(infrastructure: T) -> Result<Package, Error> {
        Self::with_schema(infrastructure, T::schema())
    }

    /// The package of an [`Infrastructure`] declared by `schema` instead
    /// of its type's [`Infrastructure::schema`], with the config and
    /// outputs types its associated types name: for a declaration only
    /// known at run time (a resource group chosen by a flag, a related
    /// mapping over the package's own state). Its CRD is generated from
    /// the package itself (`crd::generate(&package, ..)`), as
    /// [`ResourceSchema::of`] knows only the type's.
    ///
    /// ```
    /// # use blue_kubernetes::*;
    /// # use blue_kubernetes::package::NoOutputs;
    /// # use blue_kubernetes_client::ResourceDescriptor;
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// # struct WidgetConfig {}
    /// struct Widgets;
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
    /// let group = "staging.example.com"; // from a flag
    /// let schema = ResourceSchema::new(ResourceDescriptor::new(group, "v1", "widgets", "Widget"));
    /// let package = Package::with_schema(Widgets, schema).unwrap();
    /// assert_eq!(package.descriptor().group, group);
    /// ```
    pub fn with_schema<T: Infrastructure>(
        infrastructure: T,
        schema: ResourceSchema,
    ) -> Result<Package, Error> {
        let decode: Decode<T::Config> = crate::typed::decode_config::<T::Config>;
        let unbound = Unbound {
            infrastructure: Arc::new(infrastructure),
            decode,
        };
        Self::assemble(schema.with_types_of::<T>(), Box::new(unbound))
    }

    /// Starts a package of closures for `descriptor`: the closure form,
    /// whose callbacks receive the [`CallbackInput`] map. See [`PackageBuilder`].
    pub fn builder(descriptor: ResourceDescriptor) -> PackageBuilder {
        PackageBuilder::new(descriptor)
    }

    /// Every package, of either form, is made here.
    pub(crate) fn assemble(schema: ResourceSchema, unbound: Box<dyn Bind>) -> Result<Self, Error> {
        crate::crd::check(&schema)?;
        Ok(Package {
            inner: Arc::new(PackageInner { schema, unbound }),
        })
    }

    /// The resource type this package manages.
    pub fn descriptor(&self) -> &ResourceDescriptor {
        &self.inner.schema.descriptor
    }

    /// The schema the package was built with: what its CRD describes.
    pub(crate) fn schema(&self) -> &ResourceSchema {
        &self.inner.schema
    }

    /// The package bound to the config of the resource `options` are for;
    /// for a config that does not decode, callbacks that fail saying why,
    /// and why (values removed).
    pub(crate) fn bind(&self, options: &CallbackInput) -> (Arc<dyn Callbacks>, Option<String>) {
        match self.inner.unbound.bind(options) {
            Ok(bound) => (bound, None),
            Err(e) => {
                let why = crate::typed::redact(&crate::telemetry::log::error_chain(&e));
                (Arc::new(Refused(why.clone())), Some(why))
            }
        }
    }

    /// The callbacks for `options`: those they were bound to when the
    /// pass made them, else bound now.
    pub(crate) fn callbacks(&self, options: &CallbackInput) -> Arc<dyn Callbacks> {
        match options.bound() {
            Some(bound) => bound.clone(),
            None => self.bind(options).0,
        }
    }
}

impl AsRef<ResourceSchema> for Package {
    fn as_ref(&self) -> &ResourceSchema {
        self.schema()
    }
}

impl std::fmt::Debug for Package {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Package")
            .field("descriptor", self.descriptor())
            .finish_non_exhaustive()
    }
}
