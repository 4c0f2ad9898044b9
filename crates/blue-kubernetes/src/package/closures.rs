//! The closure form: a descriptor plus callbacks receiving the
//! [`CallbackInput`] map, built with [`PackageBuilder`] into a [`Package`]
//! that the pass calls exactly as it calls an
//! [`Infrastructure`](crate::Infrastructure)'s. Its synchronous callbacks
//! run on blocking threads, but the pure ones (`validate` and `identity`)
//! inline.

use crate::package::binding::{Bind, Callbacks};
use crate::package::infrastructure::blocking;
use crate::package::{options::CallbackInput, validation::ValidationErrors};
use crate::package::{result::CallbackResult, result::WorkflowOutcome};
use crate::related::Related;
use crate::{
    package::erased::Package, package::observation::Observation, package::schema::ResourceSchema,
    Error,
};
use blue_kubernetes_client::ResourceDescriptor;
use futures::future::{BoxFuture, FutureExt};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::sync::Arc;

type SyncFn<T> = Arc<dyn Fn(&CallbackInput) -> CallbackResult<T> + Send + Sync>;
type AsyncFn<T> = Arc<dyn Fn(CallbackInput) -> BoxFuture<'static, CallbackResult<T>> + Send + Sync>;

/// A synchronous or asynchronous closure of the closure form.
pub(crate) enum Callback<T> {
    Sync(SyncFn<T>),
    /// Synchronous and pure (no I/O, quick): run inline. Every pass calls
    /// `identity` and `validate`; on a blocking thread each call cost two
    /// thread switches, more than the work itself.
    Pure(SyncFn<T>),
    Async(AsyncFn<T>),
}

impl<T: Send + 'static> Callback<T> {
    pub(crate) fn sync<F>(f: F) -> Self
    where
        F: Fn(&CallbackInput) -> CallbackResult<T> + Send + Sync + 'static,
    {
        Callback::Sync(Arc::new(f))
    }

    pub(crate) fn pure<F>(f: F) -> Self
    where
        F: Fn(&CallbackInput) -> CallbackResult<T> + Send + Sync + 'static,
    {
        Callback::Pure(Arc::new(f))
    }

    pub(crate) fn asynchronous<F, Fut>(f: F) -> Self
    where
        F: Fn(CallbackInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CallbackResult<T>> + Send + 'static,
    {
        Callback::Async(Arc::new(move |o| f(o).boxed()))
    }

    /// Runs the closure; a panic unwinds to the pass, which catches it.
    async fn run(&self, options: &CallbackInput) -> CallbackResult<T> {
        match self {
            Callback::Sync(f) => {
                let (f, options) = (f.clone(), options.clone());
                // A blocking thread, so a subprocess-running callback never
                // stalls the poller or other workers.
                blocking(move || f(&options)).await
            }
            Callback::Pure(f) => f(options),
            Callback::Async(f) => f(options.clone()).await,
        }
    }
}

/// The closure form as the pass calls a package: its declaration is its
/// builder's, its callbacks read the [`CallbackInput`] (the config is never
/// decoded, so every resource's callbacks are the same closures). It
/// answers the interface a trait package is erased to, not the trait
/// itself: the trait's schema is its type's, and a closure package's is a
/// value.
pub(crate) struct Closures {
    validate: Option<Callback<ValidationErrors>>,
    identity: Callback<Vec<Option<String>>>,
    observe: Callback<Observation>,
    converge: Callback<WorkflowOutcome>,
    delete: Callback<WorkflowOutcome>,
}

#[async_trait::async_trait]
impl Callbacks for Closures {
    async fn validate(&self, options: &CallbackInput) -> CallbackResult<ValidationErrors> {
        match &self.validate {
            Some(validate) => validate.run(options).await,
            None => Ok(ValidationErrors::default()),
        }
    }

    async fn identity(&self, options: &CallbackInput) -> CallbackResult<Vec<Option<String>>> {
        self.identity.run(options).await
    }

    async fn observe(&self, options: &CallbackInput) -> CallbackResult<Observation> {
        self.observe.run(options).await
    }

    async fn converge(&self, options: &CallbackInput) -> CallbackResult<WorkflowOutcome> {
        self.converge.run(options).await
    }

