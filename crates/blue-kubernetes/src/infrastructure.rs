//! The package trait: one type whose methods are the callbacks, with the
//! typed config and outputs as associated types and every other feature
//! declared once, in its [`ResourceSchema`].

use crate::package::{CallbackResult, WorkflowOutcome, OUTPUTS_KEY};
use crate::{Context, Observation, Options, ResourceSchema, ValidationErrors};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A package: the callbacks that manage one kind of infrastructure, as
/// methods of one type. Turn it into a [`Package`](crate::Package) with
/// [`Package::new`](crate::Package::new) (or `Package::from`).
///
/// - [`Config`](Self::Config) is `spec.config` decoded (serde + schemars):
///   the generated CRD describes it, a config that does not decode makes
///   the resource `Invalid` before any callback runs, and every callback
///   reads it with [`Context::config`].
/// - [`Outputs`](Self::Outputs) are the facts `observe` and `converge`
///   report, recorded in `status.outputs` and described by the CRD; a
///   package without outputs says [`NoOutputs`].
/// - [`schema`](Self::schema) declares the rest once: the resource type,
///   a connection Secret, durable steps, references and related kinds.
///
/// The methods are async. Blocking work (a subprocess, a blocking SDK)
/// goes through [`blocking`], which runs it on a blocking thread so it
/// never stalls the controller. A panic in any method is a failed attempt,
/// never a crashed controller.
///
/// ```
/// use blue_kubernetes::{
///     async_trait, CallbackResult, Context, Infrastructure, NoOutputs, Observation, Outcome,
///     Package, ResourceSchema,
/// };
/// use blue_kubernetes_client::ResourceDescriptor;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct WidgetConfig {
///     /// Number of widgets.
///     size: u32,
/// }
///
/// struct Widgets;
///
/// #[async_trait]
/// impl Infrastructure for Widgets {
///     type Config = WidgetConfig;
///     type Outputs = NoOutputs;
///
///     fn schema() -> ResourceSchema {
///         ResourceSchema::new(ResourceDescriptor::new("example.com", "v1", "widgets", "Widget"))
///     }
///
///     async fn observe(&self, cx: &Context<WidgetConfig>) -> CallbackResult<Observation<NoOutputs>> {
///         let _wanted = cx.config().size;
///         Ok(Observation::ABSENT)
///     }
///
///     async fn converge(&self, _cx: &Context<WidgetConfig>) -> CallbackResult<Outcome<NoOutputs>> {
///         Ok(Outcome::done())
///     }
///
///     async fn delete(&self, _cx: &Context<WidgetConfig>) -> CallbackResult<Outcome<NoOutputs>> {
///         Ok(Outcome::done())
///     }
/// }
///
/// let package = Package::new(Widgets).unwrap();
/// assert_eq!(package.descriptor().kind, "Widget");
/// ```
#[async_trait]
pub trait Infrastructure: Send + Sync + 'static {
    /// `spec.config`, decoded; the CRD describes it with its schema. The
    /// reserved keys (`profile` and the destroy-protection key) are never
    /// part of it.
    type Config: DeserializeOwned + JsonSchema + Send + Sync + 'static;
    /// What `observe` and `converge` report, recorded in `status.outputs`:
    /// non-secret facts (endpoint, external ID, version), never
    /// credentials. [`NoOutputs`] for a package without any.
    type Outputs: Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static;

    /// The package's declaration: the resource type and the features it
    /// uses (connection Secret, durable steps, references, related kinds).
    /// The config and outputs types come from the associated types; the
    /// generated CRD is derived from this one declaration.
    fn schema() -> ResourceSchema;

    /// The errors in the config, empty when valid (the default). Return
    /// [`ValidationErrors`] (a `Vec<String>` converts: every message for
    /// the operator's log only) to mark messages safe for the resource's
    /// users. Runs every pass: keep it quick, without effects.
    async fn validate(&self, cx: &Context<Self::Config>) -> CallbackResult<ValidationErrors> {
        let _ = cx;
        Ok(ValidationErrors::default())
    }

    /// The backend boundary and profile: resources with equal identities
    /// share one lock, and the identity of a resource may not change once
    /// recorded. The default is the resource type and the profile
    /// (`spec.config.profile`, default `<namespace>--<name>`). Runs before
    /// the pass holds its lease ([`Context::api`] is `None`): keep it a
    /// quick, pure function of the context.
    async fn identity(&self, cx: &Context<Self::Config>) -> CallbackResult<Vec<Option<String>>> {
        let plural = Self::schema().descriptor().qualified_plural();
        Ok(vec![Some(plural), Some(cx.profile().to_string())])
    }

    /// Reports the infrastructure: whether it exists, matches the config
    /// and is ready, with outputs and the external name. Read-only.
    async fn observe(
        &self,
        cx: &Context<Self::Config>,
    ) -> CallbackResult<Observation<Self::Outputs>>;

    /// Makes the infrastructure match the config. An error fails the pass
    /// (retried with backoff).
    async fn converge(&self, cx: &Context<Self::Config>) -> CallbackResult<Outcome<Self::Outputs>>;

    /// Destroys the infrastructure (only for `deletionPolicy: Destroy`).
    async fn delete(&self, cx: &Context<Self::Config>) -> CallbackResult<Outcome<Self::Outputs>>;
}

/// The outputs type of a package that reports none: `status.outputs` keeps
/// any object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoOutputs {}

// Written out: the crate does not build schemars' derive macros. (Never
// used for a CRD: a package with `NoOutputs` declares no outputs type.)
impl JsonSchema for NoOutputs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoOutputs".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "object"})
    }
}

