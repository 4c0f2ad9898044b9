//! Packages: a resource type plus the trusted callbacks that manage its infrastructure.

use crate::callback::{Callback, Closures};
use crate::infrastructure::{Callbacks, Decode, Erased};
use crate::typed::TypedPackageBuilder;
use crate::{
    Error, Infrastructure, Observation, Options, Related, ResourceSchema, ValidationErrors,
};
use blue_kubernetes_client::ResourceDescriptor;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use std::future::Future;
use std::sync::Arc;

/// The error a callback returns. Its text is never copied into status,
/// Events, errors or `Debug` output; it reaches only the operator's log (one
/// WARN line per failure, carrying the error and its `source()` chain
/// joined as `outer: middle: inner`), unless [`Config::log_callback_errors`](crate::Config::log_callback_errors)
/// is false.
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
/// use blue_kubernetes::{outcome_with_outputs, OUTPUTS_KEY};
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
/// Made from an [`Infrastructure`] with [`Package::new`], or
/// from closures receiving the [`Options`] map with [`Package::builder`]
/// (the closure form, an adapter onto the same trait). In the closure
/// form each callback may be synchronous (run on a blocking thread, so
/// subprocesses never stall polling) or asynchronous. A panicking
/// callback counts as a failed attempt.
///
/// ```
/// use blue_kubernetes::{Observation, Package, WorkflowOutcome};
/// use blue_kubernetes_client::ResourceDescriptor;
///
/// let package = Package::builder(ResourceDescriptor::new("example.com", "v1", "widgets", "Widget"))
///     .validate(|opts| {
///         Ok(match opts.get("size") {
///             Some(v) if v.is_u64() => vec![],
///             _ => vec!["size must be a positive integer".to_string()],
///         })
///     })
///     .identity(|opts| Ok(vec![Some("widgets".into()), Some(opts.profile().to_string())]))
///     .observe_async(|_opts| async { Ok(Observation::ABSENT) })
///     .converge(|_opts| Ok(WorkflowOutcome::new()))
///     .delete(|_opts| Ok(WorkflowOutcome::new()))
///     .build()
///     .unwrap();
/// assert_eq!(package.descriptor().kind, "Widget");
/// ```
#[derive(Clone)]
pub struct Package {
    inner: Arc<PackageInner>,
}

struct PackageInner {
    schema: ResourceSchema,
    /// The package's callbacks: an [`Infrastructure`], or the closure
    /// form's adapter onto it.
    callbacks: Box<dyn Callbacks>,
}

impl Package {
    /// The package of an [`Infrastructure`]: its declared schema, with the
    /// config and outputs types its associated types name. Fails with
    /// [`Error::NotStructural`] naming the field of either type that no
    /// CRD can describe.
    pub fn new<T: Infrastructure>(infrastructure: T) -> Result<Package, Error> {
        let schema = ResourceSchema::of::<T>();
        crate::crd::check(&schema)?;
        let decode: Decode<T::Config> = crate::typed::decode_config::<T::Config>;
        Ok(Self::assemble(
            schema,
            Erased {
                infrastructure,
                decode,
            },
        ))
    }

    /// Starts building a package of closures for `descriptor`: the closure
    /// form, whose callbacks receive the [`Options`] map.
    pub fn builder(descriptor: ResourceDescriptor) -> PackageBuilder {
        PackageBuilder {
            schema: ResourceSchema::new(descriptor),
            validate: None,
            identity: None,
            observe: None,
            converge: None,
            delete: None,
        }
    }

    pub(crate) fn assemble(schema: ResourceSchema, callbacks: impl Callbacks + 'static) -> Self {
        Package {
            inner: Arc::new(PackageInner {
                schema,
                callbacks: Box::new(callbacks),
            }),
        }
    }

    /// The resource type this package manages.
    pub fn descriptor(&self) -> &ResourceDescriptor {
        &self.inner.schema.descriptor
    }

    /// The schema the package was built with: what its CRD describes.
    pub(crate) fn schema(&self) -> &ResourceSchema {
        &self.inner.schema
    }