    async fn delete(&self, options: &CallbackInput) -> CallbackResult<WorkflowOutcome> {
        self.delete.run(options).await
    }
}

/// Closures bind to any resource: nothing is decoded.
struct Unbound(Arc<Closures>);

impl Bind for Unbound {
    fn bind(
        &self,
        _: &CallbackInput,
    ) -> Result<Arc<dyn Callbacks>, crate::package::typed::ConfigError> {
        Ok(self.0.clone())
    }
}

/// Builds a [`Package`] of closures: the closure form, whose callbacks
/// receive the [`CallbackInput`] map (`spec.config` as JSON, the profile, the
/// event and the resource snapshot). Start with [`Package::builder`].
///
/// `validate` is optional (default: always valid); the other callbacks are
/// required. Methods without suffix take synchronous closures, `_async`
/// ones take closures returning futures. A synchronous `observe`,
/// `converge` or `delete` runs on a blocking thread, so one that shells
/// out never stalls the controller; a synchronous `validate` or `identity`
/// runs inline, as they are called on every pass and must be quick, pure
/// functions of the options. Such a package's CRD keeps unknown config
/// fields.
///
/// An [`Infrastructure`](crate::Infrastructure) is the typed form of the
/// same package: its methods get a [`Context`](crate::Context) with the
/// decoded config, and the pass calls both forms the same way.
///
/// ```
/// use blue_kubernetes::{package::WorkflowOutcome, Observation, Package};
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
pub struct PackageBuilder {
    schema: ResourceSchema,
    validate: Option<Callback<ValidationErrors>>,
    identity: Option<Callback<Vec<Option<String>>>>,
    observe: Option<Callback<Observation>>,
    converge: Option<Callback<WorkflowOutcome>>,
    delete: Option<Callback<WorkflowOutcome>>,
}

macro_rules! setters {
    ($field:ident, $async_name:ident, $t:ty, $doc:literal) => {
        setters!($field, $async_name, $t, $doc, sync, "");
    };
    ($field:ident, $async_name:ident, $t:ty, $doc:literal, $make:ident, $how:literal) => {
        #[doc = concat!("Sets `", stringify!($field), "` to a synchronous callback: ", $doc, $how)]
        pub fn $field<F>(mut self, f: F) -> Self
        where
            F: Fn(&CallbackInput) -> CallbackResult<$t> + Send + Sync + 'static,
        {
            self.$field = Some(Callback::$make(f));
            self
        }

        #[doc = concat!("Sets `", stringify!($field), "` to an asynchronous callback: ", $doc)]
        pub fn $async_name<F, Fut>(mut self, f: F) -> Self
        where
            F: Fn(CallbackInput) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = CallbackResult<$t>> + Send + 'static,
        {
            self.$field = Some(Callback::asynchronous(f));
            self
        }
    };
}

// The closure form's entry lives with it: the package core knows no form.
impl Package {
    /// Starts a package of closures for `descriptor`: the closure form,
    /// whose callbacks receive the [`CallbackInput`] map. See [`PackageBuilder`].
    pub fn builder(descriptor: ResourceDescriptor) -> PackageBuilder {
        PackageBuilder::new(descriptor)
    }
}

impl PackageBuilder {
    pub(crate) fn new(descriptor: ResourceDescriptor) -> Self {
        Self {
            schema: ResourceSchema::new(descriptor),
            validate: None,
            identity: None,
            observe: None,
            converge: None,
            delete: None,
        }
    }

    /// Declares the outputs type `O` (serde + schemars): the generated CRD
    /// describes `status.outputs` with its schema, and outputs a callback
    /// returns ([`Observation::with_outputs`],
    /// [`outcome_with_outputs`](crate::package::outcome_with_outputs)) must
    /// deserialize into it. Without a declared type, outputs are recorded
    /// as they come and the CRD keeps any object there.
    pub fn outputs<O>(mut self) -> Self
    where
        O: DeserializeOwned + JsonSchema + 'static,
    {
        self.schema = self.schema.outputs::<O>();
        self
    }

    /// Declares connection details (callbacks reach the Secret through
    /// [`CallbackInput::connection`]); see [`ResourceSchema::connection_secret`].
    pub fn connection_secret(mut self) -> Self {
        self.schema = self.schema.connection_secret();
        self
    }

