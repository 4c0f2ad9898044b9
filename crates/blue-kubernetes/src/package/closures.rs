//! The closure form: a descriptor plus callbacks receiving the
//! [`CallbackInput`] map, built with [`PackageBuilder`] into a [`Package`]
//! that the pass calls exactly as it calls an
//! [`Infrastructure`](crate::Infrastructure)'s. Its synchronous callbacks
//! run on blocking threads, but the pure ones (`validate` and `identity`)
//! inline.

use crate::package::callback::blocking;
use crate::package::erased::{Bind, Callbacks};
use crate::package::observation::Outputs;
use crate::package::result::{Answer, CallbackResult, WorkflowOutcome};
use crate::package::result::{EXTERNAL_NAME_KEY, OUTPUTS_KEY};
use crate::package::{options::CallbackInput, validation::ValidationErrors};
use crate::{
    package::erased::Package, package::observation::Observation, package::schema::ResourceSchema,
    Error,
};
use futures::future::{BoxFuture, FutureExt};
use serde_json::Value;
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

    async fn converge(&self, options: &CallbackInput) -> CallbackResult<Answer> {
        self.converge.run(options).await.map(answer)
    }

    async fn delete(&self, options: &CallbackInput) -> CallbackResult<Answer> {
        self.delete.run(options).await.map(answer)
    }
}

/// A workflow outcome map as the typed answer: the one reader of its
/// keys. A non-zero `blue/exit` (absent: 0) is a failure.
fn answer(mut outcome: WorkflowOutcome) -> Answer {
    let name = outcome.remove(EXTERNAL_NAME_KEY);
    Answer {
        outputs: outcome.remove(OUTPUTS_KEY).map(Outputs::Value),
        external_name: name.and_then(|v| v.as_str().map(str::to_string)),
        failed: match outcome.get("blue/exit") {
            None | Some(Value::Null) => false,
            Some(Value::Number(n)) => n.as_i64() != Some(0),
            Some(Value::String(s)) => s.trim() != "0",
            Some(_) => true,
        },
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
/// event and the resource snapshot). Start with [`Package::builder`],
/// given the [`ResourceSchema`] that declares the features the package
/// uses (an outputs type, a connection Secret, durable steps, references,
/// immutable fields, related kinds), or just its descriptor.
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
    /// Starts a package of closures declared by `schema` (a
    /// [`ResourceSchema`], or just its
    /// [`ResourceDescriptor`](blue_kubernetes_client::ResourceDescriptor)):
    /// the closure form, whose callbacks receive the [`CallbackInput`] map.
    /// See
    /// [`PackageBuilder`].
    pub fn builder(schema: impl Into<ResourceSchema>) -> PackageBuilder {
        PackageBuilder::new(schema.into())
    }
}

impl PackageBuilder {
    pub(crate) fn new(schema: ResourceSchema) -> Self {
        Self {
            schema,
            validate: None,
            identity: None,
            observe: None,
            converge: None,
            delete: None,
        }
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
    use blue_kubernetes_client::ResourceDescriptor;
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
        let (callbacks, _) = package.bind(&options);
        runtime.block_on(call(&*callbacks, |c, o| c.identity(o), &options))
    }

    #[test]
    fn absent_or_zero_exit_is_success_anything_else_is_failure() {
        let failed = |v: Value| answer(v.as_object().unwrap().clone()).failed;
        assert!(!failed(json!({})));
        assert!(!failed(json!({"blue/exit": 0})));
        assert!(!failed(json!({"blue/exit": "0"})));
        assert!(failed(json!({"blue/exit": 2})));
        assert!(failed(json!({"blue/exit": true})));
    }

    #[test]
    fn outputs_and_external_name_are_read_from_their_keys() {
        let read = answer(
            json!({OUTPUTS_KEY: {"id": 7}, EXTERNAL_NAME_KEY: "n-7"})
                .as_object()
                .unwrap()
                .clone(),
        );
        assert_eq!(read.outputs, Some(Outputs::Value(json!({"id": 7}))));
        assert_eq!(read.external_name.as_deref(), Some("n-7"));
        let not_a_string = answer(json!({EXTERNAL_NAME_KEY: 7}).as_object().unwrap().clone());
        assert_eq!(not_a_string.external_name, None);
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