/// What `converge` and `delete` of an [`Infrastructure`] return when they
/// succeed: optionally the outputs and the external name of what they
/// made. A failure is an error.
///
/// ```
/// use blue_kubernetes::Outcome;
/// #[derive(serde::Serialize)]
/// struct Made { oid: u32 }
/// let outcome = Outcome::done().with(Made { oid: 16384 }).with_external_name("16384");
/// assert_eq!(outcome.external_name(), Some("16384"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome<O> {
    outputs: Option<O>,
    external_name: Option<String>,
    /// The closure form's map, kept as it came.
    map: WorkflowOutcome,
}

impl<O> Default for Outcome<O> {
    fn default() -> Self {
        Self::done()
    }
}

impl<O> Outcome<O> {
    /// Succeeded, reporting nothing.
    pub fn done() -> Self {
        Self {
            outputs: None,
            external_name: None,
            map: WorkflowOutcome::new(),
        }
    }

    /// Reports the outputs of what was made.
    #[must_use]
    pub fn with(mut self, outputs: O) -> Self {
        self.outputs = Some(outputs);
        self
    }

    /// Reports the infrastructure's own ID: recorded as the resource's
    /// external name and handed to later passes ([`Context::external_name`]).
    #[must_use]
    pub fn with_external_name(mut self, name: impl Into<String>) -> Self {
        self.external_name = Some(name.into());
        self
    }

    /// The external name reported, if any.
    pub fn external_name(&self) -> Option<&str> {
        self.external_name.as_deref()
    }

    pub(crate) fn from_map(map: WorkflowOutcome) -> Self {
        Self {
            map,
            ..Self::done()
        }
    }
}

/// The key of a [`WorkflowOutcome`] under which the external name travels
/// from an [`Outcome`] to the pass.
pub(crate) const EXTERNAL_NAME_KEY: &str = "blue/external-name";

impl<O: Serialize> Outcome<O> {
    /// The workflow map the pass reads.
    fn into_map(self) -> CallbackResult<WorkflowOutcome> {
        let mut map = self.map;
        if let Some(outputs) = self.outputs {
            map.insert(OUTPUTS_KEY.into(), serde_json::to_value(outputs)?);
        }
        if let Some(name) = self.external_name {
            map.insert(EXTERNAL_NAME_KEY.into(), name.into());
        }
        Ok(map)
    }
}

/// Runs blocking work (a subprocess, a blocking client) on one of tokio's
/// blocking threads, so it never stalls the controller; a panic in it is a
/// failed attempt, as anywhere in a callback.
///
/// ```
/// # async fn demo() -> blue_kubernetes::CallbackResult<()> {
/// let status = blue_kubernetes::blocking(|| Ok(std::process::Command::new("true").status()?)).await?;
/// assert!(status.success());
/// # Ok(()) }
/// ```
pub async fn blocking<T, F>(f: F) -> CallbackResult<T>
where
    F: FnOnce() -> CallbackResult<T> + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result,
        Err(e) => match e.try_into_panic() {
            // Carried on, so the pass reports it as the panic it was.
            Ok(payload) => std::panic::resume_unwind(payload),
            Err(_) => Err("the blocking task was cancelled".into()),
        },
    }
}

/// The callbacks as the pass calls them: over [`Options`], whatever the
/// package's types.
#[async_trait]
pub(crate) trait Callbacks: Send + Sync {
    async fn validate(&self, options: &Options) -> CallbackResult<ValidationErrors>;
    async fn identity(&self, options: &Options) -> CallbackResult<Vec<Option<String>>>;
    async fn observe(&self, options: &Options) -> CallbackResult<Observation>;
    async fn converge(&self, options: &Options) -> CallbackResult<WorkflowOutcome>;
    async fn delete(&self, options: &Options) -> CallbackResult<WorkflowOutcome>;
}

/// How a package's config is decoded from the options.
pub(crate) type Decode<C> = fn(&Options) -> Result<C, serde_json::Error>;

/// An [`Infrastructure`] as the pass calls it: the config decoded, then
/// the typed method.
pub(crate) struct Erased<T: Infrastructure> {
    pub(crate) infrastructure: T,
    pub(crate) decode: Decode<T::Config>,
}

impl<T: Infrastructure> Erased<T> {
    fn context(&self, options: &Options) -> CallbackResult<Context<T::Config>> {
        // The pass refuses a config that does not decode before any
        // callback but `identity`, which then fails the same way.
        let config = (self.decode)(options).map_err(|_| "config did not decode")?;
        Ok(Context::new(Arc::new(config), options.clone()))
    }
}

#[async_trait]
impl<T: Infrastructure> Callbacks for Erased<T> {
    async fn validate(&self, options: &Options) -> CallbackResult<ValidationErrors> {
        self.infrastructure.validate(&self.context(options)?).await
    }

    async fn identity(&self, options: &Options) -> CallbackResult<Vec<Option<String>>> {
        self.infrastructure.identity(&self.context(options)?).await
    }

    async fn observe(&self, options: &Options) -> CallbackResult<Observation> {
        let cx = self.context(options)?;
        Ok(self.infrastructure.observe(&cx).await?.erase())
    }

    async fn converge(&self, options: &Options) -> CallbackResult<WorkflowOutcome> {
        let cx = self.context(options)?;
        self.infrastructure.converge(&cx).await?.into_map()
    }

    async fn delete(&self, options: &Options) -> CallbackResult<WorkflowOutcome> {
        let cx = self.context(options)?;
        self.infrastructure.delete(&cx).await?.into_map()
    }
}
