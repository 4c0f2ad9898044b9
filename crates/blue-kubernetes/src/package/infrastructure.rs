//! The package trait: one type whose methods are the callbacks, with the
//! typed config and outputs as associated types and every other feature
//! declared once, in its [`ResourceSchema`].

use crate::package::observation::Outputs;
use crate::package::result::{Answer, CallbackResult};
use crate::package::validation::ValidationErrors;
use crate::versions::Versions;
use crate::{
    package::context::Context, package::context::IdentityContext,
    package::observation::Observation, package::schema::ResourceSchema,
};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A package: the callbacks that manage one kind of infrastructure, as
/// methods of one type. Turn it into a [`Package`](crate::Package) with
/// [`Package::new`](crate::Package::new).
///
/// - [`Config`](Self::Config) is `spec.config` decoded (serde + schemars):
///   the generated CRD describes it, a config that does not decode makes
///   the resource `Invalid` before any callback runs, and every callback
///   reads it with [`Context::config`].
/// - [`Outputs`](Self::Outputs) are the facts `observe` and `converge`
///   report, recorded in `status.outputs` and described by the CRD; a
///   package without outputs says [`NoOutputs`](crate::package::NoOutputs).
/// - [`schema`](Self::schema) declares the rest once: the resource type,
///   a connection Secret, durable steps, references and related kinds.
///
/// The methods are async. Blocking work (a subprocess, a blocking SDK)
/// goes through [`blocking`](crate::package::blocking), which runs it on a blocking thread so it
/// never stalls the controller. A panic in any method is a failed attempt,
/// never a crashed controller. A unit test calls a method directly with
/// [`Context::from_resource`] (and [`Context::with_api`] for a fake API);
/// the testkit runs the package under the controller's real rules.
///
/// The closure form ([`Package::builder`](crate::Package::builder), with
/// callbacks receiving the [`CallbackInput`](crate::package::CallbackInput)
/// map) is called by the pass exactly as a package of this trait is.
///
/// ```
/// use blue_kubernetes::{
///     async_trait, package::NoOutputs, CallbackResult, Context, Infrastructure, Observation,
///     Outcome, Package, ResourceSchema,
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
#[doc = include_str!("features.md")]
#[async_trait]
pub trait Infrastructure: Send + Sync + 'static {
    /// `spec.config`, decoded; the CRD describes it with its schema. The
    /// reserved keys (`profile` and the destroy-protection key) are never
    /// part of it.
    type Config: DeserializeOwned + JsonSchema + Send + Sync + 'static;
    /// What `observe` and `converge` report, recorded in `status.outputs`:
    /// non-secret facts (endpoint, external ID, version), never
    /// credentials. [`NoOutputs`](crate::package::NoOutputs) for a package without any.
    type Outputs: Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static;

    /// The package's declaration: the resource type and the features it
    /// uses (connection Secret, durable steps, references, related kinds).
    /// The config and outputs types come from the associated types; the
    /// generated CRD is derived from this one declaration
    /// ([`ResourceSchema::of`]). An associated function, not a method: an
    /// operator's `crd` subcommand prints the CRD without building the
    /// package (and its clients). Keep it cheap, without effects.
    fn schema() -> ResourceSchema;

    /// The versions of the resource served besides the stored one (the
    /// descriptor's, at which [`Config`](Self::Config) is): each older
    /// one with its own config type and conversions to and from `Config`
    /// (see [`Versions`]). The default serves the stored version only.
    /// The controller and the callbacks always see the stored version;
    /// immutable fields are declared on it ([`ResourceSchema::immutable`]).
    /// An associated function, like [`schema`](Self::schema).
    fn versions() -> Versions<Self::Config> {
        Versions::stored()
    }

    /// The errors in the config, empty when valid (the default). Return
    /// [`ValidationErrors`] (a `Vec<String>` converts: every message for
    /// the operator's log only) to mark messages safe for the resource's
    /// users. Runs every pass: keep it quick, without effects.
    ///
    /// Where the operator serves the admission webhook (the runner's
    /// `--webhook-bind`), it also runs at `kubectl apply`, for every
    /// create and every update that changes `spec`, and its user-facing
    /// messages (with their [`field`](crate::package::UserFacingMessage::with_field))
    /// are the denial. There its context has no references' outputs
    /// (`cx.referenced` fails), no connection (`cx.connection()` is
    /// `None`) and no API handle (`cx.api()` is `None`): a check that
    /// needs them finds nothing wrong without them and is left to the
    /// pass, which runs `validate` again with everything. An error or a
    /// panic there admits the request: the pass judges it.
    async fn validate(&self, cx: &Context<Self::Config>) -> CallbackResult<ValidationErrors> {
        let _ = cx;
        Ok(ValidationErrors::default())
    }

    /// The backend boundary and profile: resources with equal identities
    /// share one lock, and the identity of a resource may not change once
    /// recorded. The default is the resource type and the profile
    /// (`spec.config.profile`, default `<namespace>--<name>`).
    ///
    /// It reads only what the resource itself says: its config, metadata
    /// and profile ([`IdentityContext`]), never the outputs of the
    /// resources it references, the connection, the steps, the clock or
    /// the API. The controller compares each pass's identity with the
    /// recorded one, and a different one makes the resource
    /// `Invalid`/`ImmutableStateIdentity`, its deletion included: an
    /// identity computed from a referenced resource's outputs would change
    /// when that resource goes (deleted together with its referrer, say)
    /// and hold the referrer's deletion forever. A recorded identity is a
    /// record, not an authority to delete by: a package that needs the
    /// referenced infrastructure's ID reads it in the other callbacks.
    /// It runs on every pass (and, with sharding, on every replica) before
    /// the pass holds its lease: keep it a quick, pure function.
    async fn identity(
        &self,
        cx: &IdentityContext<Self::Config>,
    ) -> CallbackResult<Vec<Option<String>>> {
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
        }
    }

    /// Reports the outputs of what was made.
    #[must_use]
    pub fn with(mut self, outputs: O) -> Self {
        self.outputs = Some(outputs);
        self
    }

    /// Reports the infrastructure's own ID: recorded as the resource's
    /// external name and handed to later passes ([`Context::external_name`](crate::Context::external_name)).
    #[must_use]
    pub fn with_external_name(mut self, name: impl Into<String>) -> Self {
        self.external_name = Some(name.into());
        self
    }

    /// The external name reported, if any.
    pub fn external_name(&self) -> Option<&str> {
        self.external_name.as_deref()
    }
}