    /// Declares durable steps (run through [`CallbackInput::steps`]); see
    /// [`ResourceSchema::steps`].
    pub fn steps(mut self) -> Self {
        self.schema = self.schema.steps();
        self
    }

    /// Declares `spec.config.<field>` a reference to a resource of `kind`
    /// (its outputs through [`CallbackInput::referenced`]); see
    /// [`ResourceSchema::reference`].
    pub fn reference(mut self, field: impl Into<String>, kind: ResourceDescriptor) -> Self {
        self.schema = self.schema.reference(field, kind);
        self
    }

    /// Declares the top-level `spec.config.<field>` immutable; see
    /// [`ResourceSchema::immutable`].
    pub fn immutable(mut self, field: impl Into<String>) -> Self {
        self.schema = self.schema.immutable(field);
        self
    }

    /// Declares a related kind; see [`ResourceSchema::related`].
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
    pub fn validate<F, V>(mut self, f: F) -> Self
    where
        F: Fn(&CallbackInput) -> CallbackResult<V> + Send + Sync + 'static,
        V: Into<ValidationErrors>,
    {
        self.validate = Some(Callback::pure(move |opts: &CallbackInput| {
            f(opts).map(V::into)
        }));
        self
    }

    /// Sets `validate` to an asynchronous callback: the errors in the
    /// options, empty when valid; see [`validate`](Self::validate).
    pub fn validate_async<F, Fut, V>(mut self, f: F) -> Self
    where
        F: Fn(CallbackInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CallbackResult<V>> + Send + 'static,
        V: Into<ValidationErrors>,
    {
        self.validate = Some(Callback::asynchronous(move |opts| {
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
         the async form for anything that waits."
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

    /// Finishes the package, naming the first missing required callback,
    /// or the field of the outputs type that no CRD can describe
    /// ([`Error::NotStructural`]).
    pub fn build(self) -> Result<Package, Error> {
        let closures = Closures {
            validate: self.validate,
            identity: self.identity.ok_or(Error::MissingCallback("identity"))?,
            observe: self.observe.ok_or(Error::MissingCallback("observe"))?,
            converge: self.converge.ok_or(Error::MissingCallback("converge"))?,
            delete: self.delete.ok_or(Error::MissingCallback("delete"))?,
        };
        Package::assemble(self.schema, Box::new(Unbound(Arc::new(closures))))
    }
}

impl AsRef<ResourceSchema> for PackageBuilder {
    fn as_ref(&self) -> &ResourceSchema {
        &self.schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::package::callback::{call, Failure, FailureKind};
    use serde_json::json;
    use std::thread;

    fn run(identity: Callback<Vec<Option<String>>>) -> Result<Vec<Option<String>>, Failure> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let descriptor = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
        let mut builder = Package::builder(descriptor)
            .observe(|_| Ok(Observation::ABSENT))
            .converge(|_| Ok(WorkflowOutcome::new()))
            .delete(|_| Ok(WorkflowOutcome::new()));
        builder.identity = Some(identity);
        let package = builder.build().unwrap();
        let options = CallbackInput::from_resource(&json!({"metadata": {"name": "a"}}));
        let callbacks = package.callbacks(&options);
        runtime.block_on(call(&*callbacks, |c, o| c.identity(o), &options))
    }

    #[test]
    fn pure_callbacks_run_inline_and_others_on_blocking_threads() {
        let here = format!("{:?}", thread::current().id());
        let current = |_: &CallbackInput| -> CallbackResult<Vec<Option<String>>> {
            Ok(vec![Some(format!("{:?}", thread::current().id()))])
        };
        let thread_of = |c| run(c).map_err(|f| f.kind).unwrap()[0].clone().unwrap();
        assert_eq!(thread_of(Callback::pure(current)), here);
        assert_ne!(thread_of(Callback::sync(current)), here);
    }

    #[test]
    fn a_panicking_callback_is_a_failure_with_its_text() {
        for callback in [
            Callback::pure(|_: &CallbackInput| panic!("boom")),
            Callback::sync(|_: &CallbackInput| panic!("boom")),
        ] {
            let failure = run(callback).unwrap_err();
            assert_eq!(failure.kind, FailureKind::Panicked);
            assert_eq!(failure.text.as_deref(), Some("boom"));
        }
    }
}