    pub(crate) fn callbacks(&self) -> &dyn Callbacks {
        &*self.inner.callbacks
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

/// Builds a [`Package`]. `validate` is optional (default: always valid); the
/// other callbacks are required. Methods without suffix take synchronous
/// closures, `_async` ones take closures returning futures.
pub struct PackageBuilder {
    pub(crate) schema: ResourceSchema,
    pub(crate) validate: Option<Callback<Value, ValidationErrors>>,
    pub(crate) identity: Option<Callback<Value, Vec<Option<String>>>>,
    pub(crate) observe: Option<Callback<Value, Observation>>,
    pub(crate) converge: Option<Callback<Value, WorkflowOutcome>>,
    pub(crate) delete: Option<Callback<Value, WorkflowOutcome>>,
}

macro_rules! setters {
    ($field:ident, $async_name:ident, $t:ty, $doc:literal) => {
        setters!($field, $async_name, $t, $doc, sync, "");
    };
    ($field:ident, $async_name:ident, $t:ty, $doc:literal, $make:ident, $how:literal) => {
        #[doc = concat!("Sets `", stringify!($field), "` to a synchronous callback: ", $doc, $how)]
        pub fn $field<F>(mut self, f: F) -> Self
        where
            F: Fn(&Options) -> CallbackResult<$t> + Send + Sync + 'static,
        {
            self.$field = Some(Callback::$make(move |_: &Value, opts: &Options| f(opts)));
            self
        }

        #[doc = concat!("Sets `", stringify!($field), "` to an asynchronous callback: ", $doc)]
        pub fn $async_name<F, Fut>(mut self, f: F) -> Self
        where
            F: Fn(Options) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = CallbackResult<$t>> + Send + 'static,
        {
            self.$field = Some(Callback::asynchronous(move |_, opts| f(opts)));
            self
        }
    };
}

impl PackageBuilder {
    /// Declares the package's config type: callbacks set afterwards receive
    /// `spec.config` decoded into `C`, and [`crd`](crate::crd) describes
    /// `spec.config` with `C`'s schema. See [`TypedPackageBuilder`].
    pub fn config<C>(mut self) -> TypedPackageBuilder<C>
    where
        C: DeserializeOwned + JsonSchema + Send + Sync + 'static,
    {
        self.schema = self.schema.config::<C>();
        TypedPackageBuilder::new(self)
    }

    /// Declares the outputs type `O` (serde + schemars): the generated CRD
    /// describes `status.outputs` with its schema, and outputs a callback
    /// returns ([`Observation::with_outputs`], [`outcome_with_outputs`])
    /// must deserialize into it. Without a declared type, outputs are
    /// recorded as they come and the CRD keeps any object there.
    pub fn outputs<O>(mut self) -> Self
    where
        O: DeserializeOwned + JsonSchema + 'static,
    {
        self.schema = self.schema.outputs::<O>();
        self
    }

    /// Declares connection details: the controller keeps one Secret per
    /// resource (see [`Connection`](crate::Connection)), the generated CRD
    /// gains `spec.writeConnectionSecretToRef.name`, and callbacks reach
    /// the Secret through [`Options::connection`](crate::Options::connection).
    pub fn connection_secret(mut self) -> Self {
        self.schema = self.schema.connection_secret();
        self
    }

    /// Declares durable steps: `converge` and `delete` run their work as
    /// named steps through [`Options::steps`](crate::Options::steps),
    /// recorded in `status.workflow` (described by the generated CRD), so
    /// a later pass of the same run resumes where the last one stopped
    /// (see [`Steps`](crate::Steps)). With steps declared, `Reconciling`
    /// (or `Deleting`) is published with the first step's record, not
    /// before the callback: every effect belongs inside a step.
    pub fn steps(mut self) -> Self {
        self.schema.steps = true;
        self
    }

    /// Declares `spec.config.<field>` a reference to a resource of `kind`,
    /// another package's in this controller, in the same namespace: `{name:
    /// ...}` in the config ([`Reference`](crate::Reference) in a typed
    /// one), described so in the generated CRD.
    ///
    /// Before any callback runs, the controller reads what it names: not
    /// found, not Ready for its current generation, being deleted, or
    /// Ready without this controller's own marks (its finalizer and a
    /// recorded profile and state identity: a status anyone with `/status`
    /// access wrote proves nothing), and the resource is `Waiting` /
    /// `DependencyNotReady` (no callback runs; checked again as soon as the
    /// referenced resource changes, and at its interval); Ready, and the
    /// callbacks get its `status.outputs`
    /// ([`Options::referenced`](crate::Options::referenced)). A field that
    /// is not a reference, a name that is no object name (a DNS-1123
    /// subdomain; such a name is never sent to the API server), or a chain
    /// of references that leads back to the resource, is `Invalid`. A
    /// resource being deleted does not wait: its callbacks get the outputs
    /// of what is Ready and nothing for the rest.
    ///
    /// ```
    /// use blue_kubernetes::Package;
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// let servers = ResourceDescriptor::new("db.example.com", "v1", "servers", "Server");
    /// let databases = ResourceDescriptor::new("db.example.com", "v1", "databases", "Database");
    /// let builder = Package::builder(databases).reference("serverRef", servers);
    /// # let _ = builder;
    /// ```
    pub fn reference(mut self, field: impl Into<String>, kind: ResourceDescriptor) -> Self {
        self.schema = self.schema.reference(field, kind);
        self
    }

    /// Declares a related kind: a change to one of its objects asks for an
    /// early check of the resources it maps to (see [`Related`]). Declare
    /// as many as needed; each kind is listed and watched once per
    /// namespace scope, however many packages declare it. A package with a
    /// connection Secret has it related already.
    ///
    /// ```
    /// use blue_kubernetes::{Package, Related};
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// let config_maps = ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap");
    /// let builder = Package::builder(ResourceDescriptor::new("example.com", "v1", "widgets", "Widget"))
    ///     .related(Related::annotated(config_maps, "example.com/owner"));
    /// # let _ = builder;
    /// ```
    pub fn related(mut self, related: Related) -> Self {
        self.schema = self.schema.related(related);
        self
    }

    /// Sets `validate` to a synchronous callback: the errors in the
    /// options, empty when valid. Return a `Vec<String>` (every message for
    /// the operator's log only) or [`ValidationErrors`], which can mark
    /// messages as safe for the resource's users.
    ///
    /// It runs inline on the controller's threads, every pass: keep it a
    /// quick, pure function of the options (no I/O, no waiting); use
    /// [`validate_async`](Self::validate_async) for anything that waits.
    /// (`observe`, `converge` and `delete` given as synchronous callbacks
    /// run on blocking threads instead, as they may run programs.)
    pub fn validate<F, V>(mut self, f: F) -> Self
    where
        F: Fn(&Options) -> CallbackResult<V> + Send + Sync + 'static,
        V: Into<ValidationErrors>,
    {
        self.validate = Some(Callback::pure(move |_: &Value, opts: &Options| {
            f(opts).map(V::into)
        }));
        self
    }

    /// Sets `validate` to an asynchronous callback: the errors in the
    /// options, empty when valid; see [`validate`](Self::validate).
    pub fn validate_async<F, Fut, V>(mut self, f: F) -> Self
    where
        F: Fn(Options) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CallbackResult<V>> + Send + 'static,
        V: Into<ValidationErrors>,
    {
        self.validate = Some(Callback::asynchronous(move |_, opts| {
            let found = f(opts);
            async move { found.await.map(V::into) }
        }));
        self
    }

    setters!(
        identity,
        identity_async,
        Vec<Option<String>>,
        "the backend boundary and profile; equal identities share one lock.",
        pure,
        "\n\nIt runs inline on the controller's threads, every pass: keep it a quick, \
         pure function of the options, without I/O or side effects; use \
         the async form for anything that waits. (`observe`, `converge` \
         and `delete` given as synchronous callbacks run on blocking \
         threads instead, as they may run programs.)"
    );
    setters!(
        observe,
        observe_async,
        Observation,
        "reports the infrastructure; must be read-only."
    );
    setters!(
        converge,
        converge_async,
        WorkflowOutcome,
        "makes the infrastructure match the options."
    );
    setters!(
        delete,
        delete_async,
        WorkflowOutcome,
        "destroys the infrastructure."
    );

    /// Finishes the package, naming the first missing required callback.
    pub fn build(self) -> Result<Package, Error> {
        let closures = Closures {
            validate: self.validate,
            identity: self.identity.ok_or(Error::MissingCallback("identity"))?,
            observe: self.observe.ok_or(Error::MissingCallback("observe"))?,
            converge: self.converge.ok_or(Error::MissingCallback("converge"))?,
            delete: self.delete.ok_or(Error::MissingCallback("delete"))?,
        };
        // Untyped: the callbacks read the options, so nothing is decoded.
        let decode: Decode<Value> = |_| Ok(Value::Null);
        let erased = Erased {
            infrastructure: closures,
            decode,
        };
        Ok(Package::assemble(self.schema, erased))
    }
}

impl AsRef<ResourceSchema> for PackageBuilder {
    fn as_ref(&self) -> &ResourceSchema {
        &self.schema
    }
}