impl<O: Serialize> Outcome<O> {
    /// The typed answer the pass reads.
    pub(crate) fn answer(self) -> CallbackResult<Answer> {
        let outputs = self.outputs.map(serde_json::to_value).transpose()?;
        Ok(Answer {
            failed: false,
            outputs: outputs.map(Outputs::Value),
            external_name: self.external_name,
        })
    }
}

// Here rather than in `schema.rs`: the trait names `ResourceSchema`, so
// the schema naming the trait would make the two modules a cycle.
impl ResourceSchema {
    /// The schema of the package type `T`: its declaration
    /// ([`Infrastructure::schema`](crate::Infrastructure::schema)) with the
    /// config and outputs types its associated types name. What
    /// [`Package::new`](crate::Package::new) builds around, and what to
    /// give [`crd::generate`](crate::crd::generate): no value of `T` is
    /// needed, so a `crd` subcommand builds none of its clients.
    pub fn of<T: Infrastructure>() -> Self {
        T::schema().with_types_of::<T>()
    }

    /// This declaration with the config and outputs types of `T`.
    pub(crate) fn with_types_of<T: Infrastructure>(mut self) -> Self {
        self.versions = T::versions().into_old();
        let schema = self.config::<T::Config>();
        let no_outputs =
            std::any::TypeId::of::<T::Outputs>() == std::any::TypeId::of::<NoOutputs>();
        match no_outputs {
            true => schema,
            false => schema.outputs::<T::Outputs>(),
        }
    }
}
